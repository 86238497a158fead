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


def read_npz_headers(path: str | Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{key: (shape, dtype name)}`` of every array in an ``.npz``, read from the arrays' headers: no data is
    loaded and nothing is ever unpickled.

    Raises :class:`OliveError` saying what is wrong with the file in Olive's words (not an ``.npz`` archive,
    a member that is not an array, an array of Python objects) and how to write one that works.
    """
    import zipfile

    path = Path(path)
    fix = "save the data with numpy.savez(path, input_name=array, ...), one numeric array per model input"
    if not path.is_file():
        raise OliveError(f"data file '{path}' does not exist; write it with numpy.savez or fix data_path")
    if not zipfile.is_zipfile(path):
        raise OliveError(f"'{path}' is not an .npz archive (numpy.savez writes a zip archive of .npy arrays); {fix}")
    headers: dict[str, tuple[tuple[int, ...], str]] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                key = member.removesuffix(".npy")
                with archive.open(member) as handle:
                    header = _npy_header(handle)
                if header is None:
                    raise OliveError(f"'{path}': member '{member}' is not a numpy array; {fix}")
                shape, dtype, has_objects = header
                if has_objects:
                    raise OliveError(
                        f"'{path}': array '{key}' holds Python objects (dtype {dtype}), which Olive does not load; "
                        f"{fix}"
                    )
                headers[key] = (shape, dtype)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise OliveError(f"'{path}' cannot be read as an .npz archive ({type(exc).__name__}); {fix}") from None
    return headers


# The .npy header's "descr" of plain native arrays, by dtype name (numpy's own format, version 1 to 3).
_DESCR_NAMES = {
    "<f2": "float16", "<f4": "float32", "<f8": "float64",
    "|i1": "int8", "<i2": "int16", "<i4": "int32", "<i8": "int64",
    "|u1": "uint8", "<u2": "uint16", "<u4": "uint32", "<u8": "uint64",
    "|b1": "bool",
}  # fmt: skip
_NPY_MAGIC = b"\x93NUMPY"


def _npy_header(handle: Any) -> tuple[tuple[int, ...], str, bool] | None:
    """(shape, dtype name, holds objects) from an ``.npy`` member's header; None when it is not an array.

    The header is a Python literal (numpy's ``.npy`` format): read with :func:`ast.literal_eval`, never
    unpickled. A descr other than a plain native type (a byte order, a structured type) is left to numpy.
    """
    import ast

    prefix = handle.read(8)
    if len(prefix) != 8 or not prefix.startswith(_NPY_MAGIC) or prefix[6] not in (1, 2, 3):
        return None
    size = int.from_bytes(handle.read(2 if prefix[6] == 1 else 4), "little")
    if size > 2**20:  # numpy writes a few dozen bytes; anything near this is not an array's header
        return None
    try:
        header = ast.literal_eval(handle.read(size).decode("latin1" if prefix[6] < 3 else "utf8"))
        descr, shape = header["descr"], tuple(int(n) for n in header["shape"])
    except (ValueError, SyntaxError, KeyError, TypeError, UnicodeDecodeError, MemoryError, RecursionError):
        return None
    if isinstance(descr, str) and descr in _DESCR_NAMES:
        return shape, _DESCR_NAMES[descr], False
    import numpy as np

    try:
        dtype = np.dtype(np.lib.format.descr_to_dtype(descr))
    except (TypeError, ValueError):
        return None
    return shape, str(dtype), dtype.hasobject


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
