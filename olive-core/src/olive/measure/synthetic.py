"""Inputs made from a model's input specs, for timing a model that has no data.

One rule for every free (symbolic or unknown) dimension:

- a dimension named in ``dim_values`` takes that size;
- otherwise the first axis (the batch) is :data:`BATCH_SIZE` (1, a single request);
- every other free axis (sequence length, image side, ...) is :data:`FREE_DIM_SIZE` (16).

A free sequence axis of 1 would make every op trivially small: threading and call overhead would dominate
the time, and session tuning would pick settings (one intra-op thread) that lose on real inputs; 16 keeps
the work representative while staying cheap. Name the real sizes in ``dim_values`` when they are known.

Values are seeded: float inputs are standard normal; integer and bool inputs are all ones, a valid token
id, attention-mask value and token-type id alike, so ids stay inside any vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from olive.exceptions import OliveError

BATCH_SIZE = 1
FREE_DIM_SIZE = 16


def concrete_shape(shape: Sequence[int | str], dim_values: Mapping[str, int] | None = None) -> list[int]:
    """``shape`` (ints and dim names, as ``get_io_config`` gives them) with every free dimension sized."""
    dims = []
    for axis, dim in enumerate(shape):
        if isinstance(dim, int) and dim > 0:
            dims.append(dim)
        elif dim_values and str(dim) in dim_values:
            dims.append(int(dim_values[str(dim)]))
        else:
            dims.append(BATCH_SIZE if axis == 0 else FREE_DIM_SIZE)
    return dims


def synthetic_inputs(
    io_config: Mapping[str, Any], dim_values: Mapping[str, int] | None = None, seed: int = 0, owner: str | None = None
) -> dict[str, Any]:
    """Seeded feeds for every input of ``io_config`` (``input_names``, ``input_shapes``, ``input_types``).

    :param owner: what errors are about (the metric or pass asking).
    """
    import numpy as np

    for name, size in (dim_values or {}).items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise OliveError(f"dimension '{name}' must be a positive whole number, got {size!r}", owner=owner)
    rng = np.random.default_rng(seed)
    feeds: dict[str, Any] = {}
    for name, shape, dtype in zip(
        io_config["input_names"], io_config["input_shapes"], io_config["input_types"], strict=True
    ):
        kind = np.dtype(dtype)
        dims = concrete_shape(shape, dim_values)
        if kind.kind == "f":
            feeds[name] = rng.standard_normal(dims).astype(kind)
        elif kind.kind in "iub":
            feeds[name] = np.ones(dims, dtype=kind)
        else:
            raise OliveError(
                f"input '{name}' is {kind}, which synthetic inputs cannot make; give the metric or pass data "
                "(a data_config) for this model",
                owner=owner,
            )
    return feeds
