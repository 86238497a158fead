"""Text that fits or judges a generative model: the samples of a pass's or a metric's data, cut into windows.

The passes that fit on text (olive-passes-quant's ``OnnxGptqQuantization``, ``OnnxGuardedInt4``) share their
params (``data_config`` or ``data_path``, ``window``, ``max_windows``: :mod:`olive_passes_quant.text_params`); this
module reads them (:func:`pass_samples`). When the workflow's metrics judge on the same data config, the engine
gives the pass the fitting part of its samples and the metrics the judging part (:mod:`olive.data.split`), so a
figure is never measured on text the pass fitted on.

The metrics read the same way (:func:`read_samples`), from their ``data_config`` or ``user_config.data_path``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError

if TYPE_CHECKING:
    import numpy as np

    from olive.passes.pass_config import BasePassConfig

__all__ = ["TEXT_CONTAINER", "pass_samples", "read_samples", "windows"]

TEXT_CONTAINER = "TextDataContainer"


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
