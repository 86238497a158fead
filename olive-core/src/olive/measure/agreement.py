"""How closely one model's outputs follow another's: the agreement scores every part of Olive reports.

The evaluator's ``agreement`` metric, the accuracy-guarded quantization passes and the benchmarks all call
:func:`agreement_scores`, so "cosine 0.99" means the same number wherever it is shown.
"""

from __future__ import annotations

from typing import Any

from olive.exceptions import OliveError

#: Every agreement score and whether a higher value is better.
AGREEMENT_SCORES: dict[str, bool] = {"cosine_mean": True, "cosine_min": True, "max_abs_diff": False, "top1": True}


def cosine_similarities(candidate: Any, reference: Any) -> Any:
    """Cosine similarity of each sample (first axis) of ``candidate`` with the same sample of ``reference``.

    Each sample is flattened into one vector. Identical vectors score exactly 1.0 (not 1 less a rounding
    error), two zero vectors agree fully (1.0), a zero vector against a non-zero one scores 0.0, and every
    value is clipped to [-1, 1]. Returns a float64 array with one value per sample.

    ``candidate`` and ``reference`` are arrays of one shape, or lists of such arrays (batches, paired in
    order), whose shapes after the sample axis may differ from batch to batch (samples at their real
    length).
    """
    import numpy as np

    pairs = _batch_pairs(candidate, reference)
    return np.concatenate([_cosines(a, b) for a, b in pairs]) if pairs else np.zeros(0)


def agreement_scores(candidate: Any, reference: Any) -> dict[str, float]:
    """The agreement of ``candidate`` outputs with ``reference`` outputs (samples on the first axis).

    - ``cosine_mean`` / ``cosine_min``: mean and worst sample of :func:`cosine_similarities`.
    - ``max_abs_diff``: the largest elementwise absolute difference (0.0 for empty outputs).
    - ``top1``: the share of positions whose argmax over the last axis agrees (for outputs with a last axis
      of one element, or one dimension only: the share of elements whose sign agrees).

    Both are arrays of one shape, or lists of batches as :func:`cosine_similarities` takes them. Raises
    :class:`~olive.exceptions.OliveError` when shapes differ or there is no sample.
    """
    import numpy as np

    pairs = _batch_pairs(candidate, reference)
    if sum(len(a) for a, _ in pairs) == 0:
        raise OliveError("no sample to compare (both outputs are empty)", owner="agreement_scores")
    cosine = np.concatenate([_cosines(a, b) for a, b in pairs])
    matches = positions = 0
    for a, b in pairs:
        by_class = a.ndim >= 2 and a.shape[-1] > 1
        same = a.argmax(axis=-1) == b.argmax(axis=-1) if by_class else np.sign(a) == np.sign(b)
        matches += int(same.sum())
        positions += same.size
    return {
        "cosine_mean": float(cosine.mean()),
        "cosine_min": float(cosine.min()),
        "max_abs_diff": max((float(np.max(np.abs(a - b))) for a, b in pairs if a.size), default=0.0),
        "top1": matches / positions if positions else 1.0,
    }


def _cosines(a: Any, b: Any) -> Any:
    import numpy as np

    flat_a = a.reshape(len(a), -1)
    flat_b = b.reshape(len(b), -1)
    norm_a = np.linalg.norm(flat_a, axis=1)
    norm_b = np.linalg.norm(flat_b, axis=1)
    denom = norm_a * norm_b
    dot = np.sum(flat_a * flat_b, axis=1)
    both_zero = (norm_a == 0) & (norm_b == 0)
    cosine = np.where(denom > 0, dot / np.where(denom > 0, denom, 1.0), np.where(both_zero, 1.0, 0.0))
    return np.where(np.all(flat_a == flat_b, axis=1), 1.0, np.clip(cosine, -1.0, 1.0))


def _batch_pairs(candidate: Any, reference: Any) -> list[tuple[Any, Any]]:
    """``(candidate batch, reference batch)`` float64 pairs of one shape each."""
    import numpy as np

    batched = isinstance(candidate, list | tuple)
    if batched != isinstance(reference, list | tuple):
        raise OliveError("compare an array with an array, or a list of batches with a list of batches")
    if not batched:
        candidate, reference = [candidate], [reference]
    if len(candidate) != len(reference):
        raise OliveError(f"{len(candidate)} batches of outputs against {len(reference)} of the reference")
    pairs = []
    for a, b in zip(candidate, reference, strict=True):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            raise OliveError(
                f"the outputs compared have shapes {list(a.shape)} and {list(b.shape)}; agreement compares "
                "outputs of one shape, samples on the first axis"
            )
        pairs.append((a.reshape(1), b.reshape(1)) if a.ndim == 0 else (a, b))
    return pairs
