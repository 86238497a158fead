"""Winners that only timing noise separates: measured spread on paired ratios, ties, and the same winner twice."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from engine_support import agreement_metric, make_registry, searched, with_evaluator

import olive
from olive.evaluator.goals import EXACT, Tolerance, indistinguishable, rank_candidates, why_chosen
from olive.evaluator.result import MetricResult, SubMetricResult, recorded_noise
from olive.hardware.accelerator import AcceleratorSpec
from olive.measure import timing
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import model_proto_to_olive_model
from olive.plugins.registry import use_registry
from olive.report.data import load_report_data
from olive.search.search_parameter import Categorical
from olive.testing.models import mlp_model, save_model


def _rounds(rng: np.random.Generator, count: int, bursty: bool) -> list[np.ndarray]:
    # Ten runs per round around a ratio of 0.5; a bursty machine slows whole rounds of the model's runs.
    slow = rng.uniform(1.0, 1.8, count) if bursty else np.ones(count)
    return [0.5 * s * (1 + 0.01 * rng.standard_normal(10)) for s in slow]


def test_ratio_spread_grows_with_the_rounds_disagreement_and_is_reproducible():
    rng = np.random.default_rng(1)
    quiet, bursty = _rounds(rng, 10, False), _rounds(rng, 10, True)
    quiet_spread, bursty_spread = timing.ratio_spread(quiet), timing.ratio_spread(bursty)
    assert set(quiet_spread) == {"avg", "min", "max", "p50", "p75", "p90", "p95", "p99", "p999"}
    assert 0 < quiet_spread["p50"] < 0.01 < bursty_spread["p50"] < 0.5
    assert timing.ratio_spread(bursty) == bursty_spread
    # Throughput reports the inverse ratio; its spread is that of the inverse.
    inverse = timing.ratio_spread(bursty, lambda r: 1.0 / r)
    assert inverse["p50"] == pytest.approx(bursty_spread["p50"], rel=0.5)
    # One round: nothing to resample, so nothing measured.
    assert timing.ratio_spread(bursty[:1]) == {}
    rounds = [[[2.0, 2.0, 2.0], [4.0, 4.0, 4.0]], [[3.0, 3.0, 3.0], [4.0, 4.0, 4.0]]]
    assert [r.tolist() for r in timing.ratios_by_round(rounds)] == [[0.5] * 3, [0.75] * 3]


def _ratio_then_score(ratio: float, noise: float, score: float = 1.0) -> MetricResult:
    return MetricResult(
        {
            "latency-ratio_p50": SubMetricResult(ratio, 1, False, noise),
            "agree-cosine_mean": SubMetricResult(score, 2, True),
        }
    )


KEYS = ["latency-ratio_p50", "agree-cosine_mean"]
TOLERANCES = {"latency-ratio_p50": Tolerance(0.05, relative=True), "agree-cosine_mean": Tolerance(1e-4)}


def test_measured_noise_widens_a_relative_tolerance_so_the_next_priority_decides():
    # 8% apart: past the 5% tolerance, but within what the two measurements' spreads allow (6% each).
    noisy = {"fast": _ratio_then_score(0.50, 0.06, 0.990), "slow": _ratio_then_score(0.54, 0.06, 0.999)}
    assert rank_candidates(noisy, KEYS, tolerances=TOLERANCES) == ["slow", "fast"]
    # Measured tightly, the same 8% is a real difference: the faster wins.
    tight = {"fast": _ratio_then_score(0.50, 0.01, 0.990), "slow": _ratio_then_score(0.54, 0.01, 0.999)}
    assert rank_candidates(tight, KEYS, tolerances=TOLERANCES) == ["fast", "slow"]
    # Tolerance 0 asks for Microsoft Olive's exact order, whatever the noise.
    exact = {key: EXACT for key in KEYS}
    assert rank_candidates(noisy, KEYS, tolerances=exact) == ["fast", "slow"]


def test_a_tie_on_every_objective_goes_to_the_candidate_tried_first():
    tied = {"first": _ratio_then_score(0.52, 0.01), "second": _ratio_then_score(0.50, 0.01)}
    assert rank_candidates(tied, KEYS, tolerances=TOLERANCES) == ["first", "second"]
    assert rank_candidates(dict(reversed(tied.items())), KEYS, tolerances=TOLERANCES) == ["second", "first"]
    assert indistinguishable(tied, "first", KEYS, TOLERANCES) == ["second"]
    apart = {"first": _ratio_then_score(0.60, 0.01), "second": _ratio_then_score(0.50, 0.01)}
    assert rank_candidates(apart, KEYS, tolerances=TOLERANCES) == ["second", "first"]
    assert indistinguishable(apart, "second", KEYS, TOLERANCES) == []


def test_noise_read_back_from_a_file_is_checked():
    stored = {"latency-ratio_p50": {"value": 0.5, "priority": 1, "higher_is_better": False, "noise": 0.03}}
    assert MetricResult.from_json(stored)["latency-ratio_p50"].noise == 0.03
    assert recorded_noise({"ratio_noise": {"ratio_p50": 0.2}}, "ratio_p50") == 0.2
    assert recorded_noise({"ratio_noise": [0.2]}, "ratio_p50") == 0.0
    assert recorded_noise("text", "ratio_p50") == 0.0
    # A spread past 100% is what a loaded machine gives: kept, so the ranking knows it can tell nothing apart.
    assert recorded_noise({"ratio_noise": {"ratio_p50": 1.7}}, "ratio_p50") == 1.7
    for bad in (-1, float("nan"), float("inf"), 1e9, "0.1", True, None):
        tampered = {"latency-ratio_p50": {**stored["latency-ratio_p50"], "noise": bad}}
        assert MetricResult.from_json(tampered)["latency-ratio_p50"].noise == 0.0


class LabelledCopy(Pass):
    """The input model under another label (its doc string): another file, the same computation."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {"label": PassConfigParam(type_=int, default_value=0, search_defaults=Categorical([0, 1, 2, 3]))}

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        proto = model.load_model()
        proto.doc_string = f"copy {config.label}"
        return model_proto_to_olive_model(proto, output_model_path, config)


def _copies_search(tmp_path: Path, name: str) -> dict:
    # Two candidates that compute exactly what the input model does (about a millisecond a run, so that a run is
    # more than the session's overhead): only timing noise separates their latencies.
    model = save_model(mlp_model(in_features=512, hidden=2048), tmp_path / "input").model_path
    data = tmp_path / "calib.npz"
    np.savez(data, input=np.random.default_rng(0).standard_normal((8, 512)).astype(np.float32))
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": model},
        "passes": {"same": {"type": "LabelledCopy", "label": searched(0, 1)}},
        "search_strategy": {"execution_order": "joint", "sampler": "sequential"},
        "cache_dir": str(tmp_path / f"cache-{name}"),
        "output_dir": str(tmp_path / f"out-{name}"),
    }
    latency = {
        "name": "latency",
        "type": "latency",
        "data_config": "calib",
        "sub_types": [{"name": "ratio_p50", "priority": 1}],
        "warmup_num": 5,
        "repeat_test_num": 50,
    }
    return with_evaluator(workflow, latency, agreement_metric(priority=2), data=data)


def test_candidates_only_noise_separates_tie_and_the_first_tried_wins_or_the_faster_wins_past_the_noise(
    tmp_path: Path,
):
    registry = make_registry()
    registry.register(LabelledCopy, name="LabelledCopy")
    with use_registry(registry):
        output = olive.run(_copies_search(tmp_path, "run"))
    first, second = (n for n in output.footprint if n.is_candidate)
    ratio, spread = {}, {}
    for node in (first, second):
        # Each timed against the input model in alternating rounds: a model's ratio to itself, with a spread.
        ratio[node.model_id] = node.metric_values()["latency-ratio_p50"]
        spread[node.model_id] = node.metrics["latency-ratio_p50"]["noise"]
        assert 0.5 < ratio[node.model_id] < 2.0 and spread[node.model_id] > 0
        assert node.metric_values()["agree-cosine_mean"] == pytest.approx(1.0, abs=1e-6)
    faster = min(ratio, key=ratio.get)
    allowed = max(0.05, math.hypot(*spread.values())) * ratio[faster]
    footprint = json.loads((output.output_dir / "footprint.json").read_text())
    note = load_report_data(output.output_dir).tie_note
    if abs(ratio[first.model_id] - ratio[second.model_id]) <= allowed:
        # The usual case: the copies tie on latency and on agreement, so the first tried wins, whichever copy the
        # clock favoured, and the output says so.
        assert output.best.model_id == first.model_id
        assert output.tied_model_ids == footprint["tied_model_ids"] == [second.model_id]
        assert note is not None and "chosen as the first tried" in note and second.model_id in note
    else:
        # Between two evaluations a loaded machine can drift past the rounds' own spread: then the faster wins,
        # and nothing claims a tie.
        assert output.best.model_id == faster
        assert output.tied_model_ids == footprint["tied_model_ids"] == [] and note is None


def _latency_then_size(ratio: float, noise: float, size: float) -> MetricResult:
    return MetricResult(
        {
            "latency-ratio_p50": SubMetricResult(ratio, 1, False, noise),
            "size-bytes": SubMetricResult(size, 2, False),
        }
    )


def test_why_chosen_says_which_objective_decided_with_the_digits_that_differ():
    tolerances = {"latency-ratio_p50": Tolerance(0.05, relative=True), "size-bytes": EXACT}
    keys = ["latency-ratio_p50", "size-bytes"]
    # 18% apart on latency but each measured to 22%: a tie; then 80 bytes in a megabyte decide.
    results = {"small": _latency_then_size(0.60, 0.22, 991_120), "big": _latency_then_size(0.51, 0.22, 991_200)}
    assert rank_candidates(results, keys, tolerances=tolerances)[0] == "small"
    because = why_chosen(results, "small", keys, tolerances)
    assert because is not None
    assert because.startswith("chosen over big: tied on latency-ratio_p50 (0.6 against 0.51")
    assert "timed rounds' spread of 31%" in because
    assert "size-bytes decided (991,120 against 991,200)" in because
    # Latency told apart: it decides, and size is not mentioned.
    apart = {"fast": _latency_then_size(0.40, 0.01, 991_200), "slow": _latency_then_size(0.60, 0.01, 991_120)}
    because = why_chosen(apart, "fast", keys, tolerances)
    assert because == "chosen over slow: latency-ratio_p50 decided (0.4 against 0.6)"
    # One candidate: nothing to say.
    assert why_chosen({"only": results["small"]}, "only", keys, tolerances) is None
