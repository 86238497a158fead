"""Built-in data components and the batch format every data loader yields.

A data loader yields ``(inputs, labels)``: ``inputs`` maps a model input name to a numpy array whose first
axis is the batch, ``labels`` is an array or ``None``. Loaders from a user script may yield torch tensors,
lists of arrays or bare dicts; :func:`normalize_batch` brings them to that form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from olive.data.npz import NpzDataset

# Positional inputs (a bare array, or a list of arrays) are keyed "#0", "#1"... until bound to the model's
# input names by :func:`bind_inputs`.
POSITIONAL_PREFIX = "#"


def to_numpy(value: Any) -> Any:
    import numpy as np

    if hasattr(value, "detach"):  # a torch tensor; torch is never imported here
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def normalize_batch(batch: Any) -> tuple[dict[str, Any], Any]:
    """Turn whatever a loader yields into ``(dict of arrays, labels or None)``."""
    labels = None
    # (inputs, labels) pairs, as torch-style loaders yield them (a list after collation); a model with
    # exactly two positional inputs must yield a dict instead.
    if (
        isinstance(batch, tuple | list)
        and len(batch) == 2
        and (isinstance(batch[0], Mapping) or _is_array_like(batch[0]))
    ):
        batch, labels = batch
    if isinstance(batch, Mapping):
        inputs = {str(k): to_numpy(v) for k, v in batch.items()}
    elif isinstance(batch, list | tuple):
        inputs = {f"{POSITIONAL_PREFIX}{i}": to_numpy(v) for i, v in enumerate(batch)}
    else:
        inputs = {f"{POSITIONAL_PREFIX}0": to_numpy(batch)}
    return inputs, (None if labels is None else to_numpy(labels))


def _is_array_like(value: Any) -> bool:
    return (hasattr(value, "shape") and hasattr(value, "dtype")) or hasattr(value, "detach")


def bind_inputs(inputs: Mapping[str, Any], input_names: Sequence[str]) -> dict[str, Any]:
    """Give positional inputs the model's input names (in order); named inputs are kept as they are."""
    if not any(k.startswith(POSITIONAL_PREFIX) for k in inputs):
        return dict(inputs)
    bound: dict[str, Any] = {}
    for key, value in inputs.items():
        if key.startswith(POSITIONAL_PREFIX):
            index = int(key[len(POSITIONAL_PREFIX) :])
            bound[input_names[index] if index < len(input_names) else key] = value
        else:
            bound[key] = value
    return bound


# ----------------------------------------------------------------------------------------------- datasets


class DummyDataset:
    """``max_samples`` batches of the given shapes: ones for integer inputs, seeded normal floats otherwise."""

    is_batched = True

    def __init__(
        self,
        input_shapes: Sequence[Sequence[int]],
        input_names: Sequence[str] | None = None,
        input_types: Sequence[str] | None = None,
        max_samples: int = 32,
        seed: int = 0,
    ):
        import numpy as np

        names = list(input_names or [f"input_{i}" for i in range(len(input_shapes))])
        types = list(input_types or ["float32"] * len(names))
        if not (len(names) == len(input_shapes) == len(types)):
            raise ValueError("input_names, input_shapes and input_types must have the same length")
        rng = np.random.default_rng(seed)
        self._batches = []
        for _ in range(max_samples):
            feeds = {}
            for name, shape, dtype in zip(names, input_shapes, types, strict=True):
                if np.issubdtype(np.dtype(dtype), np.integer) or np.dtype(dtype) == np.bool_:
                    feeds[name] = np.ones(shape, dtype=dtype)
                else:
                    feeds[name] = rng.standard_normal(shape).astype(dtype)
            self._batches.append(feeds)

    def __len__(self) -> int:
        return len(self._batches)

    def __getitem__(self, index: int) -> tuple[dict[str, Any], None]:
        return self._batches[index], None


# --------------------------------------------------------------------------------------------- components


def dummy_dataset(
    data_dir: str | None = None,
    input_shapes: Sequence[Sequence[int]] = (),
    input_names: Sequence[str] | None = None,
    input_types: Sequence[str] | None = None,
    max_samples: int = 32,
    seed: int = 0,
) -> DummyDataset:
    if not input_shapes:
        raise ValueError("DummyDataContainer needs load_dataset_config.input_shapes, e.g. [[1, 128]]")
    return DummyDataset(input_shapes, input_names, input_types, max_samples, seed)


def npz_dataset(
    data_path: str | None = None, data_dir: str | None = None, max_samples: int | None = None
) -> NpzDataset:
    path = data_path or data_dir
    if not path:
        raise ValueError("NpzDataContainer needs load_dataset_config.data_path: the .npz file")
    return NpzDataset(path, max_samples=max_samples)


def pre_process(dataset: Any, **kwargs: Any) -> Any:
    """Default pre-processing: none."""
    return dataset


def post_process(output: Any, **kwargs: Any) -> Any:
    """Default post-processing of model outputs: none (the accuracy metric takes the argmax itself)."""
    return output


class _Batches:
    """Re-iterable batches of a dataset of ``(inputs, label)`` items (or of pre-batched items)."""

    def __init__(self, dataset: Any, batch_size: int, drop_last: bool):
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[tuple[dict[str, Any], Any]]:
        if getattr(self.dataset, "is_batched", False):
            for index in range(len(self.dataset)):
                yield normalize_batch(self.dataset[index])
            return
        if hasattr(self.dataset, "batch"):  # array-backed datasets slice whole batches at once
            total = len(self.dataset)
            for start in range(0, total, self.batch_size):
                stop = min(start + self.batch_size, total)
                if self.drop_last and stop - start < self.batch_size:
                    return
                yield self.dataset.batch(start, stop)
            return
        items: list[tuple[dict[str, Any], Any]] = []
        for item in _iterate(self.dataset):
            items.append(normalize_batch(item))
            if len(items) == self.batch_size:
                yield _collate(items)
                items = []
        if items and not self.drop_last:
            yield _collate(items)


def _iterate(dataset: Any) -> Iterable[Any]:
    if hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__"):
        return (dataset[i] for i in range(len(dataset)))
    return dataset


def _collate(items: list[tuple[dict[str, Any], Any]]) -> tuple[dict[str, Any], Any]:
    import numpy as np

    keys = list(items[0][0])
    inputs = {key: np.stack([inp[key] for inp, _ in items]) for key in keys}
    labels = [label for _, label in items]
    return inputs, (None if any(label is None for label in labels) else np.stack(labels))


def default_dataloader(dataset: Any, batch_size: int = 1, drop_last: bool = False, **kwargs: Any) -> _Batches:
    """Batches of ``batch_size`` samples (the last one may be smaller unless ``drop_last``)."""
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    return _Batches(dataset, int(batch_size), drop_last)


def no_auto_batch_dataloader(dataset: Any, **kwargs: Any) -> _Batches:
    """Each dataset item is already a batch."""
    batches = _Batches(dataset, 1, False)
    batches.dataset = _PreBatched(dataset)
    return batches


class _PreBatched:
    is_batched = True

    def __init__(self, dataset: Any):
        self._items = list(_iterate(dataset))

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> Any:
        return self._items[index]


BUILTINS: dict[str, dict[str, Callable[..., Any]]] = {
    "load_dataset": {"npz_dataset": npz_dataset, "dummy_dataset": dummy_dataset},
    "pre_process_data": {"pre_process": pre_process},
    "post_process_data": {"post_process": post_process},
    "dataloader": {"default_dataloader": default_dataloader, "no_auto_batch_dataloader": no_auto_batch_dataloader},
}
