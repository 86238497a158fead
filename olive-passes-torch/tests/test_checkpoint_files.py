"""checkpoint_files on safetensors files written here byte by byte: a whole file lists its tensors; a truncated,
padded or garbled one, a broken index or a tokenizer of another vocabulary is one WorkflowConfigError naming the
file and what to do."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from olive.exceptions import WorkflowConfigError
from olive_passes_torch.checkpoint_files import (
    check_config_file,
    check_tokenizer_vocabulary,
    checkpoint_tensors,
    safetensors_header,
)


def _safetensors(path: Path, tensors: dict[str, tuple[int, ...]]) -> Path:
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 4
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return path


def test_a_whole_file_lists_its_tensors_with_dtype_and_shape(tmp_path):
    path = _safetensors(tmp_path / "model.safetensors", {"a": (2, 3), "b": (4,)})
    assert safetensors_header(path, "MODEL") == {"a": ("F32", (2, 3)), "b": ("F32", (4,))}
    assert checkpoint_tensors(tmp_path, "MODEL") == {"a": ("F32", (2, 3)), "b": ("F32", (4,))}


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda b: b[:-5], "describes 40 bytes of tensors and holds 35: it is truncated"),
        (lambda b: b + b"xx", "holds 42: bytes follow the last tensor"),
        (lambda b: b[:5], "fewer than a safetensors header's length field"),
        (lambda b: struct.pack("<Q", 10**9) + b[8:], "gives a header of 1000000000 bytes"),
        (lambda b: b[:8] + b"[" + b[9:], "has a header that is not JSON"),
    ],
)
def test_a_damaged_file_is_one_error_naming_it_and_the_fix(tmp_path, damage, words):
    path = _safetensors(tmp_path / "model.safetensors", {"a": (2, 3), "b": (4,)})
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(WorkflowConfigError) as caught:
        safetensors_header(path, "MODEL")
    assert caught.value.owner == "MODEL" and str(path) in caught.value.reason
    assert words in caught.value.reason and "copy the checkpoint again" in caught.value.reason


def test_a_sharded_checkpoint_is_checked_shard_by_shard_against_its_index(tmp_path):
    _safetensors(tmp_path / "model-00001-of-00002.safetensors", {"a": (2,)})
    _safetensors(tmp_path / "model-00002-of-00002.safetensors", {"b": (3,)})
    index = tmp_path / "model.safetensors.index.json"
    weight_map = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
    index.write_text(json.dumps({"weight_map": weight_map}))
    assert checkpoint_tensors(tmp_path, "MODEL") == {"a": ("F32", (2,)), "b": ("F32", (3,))}
    index.write_text(json.dumps({"weight_map": {**weight_map, "b": "model-00001-of-00002.safetensors"}}))
    with pytest.raises(WorkflowConfigError, match=r"lacks 'b', which model\.safetensors\.index\.json places in it"):
        checkpoint_tensors(tmp_path, "MODEL")
    index.write_text(json.dumps({"weight_map": {**weight_map, "c": "../elsewhere.safetensors"}}))
    with pytest.raises(WorkflowConfigError, match=r"names the shard '\.\./elsewhere\.safetensors', which is not in"):
        checkpoint_tensors(tmp_path, "MODEL")
    index.write_text("{")
    with pytest.raises(WorkflowConfigError, match="is not a JSON object with a weight_map"):
        checkpoint_tensors(tmp_path, "MODEL")


def test_a_bin_checkpoint_has_no_header_to_check(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 10)
    assert checkpoint_tensors(tmp_path, "MODEL") is None


def test_a_tokenizer_whose_ids_pass_the_vocabulary_is_another_models(tmp_path):
    tokenizer = {"model": {"vocab": {"a": 0, "b": 1}}, "added_tokens": [{"id": 7, "content": "<|end|>"}]}
    (tmp_path / "tokenizer.json").write_text(json.dumps(tokenizer))
    check_tokenizer_vocabulary(tmp_path, 8, "MODEL")
    with pytest.raises(WorkflowConfigError, match=r"token ids up to 7, and the model's vocabulary .* holds 4"):
        check_tokenizer_vocabulary(tmp_path, 4, "MODEL")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"model_type": ', "is not JSON (line 1, column 16"),
        (b"\xff\xfe{}", "is not UTF-8 text (byte 0xff at offset 0)"),
        (b"[1, 2]", "holds an array, not a JSON object"),
        (b"null", "holds null, not a JSON object"),
    ],
)
def test_a_config_that_is_not_a_json_object_is_said_before_transformers_reads_it(tmp_path, content, words):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(WorkflowConfigError) as caught:
        check_config_file(path, "MODEL")
    assert words in caught.value.reason and "config.json saved with the model" in caught.value.reason


def test_an_unreadable_file_is_one_error_naming_it(tmp_path):
    (tmp_path / "model.safetensors").mkdir()  # open() raises on it, as on a file without read permission
    with pytest.raises(WorkflowConfigError, match=r"model\.safetensors' cannot be read"):
        safetensors_header(tmp_path / "model.safetensors", "MODEL")
