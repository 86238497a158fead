"""Text data without a hub: local text files tokenized with the model's own tokenizer.

``TextDataContainer`` reads a ``.txt`` file (one sample per line) or a ``.jsonl`` / ``.json`` / ``.csv``
file of records::

    {"name": "sentences", "type": "TextDataContainer",
     "load_dataset_config": {"data_path": "sentences.jsonl", "text_field": "text",
                             "text_pair_field": null, "label_field": "label", "max_samples": 100},
     "pre_process_data_config": {"tokenizer": "models/all-MiniLM-L6-v2", "max_length": 128,
                                 "padding": "max_length", "truncation": true},
     "dataloader_config": {"batch_size": 8}}

``HuggingfaceContainer`` takes Microsoft Olive's keys where they make sense offline:
``load_dataset_config.data_name`` (a local file or folder), ``data_files``, ``split`` (a file named after the
split in that folder; ``train[:100]`` slices), and ``pre_process_data_config.model_name`` (the tokenizer's
folder), ``input_cols`` (the text and, optionally, the pair), ``label_col``, ``max_samples``,
``max_length``, ``padding``, ``truncation``. A key that needs the hub (``subset``, a dataset or model name
that is not a local path) is an error naming the key and what to do instead.

Both yield ``(dict of int64 arrays keyed by the tokenizer's input names, labels or None)`` batches, like
the ``.npz`` container, so they feed calibration, the agreement metric, latency and the conversion check.
``padding: "max_length"`` pads every sample to ``max_length``; ``"longest"`` pads each batch to its longest
sample. When the tokenizer is not given, the workflow's Hugging Face input model's folder is used
(:func:`olive.data.containers.bind_input_model`). Reading and tokenizing import ``transformers``;
validating a config does not.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from olive.data.config import DataComponentConfig, DataConfig
from olive.data.containers import DataContainerType
from olive.exceptions import OliveError, WorkflowConfigError, closest_match_hint
from olive_passes_torch._logs import routed_logs

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".jsonl", ".json", ".csv", ".tsv")
PADDING = ("max_length", "longest", "do_not_pad")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)
DEFAULT_MAX_LENGTH = 128
_SPLIT = re.compile(r"^(?P<name>[\w.-]+)(?:\[(?P<start>-?\d*):(?P<stop>-?\d*)\])?$")


# ----------------------------------------------------------------------------------------------- datasets


@attrs.define
class TextRecords:
    """Rows read from a local file: each a mapping of field name to value."""

    rows: list[dict[str, Any]]
    source: str

    def __len__(self) -> int:
        return len(self.rows)


class TokenizedText:
    """Tokenized samples, padded per batch (``longest``) or to ``max_length``; ``(inputs, labels)`` batches."""

    def __init__(
        self,
        encodings: list[dict[str, list[int]]],
        labels: list[Any] | None,
        tokenizer: Any,
        padding: str,
        max_length: int,
    ):
        self.encodings = encodings
        self.labels = labels
        self.tokenizer = tokenizer
        self.padding = padding
        self.max_length = max_length

    def __len__(self) -> int:
        return len(self.encodings)

    def __getitem__(self, index: int) -> tuple[dict[str, np.ndarray], Any]:
        if not 0 <= index < len(self):
            raise IndexError(index)
        inputs, labels = self.batch(index, index + 1)
        return {k: v[0] for k, v in inputs.items()}, (None if labels is None else labels[0])

    def batch(self, start: int, stop: int) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
        import numpy as np

        rows = self.encodings[start:stop]
        if self.padding == "do_not_pad":
            lengths = {len(r["input_ids"]) for r in rows}
            if len(lengths) > 1:
                raise OliveError(
                    f"samples {start}-{stop - 1} have different lengths ({sorted(lengths)}) and padding is "
                    "'do_not_pad'; use batch_size 1 or padding 'longest'"
                )
            padded = {k: np.asarray([r[k] for r in rows]) for k in rows[0]}
        else:
            padded = self.tokenizer.pad(
                rows,
                padding=self.padding,
                max_length=self.max_length if self.padding == "max_length" else None,
                return_tensors="np",
            )
        inputs = {k: np.asarray(v, dtype=np.int64) for k, v in padded.items()}
        labels = None if self.labels is None else np.asarray(self.labels[start:stop])
        return inputs, labels


def read_records(path: Path, what: str) -> list[dict[str, Any]]:
    """The rows of a ``.txt`` (field ``text``), ``.jsonl``, ``.json`` (a list of objects) or ``.csv``/``.tsv`` file."""
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OliveError(f"{what}: cannot read '{path}' as UTF-8 text ({type(exc).__name__}: {exc})") from exc
    if suffix == ".txt":
        return [{"text": line} for line in text.splitlines() if line.strip()]
    if suffix in (".csv", ".tsv"):
        return list(csv.DictReader(text.splitlines(), delimiter="\t" if suffix == ".tsv" else ","))
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None  # datasets writes JSON Lines under a .json name too
        if isinstance(data, list):
            rows = data
        elif isinstance(data, Mapping) and isinstance(data.get("data"), list):
            rows = data["data"]
        else:
            rows = _json_lines(text, path, what)
    else:
        rows = _json_lines(text, path, what)
    bad = next((i for i, row in enumerate(rows) if not isinstance(row, Mapping)), None)
    if bad is not None:
        raise OliveError(f"{what}: record {bad + 1} of '{path}' is not an object; write one JSON object per sample")
    return [dict(row) for row in rows]


def _json_lines(text: str, path: Path, what: str) -> list[Any]:
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise OliveError(
                f"{what}: line {number} of '{path}' is not JSON ({exc.msg}); write one object per line"
            ) from exc
    return rows


def load_tokenizer(path: str | None, owner: str) -> Any:
    """The tokenizer saved in folder ``path`` (pad token set to the end-of-text token when it has none)."""
    if not path:
        raise WorkflowConfigError(
            "missing; give the folder of the model's tokenizer (a Hugging Face model folder), or use the data config "
            "with an HfModel input model, whose folder is used",
            owner=owner,
        )
    import transformers

    try:
        with routed_logs(logger, logging.DEBUG):
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    except Exception as exc:
        raise WorkflowConfigError(
            f"no tokenizer can be loaded from '{path}' ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
            "point it at a folder written by tokenizer.save_pretrained",
            owner=owner,
        ) from exc
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise WorkflowConfigError(
                f"the tokenizer in '{path}' has no pad or end-of-text token to pad with", owner=owner
            )
        # Decoder tokenizers (GPT-2) have no pad token; the attention mask hides what pads.
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def tokenize(
    records: TextRecords,
    tokenizer_path: str | None,
    text_field: str,
    text_pair_field: str | None,
    label_field: str | None,
    max_length: int,
    padding: Any,
    truncation: bool,
    max_samples: int | None,
    keys: Mapping[str, str],
) -> TokenizedText:
    """Tokenize ``records``; ``keys`` names the config key of each setting for messages."""
    rows = records.rows[:max_samples] if max_samples else records.rows
    if not rows:
        raise OliveError(f"'{records.source}' holds no samples")
    for field, key in ((text_field, "text"), (text_pair_field, "pair"), (label_field, "label")):
        if field is not None and field not in rows[0]:
            raise WorkflowConfigError(
                f"'{field}' is not a field of '{records.source}'{closest_match_hint(field, rows[0])}; its fields: "
                f"{', '.join(map(str, rows[0]))}",
                owner=keys[key],
            )
    tokenizer = load_tokenizer(tokenizer_path, keys["tokenizer"])
    texts = [_text(row, text_field, i, records.source) for i, row in enumerate(rows)]
    pairs = [_text(row, text_pair_field, i, records.source) for i, row in enumerate(rows)] if text_pair_field else None
    labels = None
    if label_field is not None:
        labels = [_number(row.get(label_field)) for row in rows]
        bad = next((i for i, v in enumerate(labels) if isinstance(v, bool) or not isinstance(v, int | float)), None)
        if bad is not None:
            raise WorkflowConfigError(
                f"sample {bad + 1} of '{records.source}' has label {labels[bad]!r}; labels must be numbers (class ids)",
                owner=keys["label"],
            )
    mode = _padding(padding, keys["padding"])
    with routed_logs(logger, logging.DEBUG):
        encoded = tokenizer(texts, pairs, truncation=bool(truncation), max_length=max_length, padding=False)
    names = [n for n in tokenizer.model_input_names if n in encoded]
    encodings = [{n: encoded[n][i] for n in names} for i in range(len(texts))]
    return TokenizedText(encodings, labels, tokenizer, mode, max_length)


def _number(value: Any) -> Any:
    # CSV cells are strings; "1" is the class id 1.
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
    return value


def _text(row: Mapping[str, Any], field: str, index: int, source: str) -> str:
    value = row.get(field)
    if not isinstance(value, str):
        raise OliveError(f"sample {index + 1} of '{source}': field '{field}' is {value!r}, not text")
    return value


def _padding(value: Any, owner: str) -> str:
    if value is True:
        return "longest"
    if value is False:
        return "do_not_pad"
    if value in PADDING:
        return value
    raise WorkflowConfigError(f"expected one of {', '.join(PADDING)} (or true / false), got {value!r}", owner=owner)


# ----------------------------------------------------------------------------------------------- components


def text_dataset(
    data_path: str,
    text_field: str = "text",
    text_pair_field: str | None = None,
    label_field: str | None = None,
    max_samples: int | None = None,
) -> dict[str, Any]:
    """TextDataContainer's ``load_dataset``: the records of ``data_path`` and the fields to read."""
    return {
        "records": TextRecords(read_records(Path(data_path), "load_dataset_config.data_path"), data_path),
        "text_field": text_field,
        "text_pair_field": text_pair_field,
        "label_field": label_field,
        "max_samples": max_samples,
    }


def text_tokenize(
    dataset: Mapping[str, Any],
    tokenizer: str | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
    padding: Any = "max_length",
    truncation: bool = True,
) -> TokenizedText:
    """TextDataContainer's ``pre_process_data``: tokenize the records."""
    load, pre = "load_dataset_config", "pre_process_data_config"
    keys = {
        "text": f"{load}.text_field",
        "pair": f"{load}.text_pair_field",
        "label": f"{load}.label_field",
        "tokenizer": f"{pre}.tokenizer",
        "padding": f"{pre}.padding",
    }
    return tokenize(
        dataset["records"],
        tokenizer,
        dataset["text_field"],
        dataset["text_pair_field"],
        dataset["label_field"],
        max_length,
        padding,
        truncation,
        dataset["max_samples"],
        keys,
    )


def hf_local_dataset(
    data_name: str | None = None,
    data_files: str | list[str] | None = None,
    split: str = "train",
    subset: str | None = None,
    trust_remote_code: bool | None = None,
    streaming: bool = False,
) -> TextRecords:
    """HuggingfaceContainer's ``load_dataset``: the rows of a local file (or a folder's file for ``split``)."""
    match = _SPLIT.match(split)
    if match is None:
        raise OliveError(f"load_dataset_config.split: '{split}' is not a split name or 'name[start:stop]'")
    files = [Path(f) for f in ([data_files] if isinstance(data_files, str) else list(data_files or []))]
    if not files:
        files = [_split_file(Path(str(data_name)), match["name"])]
    rows: list[dict[str, Any]] = []
    for file in files:
        rows += read_records(file, "load_dataset_config")
    start = int(match["start"]) if match["start"] else None
    stop = int(match["stop"]) if match["stop"] else None
    return TextRecords(rows[start:stop], ", ".join(str(f) for f in files))


def _split_file(path: Path, split: str) -> Path:
    if path.is_file():
        return path
    found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
    named = [p for p in found if p.stem == split or p.stem.startswith(f"{split}-")]
    if len(named) == 1:
        return named[0]
    if not named and len(found) == 1:
        return found[0]
    raise WorkflowConfigError(
        f"'{path}' has {'no' if not named else 'several'} {'/'.join(TEXT_SUFFIXES)} file(s) for split '{split}' "
        f"(it has {', '.join(p.name for p in found) or 'none'}); name the file with data_files",
        owner="load_dataset_config.data_name",
    )


def hf_tokenize(
    dataset: TextRecords,
    model_name: str | None = None,
    input_cols: str | list[str] | None = None,
    label_col: str | None = None,
    max_samples: int | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
    padding: Any = "max_length",
    truncation: bool = True,
    trust_remote_code: bool | None = None,
) -> TokenizedText:
    """HuggingfaceContainer's ``pre_process_data``: tokenize ``input_cols`` (text, and pair when two)."""
    pre = "pre_process_data_config"
    cols = [input_cols] if isinstance(input_cols, str) else list(input_cols or ["text"])
    keys = {
        "text": f"{pre}.input_cols",
        "pair": f"{pre}.input_cols",
        "label": f"{pre}.label_col",
        "tokenizer": f"{pre}.model_name",
        "padding": f"{pre}.padding",
    }
    return tokenize(
        dataset,
        model_name,
        cols[0],
        cols[1] if len(cols) > 1 else None,
        label_col,
        max_length,
        padding,
        truncation,
        max_samples,
        keys,
    )


# ----------------------------------------------------------------------------------------------- the types


def _check_keys(params: Mapping[str, Any], allowed: Sequence[str], owner: str, kind: str) -> None:
    for key in params:
        if key not in allowed:
            raise WorkflowConfigError(
                f"unknown key for {kind}{closest_match_hint(str(key), allowed)}; valid keys: {', '.join(allowed)}",
                owner=f"{owner}.{key}",
            )


def _absolute(value: Any, base: Path, owner: str) -> Path:
    if not isinstance(value, str | Path) or not str(value):
        raise WorkflowConfigError(f"expected a path (a string), got {value!r}", owner=owner)
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def _check_common(params: Mapping[str, Any], owner: str) -> None:
    length = params.get("max_length", DEFAULT_MAX_LENGTH)
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise WorkflowConfigError(f"expected a whole number of 1 or more, got {length!r}", owner=f"{owner}.max_length")
    _padding(params.get("padding", "max_length"), f"{owner}.padding")
    if not isinstance(params.get("truncation", True), bool):
        raise WorkflowConfigError("expected true or false", owner=f"{owner}.truncation")
    samples = params.get("max_samples")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        raise WorkflowConfigError(
            f"expected a whole number of 1 or more, got {samples!r}", owner=f"{owner}.max_samples"
        )


def _tokenizer_folder(value: Any, base: Path, owner: str) -> str:
    path = _absolute(value, base, owner)
    if not path.is_dir():
        hub = isinstance(value, str) and not path.exists() and "/" in value and not value.startswith((".", "/"))
        reason = (
            f"'{value}' is not a local folder; tokenizers are not downloaded from the Hugging Face hub here: save it "
            "with tokenizer.save_pretrained(folder) and give the folder"
            if hub
            else f"'{value}' is not a folder (looked at {path}); give the folder tokenizer.save_pretrained wrote"
        )
        raise WorkflowConfigError(reason, owner=owner)
    return str(path)


def _tokenizer_files(folder: Any) -> list[str]:
    if not isinstance(folder, str):
        return []
    return [str(Path(folder) / name) for name in TOKENIZER_FILES if (Path(folder) / name).is_file()]


def _with_params(config: DataConfig, field: str, params: Mapping[str, Any]) -> DataConfig:
    component = getattr(config, field)
    return attrs.evolve(config, **{field: DataComponentConfig(component.type, dict(params))})


class TextDataContainer(DataContainerType):
    """Local ``.txt`` / ``.jsonl`` / ``.json`` / ``.csv`` text, tokenized with the model's tokenizer."""

    components: ClassVar[dict[str, Any]] = {"load_dataset": text_dataset, "pre_process_data": text_tokenize}
    LOAD_KEYS = ("data_path", "text_field", "text_pair_field", "label_field", "max_samples")
    PRE_KEYS = ("tokenizer", "max_length", "padding", "truncation")

    @classmethod
    def check(cls, config: DataConfig, json_path: str, base_dir: Path) -> DataConfig:
        load_owner, pre_owner = f"{json_path}.load_dataset_config", f"{json_path}.pre_process_data_config"
        load = dict(config.load_dataset_config.params)
        pre = dict(config.pre_process_data_config.params)
        if not config.load_dataset_config.type:
            _check_keys(load, cls.LOAD_KEYS, load_owner, "TextDataContainer")
            if not load.get("data_path"):
                raise WorkflowConfigError(
                    "missing; give the .txt (one sample per line) or .jsonl file", owner=f"{load_owner}.data_path"
                )
            path = Path(load["data_path"])  # DataConfig made it absolute
            if not path.is_file():
                raise WorkflowConfigError(
                    f"'{path}' does not exist; paths are relative to the workflow file's folder",
                    owner=f"{load_owner}.data_path",
                )
            if path.suffix.lower() not in TEXT_SUFFIXES:
                raise WorkflowConfigError(
                    f"'{path.name}' is not one of {', '.join(TEXT_SUFFIXES)}; save the text as .txt or .jsonl",
                    owner=f"{load_owner}.data_path",
                )
            for key in ("text_pair_field", "label_field"):
                if path.suffix.lower() == ".txt" and load.get(key) is not None:
                    raise WorkflowConfigError(
                        "a .txt file holds one text per line and no fields; use a .jsonl file for pairs and labels",
                        owner=f"{load_owner}.{key}",
                    )
            _check_common({"max_samples": load.get("max_samples")}, load_owner)
        if not config.pre_process_data_config.type:
            _check_keys(pre, cls.PRE_KEYS, pre_owner, "TextDataContainer")
            _check_common(pre, pre_owner)
            if pre.get("tokenizer") is not None:
                pre["tokenizer"] = _tokenizer_folder(pre["tokenizer"], base_dir, f"{pre_owner}.tokenizer")
        return _with_params(config, "pre_process_data_config", pre)

    @classmethod
    def files(cls, config: DataConfig) -> list[str]:
        return _tokenizer_files(config.pre_process_data_config.params.get("tokenizer"))

    @classmethod
    def bind_model(cls, config: DataConfig, model_path: str) -> DataConfig:
        pre = dict(config.pre_process_data_config.params)
        if config.pre_process_data_config.type or pre.get("tokenizer") or not _tokenizer_files(model_path):
            return config
        return _with_params(config, "pre_process_data_config", {**pre, "tokenizer": model_path})


class HuggingfaceContainer(DataContainerType):
    """Microsoft Olive's Hugging Face data config, read from local files only."""

    components: ClassVar[dict[str, Any]] = {"load_dataset": hf_local_dataset, "pre_process_data": hf_tokenize}
    LOAD_KEYS = ("data_name", "data_files", "split", "subset", "trust_remote_code", "streaming")
    PRE_KEYS = (
        "model_name",
        "input_cols",
        "label_col",
        "max_samples",
        "max_length",
        "padding",
        "truncation",
        "trust_remote_code",
    )

    @classmethod
    def check(cls, config: DataConfig, json_path: str, base_dir: Path) -> DataConfig:
        load_owner, pre_owner = f"{json_path}.load_dataset_config", f"{json_path}.pre_process_data_config"
        load = dict(config.load_dataset_config.params)
        pre = dict(config.pre_process_data_config.params)
        if not config.load_dataset_config.type:
            _check_keys(load, cls.LOAD_KEYS, load_owner, "HuggingfaceContainer")
            if load.get("subset") is not None:
                raise WorkflowConfigError(
                    "selects a configuration of a Hugging Face hub dataset, which is not downloaded here; save that "
                    "configuration's split as .jsonl and point data_name (or data_files) at it",
                    owner=f"{load_owner}.subset",
                )
            if load.get("streaming"):
                raise WorkflowConfigError(
                    "local files are read whole; leave streaming out", owner=f"{load_owner}.streaming"
                )
            split = load.get("split", "train")
            if not isinstance(split, str) or not _SPLIT.match(split):
                raise WorkflowConfigError(
                    f"expected a split name such as 'train' or 'validation[:100]', got {split!r}",
                    owner=f"{load_owner}.split",
                )
            name = load.get("data_name")
            root = base_dir
            if name is not None:
                path = _absolute(name, base_dir, f"{load_owner}.data_name")
                if not path.exists():
                    raise WorkflowConfigError(
                        f"'{name}' is not a local file or folder; datasets are not downloaded from the Hugging Face "
                        f"hub here. Save the split once where it can be downloaded (datasets.load_dataset({name!r}, "
                        "split=...).to_json('data.jsonl')) and give that file",
                        owner=f"{load_owner}.data_name",
                    )
                load["data_name"] = str(path)
                root = path if path.is_dir() else base_dir
            files = load.get("data_files")
            if files is not None:
                listed = [files] if isinstance(files, str) else files
                if not isinstance(listed, list) or not listed:
                    raise WorkflowConfigError(
                        "expected a file path or a list of them", owner=f"{load_owner}.data_files"
                    )
                resolved = []
                for i, file in enumerate(listed):
                    path = _absolute(file, root, f"{load_owner}.data_files[{i}]")
                    if not path.is_file():
                        raise WorkflowConfigError(
                            f"'{file}' is not a file (looked at {path})", owner=f"{load_owner}.data_files[{i}]"
                        )
                    resolved.append(str(path))
                load["data_files"] = resolved
            if name is None and files is None:
                raise WorkflowConfigError(
                    "missing; give a local .jsonl / .json / .csv / .txt file, or a folder holding one per split",
                    owner=f"{load_owner}.data_name",
                )
        if not config.pre_process_data_config.type:
            _check_keys(pre, cls.PRE_KEYS, pre_owner, "HuggingfaceContainer")
            _check_common(pre, pre_owner)
            cols = pre.get("input_cols")
            listed = [cols] if isinstance(cols, str) else cols
            if cols is not None and (not isinstance(listed, list) or not 1 <= len(listed) <= 2):
                raise WorkflowConfigError(
                    "expected one column (the text) or two (a text pair)", owner=f"{pre_owner}.input_cols"
                )
            if pre.get("model_name") is not None:
                pre["model_name"] = _tokenizer_folder(pre["model_name"], base_dir, f"{pre_owner}.model_name")
        config = _with_params(config, "load_dataset_config", load)
        return _with_params(config, "pre_process_data_config", pre)

    @classmethod
    def files(cls, config: DataConfig) -> list[str]:
        load = config.load_dataset_config.params
        found = [str(load["data_name"])] if load.get("data_name") else []
        found += [str(f) for f in load.get("data_files") or []]
        return found + _tokenizer_files(config.pre_process_data_config.params.get("model_name"))

    @classmethod
    def bind_model(cls, config: DataConfig, model_path: str) -> DataConfig:
        pre = dict(config.pre_process_data_config.params)
        if config.pre_process_data_config.type or pre.get("model_name") or not _tokenizer_files(model_path):
            return config
        return _with_params(config, "pre_process_data_config", {**pre, "model_name": model_path})
