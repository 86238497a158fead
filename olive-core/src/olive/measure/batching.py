"""Batches as a server makes them: held-out samples shuffled (seeded) and cut into batches of the served size.

A model whose numerics depend on the whole batch (dynamic int8 takes each activation's range over every sample
and position of a run) gives a sample another output beside other samples than alone. A figure measured one
sample at a time says nothing about a service that batches requests, so agreement is measured at the batch
sizes the model is served with (:func:`served_batches`), and each figure is the worst over them
(:func:`worst_over_batch_sizes`).

- **Batch-mates by chance, the same chance every time**: the samples are shuffled with ``SERVE_SEED`` before
  they are cut, as requests arrive in no particular order; the same samples always give the same batches, so
  a rerun is served from the cache and every candidate meets the same batch-mates.
- **Padded as the data is**: samples keep the length they are stored at (a tokenizer's ``max_length``
  padding); samples of different shapes never share a batch. At batch size 1 with a mask input, each sample
  runs at its real length (:func:`~olive.measure.padding.trim_right_padding`), as a one-at-a-time service
  runs it.
- The last batch holds what is left (fewer samples than the batch size), as a server's last batch does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from olive.measure.agreement import AGREEMENT_SCORES
from olive.measure.padding import trim_right_padding

__all__ = ["SERVE_SEED", "rebatch", "served_batches", "worst_over_batch_sizes"]

SERVE_SEED = 0


def _samples(batches: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    samples = []
    for batch in batches:
        for index in range(len(next(iter(batch.values()))) if batch else 0):
            samples.append({name: value[index : index + 1] for name, value in batch.items()})
    return samples


def rebatch(batches: Iterable[Mapping[str, Any]], batch_size: int) -> list[dict[str, Any]]:
    """Re-cut the samples of ``batches``, in order, into batches of ``batch_size``; samples of different shapes
    never share one."""
    import numpy as np

    rebatched: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if pending:
            rebatched.append({k: np.concatenate([p[k] for p in pending]) for k in pending[0]})
            pending.clear()

    for sample in _samples(batches):
        if pending and any(pending[0][k].shape[1:] != sample[k].shape[1:] for k in sample):
            flush()
        pending.append(sample)
        if len(pending) == batch_size:
            flush()
    flush()
    return rebatched


def served_batches(
    batches: Iterable[Mapping[str, Any]],
    batch_size: int,
    mask_input: str | None = None,
    io_config: Mapping[str, Any] | None = None,
    seed: int = SERVE_SEED,
) -> list[dict[str, Any]]:
    """The samples of ``batches`` shuffled with ``seed`` and batched ``batch_size`` at a time (see the module
    docstring). With ``batch_size`` 1, ``mask_input`` and ``io_config``, each sample runs at its real length."""
    import numpy as np

    samples = _samples(batches)
    order = np.random.default_rng(seed).permutation(len(samples))
    shuffled = [samples[i] for i in order]
    # Samples of one shape are batched together, in shuffled order; shapes in the order they first appear.
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for sample in shuffled:
        groups.setdefault(tuple((k, v.shape[1:]) for k, v in sample.items()), []).append(sample)
    result = [batch for group in groups.values() for batch in rebatch(group, batch_size)]
    if batch_size == 1 and mask_input and io_config is not None:
        result = [trim_right_padding(sample, mask_input, io_config) for sample in result]
    return result


def worst_over_batch_sizes(by_size: Mapping[int, Mapping[str, float]]) -> tuple[dict[str, float], dict[str, int]]:
    """The worst of each agreement score over the batch sizes measured, and the batch size it was measured at
    (the smallest of equal ones): ``({score: value}, {score: batch size})``."""
    worst: dict[str, float] = {}
    at: dict[str, int] = {}
    for size in sorted(by_size):
        for name, value in by_size[size].items():
            higher = AGREEMENT_SCORES.get(name, True)
            if name not in worst or (value < worst[name] if higher else value > worst[name]):
                worst[name], at[name] = float(value), size
    return worst, at
