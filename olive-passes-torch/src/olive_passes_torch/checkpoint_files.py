"""The files of a ``save_pretrained`` checkpoint, checked from their headers before anything loads them.

A damaged folder otherwise gets as far as the library that loads it and comes back as that library's words
(``SafetensorError: ... incomplete metadata``, transformers' ``ignore_mismatched_sizes`` advice), after minutes of
work. Everything here reads headers and small JSON files, never a weight:

- **safetensors**: the 8-byte header length, the JSON header, and the tensors' byte ranges, which must cover the
  data that follows exactly (a truncated copy is visible from the header alone);
- **sharded checkpoints**: ``model.safetensors.index.json`` is a JSON object with a ``weight_map``, every shard it
  names exists, and every tensor it places in a shard is in that shard's header;
- **the tokenizer against the model**: a tokenizer whose ids reach past the model's ``vocab_size`` belongs to
  another model (its ids would index past the embedding).

:func:`checkpoint_tensors` returns each tensor's dtype and shape, for checks against the model's own layout.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from olive.exceptions import WorkflowConfigError

__all__ = [
    "INDEX",
    "SINGLE",
    "check_config_file",
    "check_tokenizer_vocabulary",
    "checkpoint_tensors",
    "safetensors_header",
]

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
#: a safetensors header larger than this is not one (real headers are kilobytes to a few megabytes)
_MAX_HEADER = 100 * 2**20
_REFETCH = "copy the checkpoint again (or save it with save_pretrained)"
_RESAVE = "put the config.json saved with the model beside its weights (model.config.save_pretrained(folder))"


def safetensors_header(path: Path, owner: str) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Tensor name -> ``(dtype, shape)`` from the header of the safetensors file ``path``, after checking that the
    header parses and that the tensors' byte ranges cover the file's data exactly."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                raise _damaged(path, f"holds {size} byte(s), fewer than a safetensors header's length field", owner)
            (length,) = struct.unpack("<Q", head)
            if length > min(_MAX_HEADER, size - 8):
                raise _damaged(path, f"gives a header of {length} bytes in a file of {size}: it is truncated", owner)
            raw = handle.read(length)
    except OSError as exc:
        raise WorkflowConfigError(
            f"'{path}' cannot be read ({exc.strerror or exc}); check that it exists and that you may read it",
            owner=owner,
        ) from None
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _damaged(path, f"has a header that is not JSON ({exc})", owner) from None
    if not isinstance(header, dict):
        raise _damaged(path, "has a header that is not a JSON object", owner)
    data = size - 8 - length
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, offsets = _entry(entry)
        if dtype is None:
            raise _damaged(path, f"describes tensor '{name}' without a dtype, shape and data_offsets", owner)
        start, stop = offsets
        if not 0 <= start <= stop:
            raise _damaged(path, f"gives tensor '{name}' the byte range {start}..{stop}", owner)
        end = max(end, stop)
        tensors[name] = (dtype, shape)
    if end != data:
        what = "it is truncated" if end > data else "bytes follow the last tensor"
        raise _damaged(path, f"describes {end} bytes of tensors and holds {data}: {what}", owner)
    return tensors


def checkpoint_tensors(folder: Path, owner: str) -> dict[str, tuple[str, tuple[int, ...]]] | None:
    """Every tensor of the folder's safetensors checkpoint (one file, or the shards its index names), checked as
    :func:`safetensors_header` checks a file; None for a checkpoint of ``.bin`` files, which has no header to read."""
    index = folder / INDEX
    if index.is_file():
        return _sharded(folder, index, owner)
    if (folder / SINGLE).is_file():
        return safetensors_header(folder / SINGLE, owner)
    return None


def check_config_file(path: Path, owner: str) -> None:
    """``config.json`` is UTF-8 JSON holding an object: said with the line and column where it is not, before
    transformers reads it (which says what it lacks of the object, e.g. a ``model_type`` it cannot infer)."""
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise WorkflowConfigError(
            f"'{path}' is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); {_RESAVE}",
            owner=owner,
        ) from None
    except json.JSONDecodeError as exc:
        raise WorkflowConfigError(
            f"'{path}' is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); {_RESAVE}", owner=owner
        ) from None
    if not isinstance(config, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(config), "a number")
        raise WorkflowConfigError(f"'{path}' holds {kind}, not a JSON object; {_RESAVE}", owner=owner)


def check_tokenizer_vocabulary(folder: Path, vocab_size: Any, owner: str) -> None:
    """A ``tokenizer.json`` whose largest id is past the model's ``vocab_size`` is another model's tokenizer."""
    path = folder / "tokenizer.json"
    if not isinstance(vocab_size, int) or vocab_size <= 0 or not path.is_file():
        return
    try:
        tokenizer = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WorkflowConfigError(
            f"'{path}' is not a tokenizer file transformers can read ({type(exc).__name__}: {exc}); save the model's "
            "tokenizer again with save_pretrained",
            owner=owner,
        ) from None
    largest = _largest_id(tokenizer)
    if largest is not None and largest >= vocab_size:
        raise WorkflowConfigError(
            f"'{path.name}' has token ids up to {largest}, and the model's vocabulary (config.json vocab_size) holds "
            f"{vocab_size}: it is the tokenizer of another model; put the tokenizer saved with this model beside it",
            owner=owner,
        )


def _sharded(folder: Path, index: Path, owner: str) -> dict[str, tuple[str, tuple[int, ...]]]:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise _damaged(index, f"is not a JSON object with a weight_map ({type(exc).__name__})", owner) from None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise _damaged(index, "has no weight_map of tensor names to shard files", owner)
    tensors: dict[str, tuple[str, tuple[int, ...]]] = {}
    for shard in sorted(set(weight_map.values())):
        path = folder / shard
        if Path(shard).name != shard or not path.is_file():
            raise _damaged(index, f"names the shard '{shard}', which is not in '{folder}'", owner)
        header = safetensors_header(path, owner)
        placed = sorted(name for name, file in weight_map.items() if file == shard and name not in header)
        if placed:
            raise _damaged(path, f"lacks '{placed[0]}', which {INDEX} places in it", owner)
        tensors.update(header)
    return tensors


def _entry(entry: Any) -> tuple[str | None, tuple[int, ...], tuple[int, int]]:
    if not isinstance(entry, Mapping):
        return None, (), (0, 0)
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if (
        not isinstance(dtype, str)
        or not isinstance(shape, list)
        or not all(isinstance(d, int) and d >= 0 for d in shape)
        or not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) for o in offsets)
    ):
        return None, (), (0, 0)
    return dtype, tuple(shape), (offsets[0], offsets[1])


def _largest_id(tokenizer: Any) -> int | None:
    if not isinstance(tokenizer, Mapping):
        return None
    ids: list[int] = []
    vocab = (tokenizer.get("model") or {}).get("vocab") if isinstance(tokenizer.get("model"), Mapping) else None
    if isinstance(vocab, Mapping):
        ids.extend(v for v in vocab.values() if isinstance(v, int))
    elif isinstance(vocab, list):  # unigram: a list of [piece, score], ids by position
        ids.append(len(vocab) - 1)
    for token in tokenizer.get("added_tokens") or []:
        if isinstance(token, Mapping) and isinstance(token.get("id"), int):
            ids.append(token["id"])
    return max(ids) if ids else None


def _damaged(path: Path, reason: str, owner: str) -> WorkflowConfigError:
    return WorkflowConfigError(f"'{path}' {reason}; {_REFETCH}", owner=owner)
