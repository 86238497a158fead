"""Two roles for data: the samples a workflow fits on and the samples it is judged on.

Passes fit on data (calibration, sensitivity, an accuracy guard's own checks); metrics and goals judge the
result. A result judged on the samples it was fit on measures the fit, not the model: a guard that keeps in
float exactly the nodes that fix its worst calibration sample reports that sample's score, not the score of
the next one. So when a workflow names one data config for both roles, the engine splits it:

- **deterministic**: the same samples always land in the same part (seed ``SPLIT_SEED``), so a rerun is
  served from the cache and two machines agree;
- **stratified by sequence length** where the samples have an attention mask (an input whose name holds
  ``mask``): the samples are ordered by their real length and each consecutive pair is dealt one to each
  part, so short and long sentences are judged alike;
- **half and half**: the fitting part takes the odd one out;
- **at least** ``MIN_SAMPLES_PER_ROLE`` samples in each part, or a clear error: a worst-sample keep over
  fewer samples says little.

``"split": false`` on the data config opts out (both roles see every sample; results then measure the fit).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from olive.data.components import normalize_batch

__all__ = [
    "FIT",
    "JUDGE",
    "MIN_SAMPLES_PER_ROLE",
    "ROLES",
    "SPLIT_RULE",
    "SPLIT_SEED",
    "SampleSubset",
    "TooFewSamplesError",
    "sample_lengths",
    "shared_data_too_small",
    "split_indices",
    "too_few_samples",
]

FIT = "fit"
JUDGE = "judge"
ROLES = (FIT, JUDGE)
SPLIT_SEED = 0
MIN_SAMPLES_PER_ROLE = 8
SPLIT_RULE = (
    f"half to fit (passes), half to judge (metrics and goals): samples ordered by real length (their attention "
    f"mask, where they have one) and each consecutive pair dealt one to each part, seed {SPLIT_SEED}; at least "
    f"{MIN_SAMPLES_PER_ROLE} samples in each part"
)


class TooFewSamplesError(ValueError):
    """A data config used to fit and to judge holds too few samples to give each role its own."""


def split_indices(lengths: Sequence[int], seed: int = SPLIT_SEED) -> tuple[list[int], list[int]]:
    """``(fit, judge)`` sample indices, each in ascending order, for samples of these real lengths.

    Raises :class:`TooFewSamplesError` below ``2 * MIN_SAMPLES_PER_ROLE`` samples.
    """
    count = len(lengths)
    if count < 2 * MIN_SAMPLES_PER_ROLE:
        raise TooFewSamplesError(too_few_samples(count))
    rng = random.Random(seed)
    # Ties in length are broken at random (seeded), so that equal-length samples do not split by position.
    tiebreak = [rng.random() for _ in range(count)]
    order = sorted(range(count), key=lambda i: (lengths[i], tiebreak[i]))
    fit: list[int] = []
    judge: list[int] = []
    for start in range(0, count, 2):
        pair = order[start : start + 2]
        if len(pair) == 2 and rng.random() < 0.5:
            pair.reverse()
        fit.append(pair[0])
        judge.extend(pair[1:])
    return sorted(fit), sorted(judge)


def too_few_samples(count: int) -> str:
    """Why ``count`` samples cannot be split."""
    return (
        f"{count} sample(s), too few to split into a part to fit on and a part to judge on (at least "
        f"{2 * MIN_SAMPLES_PER_ROLE}: {MIN_SAMPLES_PER_ROLE} each)"
    )


def shared_data_too_small(why: str) -> str:
    """The message for a data config that passes and metrics share and that cannot be split (``why``: see
    :func:`too_few_samples`), with the three ways out."""
    return (
        f"passes fit on it and metrics judge on it, and it holds {why}; give more samples, give the metrics a data "
        'config of their own (olive optimize: --validation-data FILE), or set "split": false to fit and judge on the '
        "same samples (the results then measure the fit)"
    )


def sample_lengths(dataset: Any) -> list[int]:
    """Each sample's real length: the nonzero count of its attention mask, or 1 for every sample when the
    samples hold no mask (then the split is a seeded shuffle)."""
    import numpy as np

    lengths = []
    for index in range(len(dataset)):
        inputs, _ = normalize_batch(dataset[index])
        mask = _mask_of(inputs)
        lengths.append(1 if mask is None else int(np.count_nonzero(mask)))
    return lengths


def _mask_of(inputs: dict[str, Any]) -> Any:
    names = sorted(inputs, key=lambda name: (name != "attention_mask", name))
    return next((inputs[name] for name in names if "mask" in name.lower()), None)


class SampleSubset:
    """The samples of ``dataset`` at ``indices``, as a dataset of its own (length and indexing)."""

    def __init__(self, dataset: Any, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = list(indices)
        # A dataset of ready-made batches stays one: its items are batches, and so are the subset's.
        self.is_batched = bool(getattr(dataset, "is_batched", False))

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]
