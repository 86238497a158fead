"""What ``--data`` accepts, and the workflow data config made from it.

- ``.npz``: arrays keyed by input name, samples on the first axis (olive-core's ``NpzDataContainer``); the keys
  are checked against the model's inputs before anything runs.
- text (``.txt``: one sample per line; ``.jsonl``, ``.json``, ``.csv``, ``.tsv``: records with a ``text``
  field), when the model has a tokenizer: a Hugging Face folder, an ONNX file whose folder holds the tokenizer
  it was exported with, or ``--tokenizer DIR``. Tokenized by ``TextDataContainer`` (``olive-passes-torch[hf]``)
  to ``max_length`` tokens, padded, so latency is timed at that length and agreement (``trim_padding``) runs
  each sample at its real length.
- nothing: the metrics make seeded synthetic inputs from the model's input specs
  (:func:`olive.measure.synthetic_inputs`; ``--dim_param``/``--dim_value`` size the free dimensions), and the
  accuracy guard, which needs real samples, is left out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from olive.data.check import NPZ_CONTAINER, check_npz_config
from olive.data.config import DataConfig
from olive.data.npz import LABEL_KEYS, read_npz_headers
from olive.exceptions import OliveError, WorkflowConfigError
from olive.measure.synthetic import concrete_shape
from olive.model.handler import ONNXModelHandler
from olive.optimize.facts import TOKENIZER_FILES, ModelFacts
from olive.plugins.install_hints import missing_data_container_hint

__all__ = ["DATA_NAME", "NPZ_SUFFIX", "TEXT_SUFFIXES", "DataSource", "data_config", "data_source", "synthetic_specs"]

DATA_NAME = "data"
NPZ_SUFFIX = ".npz"
TEXT_SUFFIXES = (".txt", ".jsonl", ".json", ".csv", ".tsv")
TEXT_CONTAINER = "TextDataContainer"
OPTION = "--data"


@attrs.frozen
class DataSource:
    """Where the samples come from: ``kind`` is ``"npz"``, ``"text"`` or ``"synthetic"``."""

    kind: str
    path: Path | None = None
    tokenizer: Path | None = None

    @property
    def synthetic(self) -> bool:
        return self.kind == "synthetic"


def data_source(
    data: Path | None, facts: ModelFacts, containers: frozenset[str], tokenizer: Path | None = None
) -> DataSource:
    """Check ``--data`` (and ``--tokenizer``) against the model; raises :class:`WorkflowConfigError` owned by the
    option, saying what to give instead."""
    if tokenizer is not None:
        tokenizer = tokenizer.expanduser().resolve()
        if not tokenizer.is_dir() or not any((tokenizer / name).is_file() for name in TOKENIZER_FILES):
            raise WorkflowConfigError(
                f"'{tokenizer}' is not a folder holding a tokenizer ({', '.join(TOKENIZER_FILES[:3])}...); give the "
                "folder tokenizer.save_pretrained wrote",
                owner="--tokenizer",
            )
        if data is None or data.suffix.lower() not in TEXT_SUFFIXES:
            raise WorkflowConfigError("a tokenizer is for text data; give --data with a text file", owner="--tokenizer")
    if data is None:
        return DataSource("synthetic")
    path = data.expanduser()
    if not path.is_file():
        # Microsoft Olive's -d/--data_name takes a hub dataset name ('squad', 'wikitext/wikitext-2'): a missing
        # path without a suffix read here is most likely one.
        named = not path.exists() and path.suffix.lower() not in (NPZ_SUFFIX, *TEXT_SUFFIXES)
        hint = "; hub datasets are not downloaded here: give a local file" if named else ""
        raise WorkflowConfigError(
            f"'{data}' is not a file{hint} (an .npz of arrays keyed by input name, or a text file: .txt one sample "
            "per line, .jsonl with a text field, when the model has a tokenizer)",
            owner=OPTION,
        )
    path = path.resolve()
    suffix = path.suffix.lower()
    if suffix == NPZ_SUFFIX:
        _check_npz(path, facts)
        return DataSource("npz", path)
    if suffix in TEXT_SUFFIXES:
        if TEXT_CONTAINER not in containers:
            hint = missing_data_container_hint(TEXT_CONTAINER) or f"no installed distribution offers {TEXT_CONTAINER}"
            raise WorkflowConfigError(f"text data is tokenized by {hint}; or give an .npz", owner=OPTION)
        found = tokenizer or facts.tokenizer_dir
        if found is None:
            raise WorkflowConfigError(
                f"'{data}' is text, and '{facts.path.name}' has no tokenizer beside it; give --tokenizer DIR (the "
                "folder tokenizer.save_pretrained wrote), or an .npz of token arrays keyed by input name",
                owner=OPTION,
            )
        return DataSource("text", path, found)
    raise WorkflowConfigError(
        f"'{data}': a {suffix or 'file without a suffix'} is not read; give an .npz (arrays keyed by input name) or "
        f"text ({', '.join(TEXT_SUFFIXES)})",
        owner=OPTION,
    )


def _check_npz(path: Path, facts: ModelFacts) -> None:
    """The rules ``olive run --dry-run`` applies to an ``.npz`` (readable without unpickling; names, ranks, fixed
    dimensions and dtypes against the model's inputs), with errors owned by the option."""
    config = DataConfig.from_json(
        {"name": DATA_NAME, "type": NPZ_CONTAINER, "load_dataset_config": {"data_path": str(path)}}, json_path=OPTION
    )
    try:
        if facts.is_onnx:
            check_npz_config(config, ONNXModelHandler(facts.path).get_io_config())
            return
        # A model not converted yet: its plugin names the inputs, but their ranks and dtypes are the converter's.
        keys = set(read_npz_headers(path)) - set(LABEL_KEYS)
    except OliveError as exc:
        raise WorkflowConfigError(exc.reason, owner=OPTION) from None
    missing = [name for name, _, _ in facts.inputs if name not in keys]
    if missing:
        raise WorkflowConfigError(
            f"'{path.name}' has no array for input(s) {', '.join(missing)} (it holds {', '.join(sorted(keys))}); "
            "give one array per model input, keyed by its name",
            owner=OPTION,
        )


def data_config(source: DataSource, max_samples: int, batch_size: int, max_length: int) -> dict[str, Any] | None:
    """The workflow's data config for ``source`` (None for synthetic inputs)."""
    if source.kind == "npz":
        return {
            "name": DATA_NAME,
            "type": NPZ_CONTAINER,
            "load_dataset_config": {"data_path": str(source.path), "max_samples": max_samples},
            "dataloader_config": {"batch_size": batch_size},
        }
    if source.kind == "text":
        return {
            "name": DATA_NAME,
            "type": TEXT_CONTAINER,
            "load_dataset_config": {"data_path": str(source.path), "max_samples": max_samples},
            "pre_process_data_config": {
                "tokenizer": str(source.tokenizer),
                "max_length": max_length,
                "padding": "max_length",
                "truncation": True,
            },
            "dataloader_config": {"batch_size": batch_size},
        }
    return None


def synthetic_specs(facts: ModelFacts, dims: dict[str, int]) -> dict[str, Any] | None:
    """Input specs with the free dimensions sized by ``dims`` (``--dim_param``/``--dim_value``), for the metrics'
    synthetic inputs; None when no dimension is named (the measurement module's rule then applies)."""
    if not dims or not facts.inputs:
        return None
    known = {str(d) for _, shape, _ in facts.inputs for d in shape if not isinstance(d, int)}
    unknown = [name for name in dims if name not in known]
    if unknown:
        raise WorkflowConfigError(
            f"the model has no free dimension {', '.join(repr(n) for n in unknown)}; its free dimensions: "
            f"{', '.join(sorted(known)) or 'none'}",
            owner="--dim_param",
        )
    return {
        "input_names": [name for name, _, _ in facts.inputs],
        "input_shapes": [concrete_shape(shape, dims) for _, shape, _ in facts.inputs],
        "input_types": [dtype for _, _, dtype in facts.inputs],
    }
