"""Running a padded sample at its real length.

Datasets are stored padded to one length so they stack into arrays, but a batch-1 service runs each
input at its real length. For models whose numerics depend on every position (dynamic int8 takes an
activation's range over all of them, padding included), a padded sample can score differently from
the same text served alone; metrics and passes that compare outputs cut the padding first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from olive.exceptions import OliveError


def trim_right_padding(sample: Mapping[str, Any], mask_input: str, io_config: Mapping[str, Any]) -> dict[str, Any]:
    """One sample (batch 1) without its trailing mask-0 positions, on every input of the mask's length.

    Only right padding is cut, and only on the inputs whose sequence axis the model leaves free; a
    sample that is not batch 1, has no padding, or is padded on the left comes back unchanged.
    """
    import numpy as np

    if mask_input not in sample:
        return dict(sample)
    mask = np.asarray(sample[mask_input])
    if mask.ndim != 2 or mask.shape[0] != 1:
        return dict(sample)
    length = mask.shape[1]
    real = int(np.flatnonzero(mask[0])[-1]) + 1 if mask.any() else 0
    if real in (0, length) or not mask[0, :real].all():
        return dict(sample)
    shapes = dict(zip(io_config["input_names"], io_config["input_shapes"], strict=True))
    trimmed = {}
    for name, value in sample.items():
        shape = shapes.get(name, [])
        free = len(shape) > 1 and not (isinstance(shape[1], int) and shape[1] > 0)
        trimmed[name] = value[:, :real] if free and value.ndim > 1 and value.shape[1] == length else value
    return trimmed


def samples_at_real_length(
    batches: Iterable[Mapping[str, Any]], mask_input: str, io_config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Every sample of ``batches`` as a batch of one, its right padding cut (:func:`trim_right_padding`)."""
    samples = []
    for batch in batches:
        for index in range(len(next(iter(batch.values()))) if batch else 0):
            sample = {name: value[index : index + 1] for name, value in batch.items()}
            samples.append(trim_right_padding(sample, mask_input, io_config))
    return samples


def check_one_sample(feeds: Mapping[str, Any], mask_input: str, owner: str | None = None) -> None:
    """Refuse feeds that cannot be trimmed to one sample's real length: no ``mask_input``, or not batch 1."""
    mask = feeds.get(mask_input)
    if mask is None:
        raise OliveError(
            f"the data has no '{mask_input}' input to find the padding with; set mask_input to the model's "
            f"attention-mask input (the data has {', '.join(feeds)})",
            owner=owner,
        )
    if getattr(mask, "ndim", 0) != 2 or mask.shape[0] != 1:
        raise OliveError(
            f"each sample runs alone at its real length, so batches must hold one sample; got '{mask_input}' of "
            f"shape {list(getattr(mask, 'shape', []))}. Set the data config's dataloader_config.batch_size to 1",
            owner=owner,
        )
