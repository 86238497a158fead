"""Text that fits or judges a generative model: the samples of a pass's or a metric's data, cut into windows.

The passes that fit on text (``OnnxGptqQuantization``, ``OnnxGuardedInt4``) share three params,
:func:`text_params`:

- ``data_config``: the workflow's text data config (a ``TextDataContainer`` over a ``.txt`` or ``.jsonl`` file), as
  other passes name theirs. When the workflow's metrics judge on the same config, the engine gives the pass the
  fitting part of its samples and the metrics the judging part (:mod:`olive.data.split`), so a figure is never
  measured on text the pass fitted on.
- ``data_path``: a text file read whole (direct use, and workflows written before ``data_config``).
- ``window`` and ``max_windows``: the samples are joined by newlines, tokenized once with the folder's own
  tokenizer and cut into windows of ``window`` tokens, at most ``max_windows``.

The metrics read the same way (:func:`read_samples`), from their ``data_config`` or ``user_config.data_path``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError, PassParamError
from olive.passes import PassConfigParam
from olive.passes.pass_config import ParamCategory

if TYPE_CHECKING:
    import numpy as np

    from olive.passes.pass_config import BasePassConfig

__all__ = [
    "DATA_CONFIG_TYPE",
    "TEXT_CONTAINER",
    "check_text_params",
    "pass_samples",
    "read_samples",
    "text_params",
    "windows",
]

# A string type keeps DataConfig out of config validation (as the quantization passes declare theirs); a workflow
# resolves the name of one of its data_configs into the DataConfig itself.
DATA_CONFIG_TYPE = "DataConfig | dict | str"
TEXT_CONTAINER = "TextDataContainer"
DEFAULT_WINDOW = 128
DEFAULT_MAX_WINDOWS = 16


def text_params(use: str, max_windows_help: str = "Windows read from the text.") -> dict[str, PassConfigParam]:
    """``data_config``, ``data_path``, ``window`` and ``max_windows``; ``use`` says what the text is for."""
    return {
        "data_config": PassConfigParam(
            type_=DATA_CONFIG_TYPE,
            default_value=None,
            description=f"{use}: the name of one of the workflow's data_configs (a TextDataContainer over a .txt or "
            ".jsonl file), a DataConfig or its JSON form. Where the workflow's metrics judge on the same config, "
            "this pass fits on its fitting part only.",
        ),
        "data_path": PassConfigParam(
            type_=str | None,
            default_value=None,
            category=ParamCategory.PATH,
            description=f"{use}, instead of data_config: a .txt file (one sample per line) or .jsonl (field "
            "'text'), read whole.",
        ),
        "window": PassConfigParam(type_=int, default_value=DEFAULT_WINDOW, description="Tokens per window."),
        "max_windows": PassConfigParam(type_=int, default_value=DEFAULT_MAX_WINDOWS, description=max_windows_help),
    }


def check_text_params(config: BasePassConfig, min_windows: int = 1) -> None:
    """One source of text, and windows that hold a next token to predict."""
    given = [name for name in ("data_config", "data_path") if config[name] is not None]
    if not given:
        raise PassParamError(
            "no text to fit on; give data_config (the name of the workflow's text data config) or data_path (a .txt "
            "or .jsonl file)",
            params="data_config",
        )
    if len(given) == 2:
        raise PassParamError("data_config and data_path both given; give one source of text", params="data_path")
    if config.window < 2:
        raise PassParamError(f"param 'window' is {config.window}; give at least 2 tokens", params="window")
    if config.max_windows < min_windows:
        raise PassParamError(
            f"param 'max_windows' is {config.max_windows}; give at least {min_windows}", params="max_windows"
        )


def pass_samples(config: BasePassConfig, owner: str) -> tuple[list[str], str]:
    """The text samples a pass fits on, and how to name their source in a message."""
    if config.data_path is not None:
        return read_samples(None, config.data_path, owner), f"'{config.data_path}'"
    from olive.data.config import as_data_config

    data = as_data_config(config.data_config, f"{owner}.data_config")
    part = f" (its {data.role} part)" if data.role is not None else ""
    return read_samples(data, None, owner), f"data config '{data.name}'{part}"


def read_samples(data: Any, data_path: str | Path | None, what: str, text_field: str = "text") -> list[str]:
    """The non-empty text samples of ``data_path`` (read whole) or of the data config ``data``, where a config
    given a role (``fit`` or ``judge``) by the workflow yields that part's samples only."""
    from olive_passes_torch.text_data import read_records

    field = text_field
    rows: list[dict[str, Any]]
    if data_path is not None:
        path = str(data_path)
        rows = read_records(Path(path), what)
    elif data is not None:
        if data.type != TEXT_CONTAINER:
            raise OliveError(
                f"{what}: {data.where} is a {data.type}; generative passes and metrics read text from a "
                f"{TEXT_CONTAINER} (a .txt or .jsonl file)"
            )
        params = dict(data.load_dataset_config.params)
        path, field = params.get("data_path"), params.get("text_field") or text_field
        if path is None:
            raise OliveError(f"{what}: {data.where} names no load_dataset_config.data_path")
        rows = read_records(Path(path), what)
        if params.get("max_samples"):
            rows = rows[: int(params["max_samples"])]
        if data.role is not None:
            rows = _role_rows(data, rows, what)
    else:
        raise OliveError(
            f"{what}: no text to measure on; give data_config (a {TEXT_CONTAINER} over a .txt or .jsonl file) or "
            "user_config.data_path"
        )
    samples = [str(row.get(field, "")) for row in rows if str(row.get(field, "")).strip()]
    if not samples:
        raise OliveError(f"{what}: '{path}' holds no text (field '{field}')")
    return samples


def _role_rows(data: Any, rows: list[dict[str, Any]], what: str) -> list[dict[str, Any]]:
    """The rows of ``data``'s part: the engine's own split of the config's samples (one rule for every pass and
    metric, so that the passes' part and the metrics' part never share a sample)."""
    dataset = data.load_dataset()
    indices = getattr(dataset, "indices", None)
    if indices is None or len(getattr(dataset, "dataset", ())) != len(rows):
        raise OliveError(f"{what}: {data.where}'s {data.role} part does not line up with the rows of its file")
    return [rows[i] for i in indices]


def windows(tokens: np.ndarray, window: int, stride: int, max_windows: int) -> list[np.ndarray]:
    """Windows of ``window`` tokens starting every ``stride`` tokens, at most ``max_windows``; a text shorter than a
    window is one window."""
    starts = range(0, max(1, len(tokens) - window + 1), stride)
    cut = [tokens[s : s + window] for s in starts][:max_windows]
    return [w for w in cut if len(w) >= 2]
