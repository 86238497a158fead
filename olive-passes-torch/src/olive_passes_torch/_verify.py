"""The conversion check: the exported ONNX model against the PyTorch module it came from, on the same inputs.

Every output of every sample must satisfy ``|onnx - torch| <= atol + rtol * |torch|`` (numpy's
``allclose``); the record keeps the largest absolute difference and the per-sample cosine similarity of
each output, which is what the engine's agreement metric would report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from olive.measure import agreement_scores
from olive_passes_torch.io_config import IoConfig
from olive_passes_torch.torch_model import pick_outputs

if TYPE_CHECKING:
    import numpy as np
    import torch


@attrs.define
class _OutputStats:
    max_abs_diff: float = 0.0
    worst_excess: float = float("-inf")  # max of |diff| - (atol + rtol |ref|); > 0 fails
    cosine_min: float = 1.0
    cosine_sum: float = 0.0
    samples: int = 0

    def add(self, candidate: np.ndarray, reference: np.ndarray, atol: float, rtol: float) -> None:
        import numpy as np

        got = candidate.astype(np.float64)
        want = reference.astype(np.float64)
        # Equal values (infinities included) and NaN where PyTorch has NaN agree; any other NaN is a mismatch.
        agree = (got == want) | (np.isnan(got) & np.isnan(want))
        diff = np.where(agree, 0.0, np.abs(got - want))
        diff = np.where(np.isnan(diff), np.inf, diff)
        if diff.size:
            self.max_abs_diff = max(self.max_abs_diff, float(diff.max()))
            allowed = atol + rtol * np.abs(np.where(np.isfinite(want), want, 0.0))
            self.worst_excess = max(self.worst_excess, float((diff - allowed).max()))
        scores = agreement_scores(candidate, reference)
        self.cosine_min = min(self.cosine_min, scores["cosine_min"])
        self.cosine_sum += scores["cosine_mean"] * len(reference)
        self.samples += len(reference)

    def to_json(self) -> dict[str, float]:
        return {
            "max_abs_diff": self.max_abs_diff,
            "cosine_min": self.cosine_min,
            "cosine_mean": self.cosine_sum / self.samples if self.samples else 1.0,
        }


def torch_outputs(
    wrapper: torch.nn.Module, feeds: dict[str, np.ndarray], io: IoConfig, device: str
) -> list[np.ndarray]:
    """The wrapped module's outputs on ``feeds``, as float32/int numpy arrays."""
    import torch

    args = [torch.from_numpy(feeds[name]).to(device) for name in io.input_names]
    with torch.no_grad():
        outputs = pick_outputs(wrapper(*args), io.output_names)
    arrays = []
    for out in outputs:
        value = out.detach().cpu()
        if value.dtype in (torch.float16, torch.bfloat16):
            value = value.float()
        arrays.append(value.numpy())
    return arrays


def compare(
    wrapper: torch.nn.Module,
    session: Any,
    batches: Sequence[dict[str, np.ndarray]],
    io: IoConfig,
    atol: float,
    rtol: float,
    device: str = "cpu",
) -> dict[str, Any]:
    """Run both models on every batch; per output ``max_abs_diff``, ``cosine_min``, ``cosine_mean`` and whether
    all values are within tolerance."""
    import numpy as np

    session_inputs = [i.name for i in session.get_inputs()]
    stats = {name: _OutputStats() for name in io.output_names}
    for feeds in batches:
        reference = torch_outputs(wrapper, feeds, io, device)
        got = session.run(list(io.output_names), {name: feeds[name] for name in session_inputs})
        for name, candidate, expected in zip(io.output_names, got, reference, strict=True):
            candidate = np.asarray(candidate)
            if candidate.shape != expected.shape:
                stats[name].worst_excess = float("inf")
                stats[name].max_abs_diff = float("inf")
                continue
            if candidate.dtype in (np.float16,):
                candidate = candidate.astype(np.float32)
            stats[name].add(candidate, expected, atol, rtol)
    outputs = {name: s.to_json() for name, s in stats.items()}
    return {
        "passed": all(s.worst_excess <= 0 for s in stats.values()),
        "max_abs_diff": max(o["max_abs_diff"] for o in outputs.values()),
        "cosine_min": min(o["cosine_min"] for o in outputs.values()),
        "outputs": outputs,
    }
