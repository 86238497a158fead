"""What ``--data`` accepts, and the workflow data config made from it.

- ``.npz``: arrays keyed by input name, samples on the first axis (olive-core's ``NpzDataContainer``); the keys
  are checked against the model's inputs before anything runs.
- text (``.txt``: one sample per line; ``.jsonl``, ``.json``, ``.csv``, ``.tsv``: records with a ``text``
  field), when the model has a tokenizer: a Hugging Face folder, an ONNX file whose folder holds the tokenizer
  it was exported with, or ``--tokenizer DIR``. Tokenized by ``TextDataContainer`` (``olive-passes-torch[hf]``)
  to ``max_length`` tokens, padded, so latency is timed at that length and agreement (``trim_padding``) runs
  each sample at its real length.
- ``--validation-data``: a second file of the same kinds that the metrics and keeps judge on; then the passes fit
  on all of ``--data``. Without it, one half of ``--data`` fits and the other judges (:mod:`olive.data.split`:
  ordered by real length, each pair dealt one to each part; at least 16 samples).
- nothing: the metrics make seeded synthetic inputs from the model's input specs
  (:func:`olive.measure.synthetic_inputs`; ``--dim_param``/``--dim_value`` size the free dimensions), and the
  accuracy guard, which needs real samples, is left out.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import attrs

from olive.data.check import NPZ_CONTAINER, check_npz_config
from olive.data.config import DataConfig
from olive.data.npz import LABEL_KEYS, read_npz_headers
from olive.data.split import MIN_SAMPLES_PER_ROLE
from olive.exceptions import OliveError, WorkflowConfigError, closest_match_hint
from olive.measure.synthetic import concrete_shape
from olive.model.handler import ONNXModelHandler
from olive.optimize.facts import TOKENIZER_FILES, ModelFacts
from olive.plugins.install_hints import REPOSITORY_DATA_CONTAINERS, install_line

__all__ = [
    "DATA_NAME",
    "NPZ_SUFFIX",
    "TEXT_SUFFIXES",
    "VALIDATION_NAME",
    "DataSource",
    "data_config",
    "data_source",
    "synthetic_specs",
]

DATA_NAME = "data"
VALIDATION_NAME = "validation"
NPZ_SUFFIX = ".npz"
TEXT_SUFFIXES = (".txt", ".jsonl", ".json", ".csv", ".tsv")
TEXT_CONTAINER = "TextDataContainer"
OPTION = "--data"
VALIDATION_OPTION = "--validation-data"


@attrs.frozen
class DataSource:
    """Where the samples come from: ``kind`` is ``"npz"``, ``"text"`` or ``"synthetic"``."""

    kind: str
    path: Path | None = None
    tokenizer: Path | None = None
    #: the samples the metrics judge on, when given apart (``--validation-data``)
    validation: DataSource | None = None
    #: how many samples the file holds, where that is cheap to count (None: not counted)
    samples: int | None = None
    #: text records: the field holding the text (``text`` unless the file names its one field otherwise)
    text_field: str = "text"
    #: a .txt file's blank lines, which hold no sample and are skipped
    blank_lines: int = 0

    def count_words(self) -> str:
        """``137 samples (one per line; 137 blank line(s) skipped)``: what was counted, in words."""
        if self.kind == "text" and self.path is not None and self.path.suffix.lower() == ".txt":
            skipped = f"; {self.blank_lines} blank line(s) skipped" if self.blank_lines else ""
            return f"{self.samples} samples (one per line{skipped})"
        return f"{self.samples} samples"

    @property
    def synthetic(self) -> bool:
        return self.kind == "synthetic"

    @property
    def split(self) -> bool:
        """One file for both roles: the engine splits it into a fitting and a judging half."""
        return not self.synthetic and self.validation is None


def data_source(
    data: Path | None,
    facts: ModelFacts,
    containers: frozenset[str],
    tokenizer: Path | None = None,
    validation: Path | None = None,
    max_samples: int | None = None,
) -> DataSource:
    """Check ``--data``, ``--validation-data`` (and ``--tokenizer``) against the model; raises
    :class:`WorkflowConfigError` owned by the option, saying what to give instead."""
    source = _one_source(data, facts, containers, tokenizer, OPTION)
    if validation is not None and not source.synthetic:
        text = validation.suffix.lower() in TEXT_SUFFIXES
        judged = _one_source(validation, facts, containers, tokenizer if text else None, VALIDATION_OPTION)
        return attrs.evolve(source, validation=judged)
    if source.split:
        _check_split_count(source, max_samples)
    return source


def _check_split_count(source: DataSource, max_samples: int | None) -> None:
    """Enough samples to give the fitting and the judging half each their own (where the file was counted)."""
    assert source.path is not None
    count = source.samples
    if count is None:
        return
    if max_samples:
        count = min(count, max_samples)
    if count < 2 * MIN_SAMPLES_PER_ROLE:
        raise WorkflowConfigError(
            f"'{source.path.name}' gives {count} sample(s); half of --data fits (the guard's choices, calibration) and "
            f"half judges (the figures and the keeps), which needs at least {2 * MIN_SAMPLES_PER_ROLE} "
            f"({MIN_SAMPLES_PER_ROLE} each): give more samples, or give the samples to judge on apart with "
            "--validation-data FILE",
            owner=OPTION,
        )


def _npz_count(path: Path) -> int | None:
    shapes = [shape for shape, _ in read_npz_headers(path).values() if shape]
    return shapes[0][0] if shapes else None


def _blank_lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if not line.strip())
    except (OSError, UnicodeDecodeError):
        return 0


def _text_records(path: Path, option: str) -> tuple[int | None, str]:
    """How many samples a text file holds and the field their text is in. A records file (.jsonl, .json, .csv,
    .tsv) without a ``text`` field uses its only field, or is an error naming its fields; what cannot be read here
    is left to the data container, which says what is wrong with it."""
    import csv
    import json

    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        # Found here, before anything is built: the run would otherwise stop at the first metric that reads it.
        raise WorkflowConfigError(
            f"'{path.name}' is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start} does not "
            "decode); save it as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8)",
            owner=option,
        ) from None
    except OSError:
        return None, "text"
    if suffix == ".txt":
        return sum(1 for line in text.splitlines() if line.strip()), "text"
    fields: list[str] = []
    count: int | None = None
    if suffix in (".csv", ".tsv"):
        reader = csv.DictReader(text.splitlines(), delimiter="\t" if suffix == ".tsv" else ",")
        count = sum(1 for _ in reader)
        fields = list(reader.fieldnames or [])
    else:
        rows: Any = None
        if suffix == ".json":
            try:
                rows = json.loads(text)
            except json.JSONDecodeError:
                rows = None
            rows = rows.get("data") if isinstance(rows, dict) else rows
        if not isinstance(rows, list):
            lines = [line for line in text.splitlines() if line.strip()]
            try:
                rows = [json.loads(lines[0])] + [None] * (len(lines) - 1) if lines else []
            except json.JSONDecodeError:
                return None, "text"
        count = len(rows)
        fields = list(rows[0]) if rows and isinstance(rows[0], dict) else []
    if not fields or "text" in fields:
        return count, "text"
    if len(fields) == 1:
        return count, fields[0]
    raise WorkflowConfigError(
        f"'{path.name}' has no 'text' field{closest_match_hint('text', fields)} to read the samples from (its "
        f"fields: {', '.join(fields)}); name the field with the text 'text'",
        owner=option,
    )


def _one_source(
    data: Path | None, facts: ModelFacts, containers: frozenset[str], tokenizer: Path | None, option: str
) -> DataSource:
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
            owner=option,
        )
    path = path.resolve()
    suffix = path.suffix.lower()
    if suffix == NPZ_SUFFIX:
        _check_npz(path, facts, option)
        return DataSource("npz", path, samples=_npz_count(path))
    if suffix in TEXT_SUFFIXES:
        _refuse_a_numeric_table(path, facts, option)
        if TEXT_CONTAINER not in containers:
            raise WorkflowConfigError(
                f"'{path.name}' is text, which is read and tokenized by {_text_container_hint()}; or give an .npz "
                "of token arrays keyed by input name",
                owner=option,
            )
        found = tokenizer or facts.tokenizer_dir
        if found is None:
            raise WorkflowConfigError(
                f"'{data}' is text, and '{facts.path.name}' has no tokenizer beside it; give --tokenizer DIR (the "
                "folder tokenizer.save_pretrained wrote), or an .npz of token arrays keyed by input name",
                owner=option,
            )
        count, field = _text_records(path, option)
        blank = _blank_lines(path) if suffix == ".txt" else 0
        return DataSource("text", path, found, samples=count, text_field=field, blank_lines=blank)
    raise WorkflowConfigError(
        f"'{data}': a {suffix or 'file without a suffix'} is not read; give an .npz (arrays keyed by input name) or "
        f"text ({', '.join(TEXT_SUFFIXES)})",
        owner=option,
    )


def _numbers(row: list[str]) -> bool:
    try:
        [float(cell) for cell in row]
    except ValueError:
        return False
    return bool(row)


def _refuse_a_numeric_table(path: Path, facts: ModelFacts, option: str) -> None:
    """A .csv/.tsv of numbers for a model whose inputs are all floating point: that is samples, not text to
    tokenize. Said first (before any tokenizer or plugin is asked for), with the command that saves it as the
    .npz ``--data`` reads."""
    import csv

    if path.suffix.lower() not in (".csv", ".tsv") or not facts.inputs:
        return
    if not all(dtype.startswith("float") for _, _, dtype in facts.inputs):
        return
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        with path.open(encoding="utf-8", newline="") as file:
            rows = [row for _, row in zip(range(3), csv.reader(file, delimiter=delimiter), strict=False)]
    except (OSError, UnicodeDecodeError, csv.Error):
        return
    header = 1 if rows and not _numbers(rows[0]) else 0
    if len(rows) <= header or not all(_numbers(row) for row in rows[header:]):
        return
    target = path.with_suffix(".npz")
    # The command must not overwrite a file of the user's: a free name beside the table.
    count = 1
    while target.exists():
        target = path.with_name(f"{path.stem}-{count}.npz")
        count += 1
    if len(facts.inputs) == 1:
        how = f"Save it once as one: {_npz_command(path, target, facts.inputs[0], delimiter, header)}; then give "
        how += f"--data {shlex.quote(str(target))}"
    else:
        names = ", ".join(name for name, _, _ in facts.inputs)
        how = f"Save one array per input ({names}) with numpy.savez and give that file"
    raise WorkflowConfigError(
        f"'{path.name}' holds numbers, and '{facts.path.name}' takes floating-point inputs: a table of samples, "
        f"which --data reads as an .npz of arrays keyed by input name (a .csv is read as text to tokenize). {how}",
        owner=option,
    )


def _npz_command(
    source: Path, target: Path, spec: tuple[str, tuple[Any, ...], str], delimiter: str, header: int
) -> str:
    """A bash command line that saves the table at ``source`` as ``target``, the array of the model's one input."""
    name, shape, dtype = spec
    load = f"np.loadtxt({str(source)!r}, delimiter={delimiter!r}, skiprows={header}, ndmin=2, dtype=np.{dtype})"
    fixed = [d for d in shape[1:] if isinstance(d, int)]
    if len(shape) > 2 and len(fixed) == len(shape) - 1:
        load += f".reshape(-1, {', '.join(str(d) for d in fixed)})"
    code = f"import numpy as np; np.savez({str(target)!r}, **{{{name!r}: {load}}})"
    # Double quotes read best, and bash leaves the code alone inside them unless it holds one of these.
    quoted = f'"{code}"' if not any(c in code for c in '"$`\\!') else shlex.quote(code)
    return f"python3 -c {quoted}"


def _text_container_hint() -> str:
    """Who offers the text data container and how to install it, as a clause ("olive-passes-torch's ...")."""
    found = REPOSITORY_DATA_CONTAINERS.get(TEXT_CONTAINER)
    if found is None:
        return f"the data container {TEXT_CONTAINER}, which no installed distribution offers"
    distribution, extra = found
    return (
        f"the data container {TEXT_CONTAINER} of {distribution}, which is not installed (install it with: "
        f"{install_line(distribution, extra)})"
    )


def _check_npz(path: Path, facts: ModelFacts, option: str = "--data") -> None:
    """The rules ``olive run --dry-run`` applies to an ``.npz`` (readable without unpickling; names, ranks, fixed
    dimensions and dtypes against the model's inputs), with errors owned by the option."""
    config = DataConfig.from_json(
        {"name": DATA_NAME, "type": NPZ_CONTAINER, "load_dataset_config": {"data_path": str(path)}}, json_path=option
    )
    try:
        if facts.is_onnx:
            check_npz_config(config, ONNXModelHandler(facts.path).get_io_config())
            return
        # A model not converted yet: its plugin names the inputs, but their ranks and dtypes are the converter's.
        keys = set(read_npz_headers(path)) - set(LABEL_KEYS)
    except OliveError as exc:
        raise WorkflowConfigError(exc.reason, owner=option) from None
    missing = [name for name, _, _ in facts.inputs if name not in keys]
    if missing:
        raise WorkflowConfigError(
            f"'{path.name}' has no array for input(s) {', '.join(missing)} (it holds {', '.join(sorted(keys))}); "
            "give one array per model input, keyed by its name",
            owner=option,
        )


def data_config(
    source: DataSource, max_samples: int, batch_size: int, max_length: int, name: str = DATA_NAME
) -> dict[str, Any] | None:
    """The workflow's data config for ``source`` (None for synthetic inputs)."""
    if source.kind == "npz":
        return {
            "name": name,
            "type": NPZ_CONTAINER,
            "load_dataset_config": {"data_path": str(source.path), "max_samples": max_samples},
            "dataloader_config": {"batch_size": batch_size},
        }
    if source.kind == "text":
        return {
            "name": name,
            "type": TEXT_CONTAINER,
            "load_dataset_config": {
                "data_path": str(source.path),
                "max_samples": max_samples,
                **({"text_field": source.text_field} if source.text_field != "text" else {}),
            },
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
