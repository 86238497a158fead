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


def read_npz_headers(path: str | Path) -> dict[str, tuple[tuple[int, ...], Any]]:
    """``{key: (shape, dtype)}`` of every array in an ``.npz``, read from the arrays' headers: no data is
    loaded and nothing is ever unpickled.

    Raises :class:`OliveError` saying what is wrong with the file in Olive's words (not an ``.npz`` archive,
    a member that is not an array, an array of Python objects) and how to write one that works.
    """
    import zipfile

    import numpy as np

    path = Path(path)
    fix = "save the data with numpy.savez(path, input_name=array, ...), one numeric array per model input"
    if not path.is_file():
        raise OliveError(f"data file '{path}' does not exist; write it with numpy.savez or fix data_path")
    if not zipfile.is_zipfile(path):
        raise OliveError(f"'{path}' is not an .npz archive (numpy.savez writes a zip archive of .npy arrays); {fix}")
    headers: dict[str, tuple[tuple[int, ...], Any]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                key = member.removesuffix(".npy")
                with archive.open(member) as handle:
                    try:
                        version = np.lib.format.read_magic(handle)
                        read = (
                            np.lib.format.read_array_header_1_0
                            if version == (1, 0)
                            else np.lib.format.read_array_header_2_0
                        )
                        shape, _, dtype = read(handle)
                    except ValueError:
                        raise OliveError(f"'{path}': member '{member}' is not a numpy array; {fix}") from None
                if dtype.hasobject:
                    raise OliveError(
                        f"'{path}': array '{key}' holds Python objects (dtype {dtype}), which Olive does not load; "
                        f"{fix}"
                    )
                headers[key] = (tuple(shape), dtype)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise OliveError(f"'{path}' cannot be read as an .npz archive ({type(exc).__name__}); {fix}") from None
    return headers


class NpzDataset:
    """An ``.npz`` file as a dataset of ``(inputs, label)`` samples, sliced into batches without copying."""

    def __init__(self, path: str | Path, max_samples: int | None = None):
        import numpy as np

        self.path = Path(path)
        # Checked from the headers first, so a broken file gets Olive's message (never numpy's advice to
        # load pickled data).
        read_npz_headers(self.path)
        try:
            with np.load(self.path, allow_pickle=False) as archive:
                arrays = {key: archive[key] for key in archive.files}
        except Exception as exc:
            raise OliveError(
                f"'{self.path}' is not a readable .npz of numeric arrays ({type(exc).__name__}); "
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
