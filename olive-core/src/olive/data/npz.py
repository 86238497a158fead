"""The built-in ``.npz`` data container.

One array per model input, keyed by the input's name, first axis = samples; an optional ``labels`` array
(also first axis = samples) gives the accuracy metric its targets. Written by ``numpy.savez`` or
:func:`olive.testing.models.write_npz_dataset`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from olive.exceptions import OliveError

LABEL_KEYS = ("labels", "label")


class NpzDataset:
    """An ``.npz`` file as a dataset of ``(inputs, label)`` samples, sliced into batches without copying."""

    def __init__(self, path: str | Path, max_samples: int | None = None):
        import numpy as np

        self.path = Path(path)
        if not self.path.is_file():
            raise OliveError(f"data file '{self.path}' does not exist; write it with numpy.savez or fix data_path")
        try:
            with np.load(self.path, allow_pickle=False) as archive:
                arrays = {key: archive[key] for key in archive.files}
        except Exception as exc:
            raise OliveError(
                f"'{self.path}' is not a readable .npz of numeric arrays ({type(exc).__name__}: {exc}); "
                "save it with numpy.savez(path, input_name=array, ...)"
            ) from exc
        label_key = next((key for key in LABEL_KEYS if key in arrays), None)
        self.labels = arrays.pop(label_key) if label_key else None
        if not arrays:
            raise OliveError(f"'{self.path}' holds no input arrays; save one array per model input name")
        lengths = {key: (value.shape[0] if value.ndim else None) for key, value in arrays.items()}
        if self.labels is not None:
            lengths[label_key] = self.labels.shape[0] if self.labels.ndim else None
        if None in lengths.values() or len(set(lengths.values())) != 1:
            shown = ", ".join(f"{k}: {v}" for k, v in lengths.items())
            raise OliveError(
                f"arrays in '{self.path}' disagree on the number of samples (first axis) ({shown}); "
                "every array needs one row per sample"
            )
        self.inputs = arrays
        total = next(iter(lengths.values()))
        self.num_samples = min(total, max_samples) if max_samples else total

    def __len__(self) -> int:
        return self.num_samples

    def __getitem__(self, index: int) -> tuple[dict[str, Any], Any]:
        if not 0 <= index < self.num_samples:
            raise IndexError(index)
        label = None if self.labels is None else self.labels[index]
        return {key: value[index] for key, value in self.inputs.items()}, label

    def batch(self, start: int, stop: int) -> tuple[dict[str, Any], Any]:
        stop = min(stop, self.num_samples)
        labels = None if self.labels is None else self.labels[start:stop]
        return {key: value[start:stop] for key, value in self.inputs.items()}, labels
