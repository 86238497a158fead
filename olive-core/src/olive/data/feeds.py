"""Model feeds from data: a batch checked against a model's inputs, and onnxruntime's calibration reader.

Nothing here knows how a data config is written; :mod:`olive.data.calibration` makes readers from a data
config's JSON form or an ``.npz`` path.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from olive.data.components import bind_inputs
from olive.exceptions import OliveError, PassConfigError

if TYPE_CHECKING:
    from olive.model.handler import ONNXModelHandler


def check_feeds(
    feeds: Mapping[str, Any],
    io_config: Mapping[str, Any],
    where: str,
    model_name: str = "the model",
    cast: bool = False,
) -> dict[str, Any]:
    """Check one batch against a model's inputs and return the feeds the model takes.

    Raises :class:`PassConfigError` naming ``where`` for a missing input, a wrong rank, a fixed dimension
    that differs, or a dtype onnxruntime would refuse. Arrays that are not model inputs are dropped.
    With ``cast``, a float array feeds a float input of another width (and an int array an int input), so
    one dataset serves a model and, say, its float16 conversion.
    """
    import numpy as np

    names = list(io_config["input_names"])
    feeds = bind_inputs(feeds, names)
    _check_names(feeds, names, where, model_name)
    result = {}
    for name, shape, dtype in zip(names, io_config["input_shapes"], io_config["input_types"], strict=True):
        value = np.asarray(feeds[name])
        _check_shape(name, shape, value.shape, where, model_name)
        if np.dtype(dtype) != value.dtype and cast and _same_kind(value.dtype, np.dtype(dtype)):
            value = value.astype(dtype)
        if np.dtype(dtype) != value.dtype:
            raise PassConfigError(_dtype_reason(name, value.dtype, dtype, model_name), owner=where)
        result[name] = value
    return result


def check_feed_specs(
    specs: Mapping[str, tuple[tuple[int, ...], str]],
    io_config: Mapping[str, Any],
    where: str,
    model_name: str = "the model",
    cast: bool = False,
) -> None:
    """:func:`check_feeds`' rules on the arrays' shapes and dtype names alone (``{name: (shape, dtype)}``, what an
    ``.npz`` header says): no array is made, and numpy is imported only for a dtype name it must interpret."""
    names = list(io_config["input_names"])
    specs = bind_inputs(specs, names)
    _check_names(specs, names, where, model_name)
    for name, shape, dtype in zip(names, io_config["input_shapes"], io_config["input_types"], strict=True):
        got_shape, got = specs[name]
        _check_shape(name, shape, got_shape, where, model_name)
        if got == dtype:
            continue
        kind_got, kind_want = _kind(got), _kind(dtype)
        if kind_got is None or kind_want is None:
            import numpy as np

            # Not a plain native dtype name (a byte order, a structured type): numpy decides, as check_feeds does.
            if np.dtype(got) == np.dtype(dtype) or (cast and _same_kind(np.dtype(got), np.dtype(dtype))):
                continue
        elif cast and kind_got == kind_want:
            continue
        raise PassConfigError(_dtype_reason(name, got, dtype, model_name), owner=where)


def _check_names(feeds: Mapping[str, Any], names: list[str], where: str, model_name: str) -> None:
    missing = [n for n in names if n not in feeds]
    extra = [k for k in feeds if k not in names]
    if missing:
        hints = "".join(f"; is '{match}' meant to be '{m}'?" for m in missing if (match := _closest(m, extra)))
        raise PassConfigError(
            f"{where} does not provide input(s) {', '.join(repr(m) for m in missing)} of {model_name} "
            f"(the data has {', '.join(repr(k) for k in feeds) or 'nothing'}; the model takes "
            f"{', '.join(repr(n) for n in names)}){hints}; key the arrays by the model's input names"
        )


def _check_shape(name: str, shape: Sequence[Any], got: Sequence[int], where: str, model_name: str) -> None:
    if len(shape) != len(got):
        raise PassConfigError(
            f"input '{name}' has shape {list(got)} (rank {len(got)}) but {model_name} expects "
            f"rank {len(shape)} ({shape}); the first axis is the batch",
            owner=where,
        )
    for axis, (want, size) in enumerate(zip(shape, got, strict=True)):
        if isinstance(want, int) and want > 0 and want != size:
            raise PassConfigError(
                f"input '{name}' has size {size} on axis {axis} but {model_name} fixes it to {want} "
                f"(model shape {shape}, data shape {list(got)})",
                owner=where,
            )


def _dtype_reason(name: str, got: Any, want: str, model_name: str) -> str:
    return (
        f"input '{name}' is {got} but {model_name} takes {want}; save the array as {want} (e.g. array.astype('{want}'))"
    )


# Native dtype names by kind, as numpy's issubdtype(.., np.floating / np.integer) groups them.
_KINDS = {
    **dict.fromkeys(("float16", "float32", "float64"), "float"),
    **dict.fromkeys(("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"), "int"),
    "bool": "bool",
}


def _kind(dtype: str) -> str | None:
    return _KINDS.get(str(dtype))


def _same_kind(a: Any, b: Any) -> bool:
    import numpy as np

    return any(np.issubdtype(a, kind) and np.issubdtype(b, kind) for kind in (np.floating, np.integer))


def _closest(name: str, candidates: list[str]) -> str | None:
    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


class Batches(Protocol):
    """What a reader reads: ``(inputs, labels)`` batches, and how messages name where they come from.

    A :class:`~olive.data.config.DataConfig` is one. That module imports this one to make its readers, so the
    reader names what it uses of a data config rather than the class.
    """

    @property
    def where(self) -> str: ...

    def create_dataloader(self) -> Iterable[tuple[dict[str, Any], Any]]: ...


class FeedReader:
    """onnxruntime's ``CalibrationDataReader`` over the batches of a :class:`~olive.data.config.DataConfig`.

    :param data_config: the data (a DataConfig, or anything else that has its :class:`Batches`).
    :param input_names: keep only these inputs in each batch (default: every array of the data, or the
        model's inputs once :meth:`check_against` has run).
    :param max_samples: stop after this many samples (rows), cutting the last batch.

    Instances are subclasses of ``onnxruntime.quantization.CalibrationDataReader``; onnxruntime is only
    imported when the first reader is made.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> FeedReader:
        return object.__new__(_with_onnxruntime_base(cls))

    def __init__(self, data_config: Batches, input_names: Sequence[str] | None = None, max_samples: int | None = None):
        self.data_config = data_config
        self.input_names = list(input_names) if input_names is not None else None
        self.max_samples = max_samples
        self._io_config: dict[str, Any] | None = None
        self._model_name = "the model"
        self._iterator: Iterator[dict[str, Any]] | None = None

    def check_against(self, model: ONNXModelHandler) -> FeedReader:
        """Check the first batch against ``model``'s inputs (names, ranks, fixed dims, dtypes).

        Raises :class:`PassConfigError` naming the data config; afterwards batches carry only the model's
        inputs. Returns ``self``.
        """
        self._io_config = model.get_io_config()
        self._model_name = f"model '{Path(model.model_path).name}'"
        first = next(iter(self.data_config.create_dataloader()), None)
        if first is None:
            raise PassConfigError(f"{self.data_config.where} yields no data; calibration needs at least one sample")
        check_feeds(self._select(first[0]), self._io_config, self.data_config.where, self._model_name)
        self.rewind()
        return self

    def _select(self, feeds: dict[str, Any]) -> dict[str, Any]:
        if self.input_names is None:
            return feeds
        missing = [n for n in self.input_names if n not in feeds]
        if missing:
            raise PassConfigError(
                f"{self.data_config.where} has no array(s) {', '.join(repr(m) for m in missing)} "
                f"(it has {', '.join(repr(k) for k in feeds)}); fix input_names or the data"
            )
        return {n: feeds[n] for n in self.input_names}

    def _batches(self) -> Iterator[dict[str, Any]]:
        seen = 0
        for inputs, _ in self.data_config.create_dataloader():
            feeds = self._select(inputs)
            if self._io_config is not None:
                feeds = check_feeds(feeds, self._io_config, self.data_config.where, self._model_name)
            if self.max_samples is not None:
                left = self.max_samples - seen
                if left <= 0:
                    return
                feeds = {k: v[:left] for k, v in feeds.items()}
            seen += len(next(iter(feeds.values()))) if feeds else 0
            yield feeds

    def get_next(self) -> dict[str, Any] | None:
        if self._iterator is None:
            self._iterator = self._batches()
        try:
            return next(self._iterator)
        except StopIteration:
            return None
        except OliveError:
            raise

    def rewind(self) -> None:
        self._iterator = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._batches()


# Each reader class, and its subclass that also derives from onnxruntime's interface.
_WITH_BASE: dict[type, type] = {}


def _with_onnxruntime_base(cls: type) -> type:
    if cls not in _WITH_BASE:
        # onnxruntime is imported only when a reader is made, and readers are real subclasses of its interface.
        from onnxruntime.quantization import CalibrationDataReader as OrtCalibrationDataReader

        if issubclass(cls, OrtCalibrationDataReader):
            _WITH_BASE[cls] = cls
        else:

            def body(ns: dict[str, Any]) -> None:
                ns.update({"__module__": cls.__module__, "__doc__": cls.__doc__, "__qualname__": cls.__qualname__})

            real = types.new_class(cls.__name__, (cls, OrtCalibrationDataReader), exec_body=body)
            _WITH_BASE[cls] = _WITH_BASE[real] = real
    return _WITH_BASE[cls]
