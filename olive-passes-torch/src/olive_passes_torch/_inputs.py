"""Synthetic inputs for exporting a model and for checking the export.

The export traces the model at one size (batch 2, sequence 8 unless the io_config fixes the shape). The
check runs it at another size on every free axis (batch 3, sequence 11): a size the trace baked into the
graph then shows up as a mismatch instead of a model that only works at the traced shape. Token ids are
drawn inside the vocabulary, attention masks are ones with the first sample right-padded (so a trace that
dropped the mask shows too), token type ids are zeros, position ids count up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from olive_passes_torch.io_config import IoConfig

if TYPE_CHECKING:
    import numpy as np

EXPORT_SIZES = {0: 2, "other": 8}
_VARIED = {0: 1, "other": 3}  # added to a free axis's size for the check


def example_shapes(io: IoConfig, vary: bool) -> list[tuple[int, ...]]:
    """One shape per input. Axes that share a dim name share a size."""
    sizes: dict[str, int] = {}
    shapes = []
    for i, name in enumerate(io.input_names):
        # Text inputs without shapes are [batch, sequence]; only dynamic_axes (or dim names) free an axis.
        base = io.input_shapes[i] if io.input_shapes is not None else (EXPORT_SIZES[0], EXPORT_SIZES["other"])
        free = io.dynamic_axes.get(name, {})
        shape = []
        for axis, dim in enumerate(base):
            dim_name = free.get(axis) or (dim if isinstance(dim, str) else None)
            size = dim if isinstance(dim, int) else EXPORT_SIZES[0 if axis == 0 else "other"]
            if dim_name is not None:
                if vary:
                    size += _VARIED[0 if axis == 0 else "other"]
                size = sizes.setdefault(dim_name, size)
            shape.append(size)
        shapes.append(tuple(shape))
    return shapes


def synthetic_inputs(io: IoConfig, vary: bool, vocab_size: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of the io_config's names, shapes and types (``int64`` for text inputs when types are not given)."""
    import numpy as np

    rng = np.random.default_rng(seed + (1 if vary else 0))
    feeds = {}
    for i, (name, shape) in enumerate(zip(io.input_names, example_shapes(io, vary), strict=True)):
        dtype = np.dtype(io.input_types[i]) if io.input_types is not None else np.dtype("int64")
        if name == "input_ids" and np.issubdtype(dtype, np.integer):
            value = rng.integers(0, vocab_size or 2, size=shape)
        elif name == "attention_mask":
            value = np.ones(shape)
            if len(shape) == 2 and shape[0] > 1 and shape[1] > 2:
                value[0, -2:] = 0
        elif name == "position_ids" and len(shape) == 2:
            value = np.broadcast_to(np.arange(shape[1]), shape).copy()
        elif np.issubdtype(dtype, np.integer) or dtype == np.bool_:
            value = np.zeros(shape) if name == "token_type_ids" else np.ones(shape)
        else:
            value = rng.standard_normal(shape)
        feeds[name] = value.astype(dtype)
    return feeds
