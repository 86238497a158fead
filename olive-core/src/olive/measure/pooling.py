"""Pooling: one vector per sample from a token-level output ``[batch, sequence, ...]``.

``"mean"`` averages over the sequence axis, weighted by an attention mask when one is given, as
sentence-embedding models do; ``"cls"`` takes the first token. ``None`` (or ``"none"``) leaves the output
as it is.
"""

from __future__ import annotations

from typing import Any

from olive.exceptions import OliveError, closest_match_hint

POOLINGS = ("mean", "cls")


def mean_pool(output: Any, mask: Any = None, output_name: str = "output", mask_name: str = "mask") -> Any:
    """Mean over axis 1 of a ``[batch, sequence, ...]`` output; positions where ``mask`` is 0 are left out.

    ``mask`` must be ``[batch, sequence]`` of that output; a sample whose mask is all zeros pools to zeros.
    Returns float64.
    """
    import numpy as np

    value = _token_level(output, "mean", output_name)
    if mask is None:
        return value.mean(axis=1)
    weights = np.asarray(mask, dtype=np.float64)
    if weights.shape != value.shape[:2]:
        raise OliveError(
            f"mask_input '{mask_name}' has shape {list(weights.shape)} but output '{output_name}' has "
            f"{list(value.shape)}; the mask must be [batch, sequence] of that output"
        )
    weights = weights.reshape(*weights.shape, *([1] * (value.ndim - 2)))
    return (value * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def first_token(output: Any, output_name: str = "output") -> Any:
    """The first position of a ``[batch, sequence, ...]`` output (the ``[CLS]`` token of BERT-like models)."""
    return _token_level(output, "cls", output_name)[:, 0]


def pool(
    output: Any, pooling: str | None, mask: Any = None, output_name: str = "output", mask_name: str = "mask"
) -> Any:
    """``output`` pooled with ``pooling`` (``"mean"``, ``"cls"``, or ``None``/``"none"`` for as it is), float64."""
    import numpy as np

    if pooling in (None, "none"):
        return np.asarray(output, dtype=np.float64)
    if pooling == "mean":
        return mean_pool(output, mask, output_name, mask_name)
    if pooling == "cls":
        return first_token(output, output_name)
    raise OliveError(
        f"pooling '{pooling}' is unknown{closest_match_hint(str(pooling), POOLINGS)}; use {', '.join(POOLINGS)} or none"
    )


def _token_level(output: Any, pooling: str, output_name: str) -> Any:
    import numpy as np

    value = np.asarray(output, dtype=np.float64)
    if value.ndim < 3:
        raise OliveError(
            f"pooling '{pooling}' needs outputs shaped [batch, sequence, ...], but output '{output_name}' has shape "
            f"{list(value.shape)}; set output_name to the token-level output or drop pooling"
        )
    return value
