"""The MiniLM benchmark harness runs end to end on a tiny model (``--quick``); no timing is asserted.

The real benchmark (PyTorch export of all-MiniLM-L6-v2, 200 timed runs per model) is a script, not a
test: ``python benchmarks/minilm/run.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

from olive.testing.processes import run_watched

HERE = Path(__file__).resolve().parent
RUN = HERE / "minilm" / "run.py"


def _harness_module(name: str):
    spec = importlib.util.spec_from_file_location(f"minilm_{name}", HERE / "minilm" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# Every row the harness defines, in its order (rows.py imports nothing else of the harness).
ROW_KEYS = list(_harness_module("rows").ROW_KEYS)
# Rows whose last pass is OnnxAccuracyGuardedQuantization; all but the unfused one optimize the graph first.
GUARDED_KEYS = ["guarded", "guarded-margin", "guarded-unfused", "sens+guarded"]


def _run_quick(work_dir: Path, extra_env: dict[str, str] | None = None, *args: str) -> list[dict]:
    env = {**os.environ, **(extra_env or {})}
    # Bounded work (--quick); a hang is ten minutes without output or a file written under the work folder.
    done = run_watched(
        [sys.executable, str(RUN), "--quick", "--work-dir", str(work_dir), *args],
        env=env,
        stalled_after=600,
        watch=[work_dir],
    )
    assert done.returncode == 0, f"run.py failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return json.loads((work_dir / "results.json").read_text())


def _installed(distribution: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(distribution)
    except PackageNotFoundError:
        return False
    return True


def test_sentence_sets_are_disjoint_and_large_enough():
    module = _harness_module("sentences")
    assert len(module.EVALUATION) >= 64
    assert len(module.CALIBRATION) >= 32
    assert not set(module.EVALUATION) & set(module.CALIBRATION)


def test_quick_run_measures_every_available_row(tmp_path):
    rows = {row["key"]: row for row in _run_quick(tmp_path)}
    assert list(rows) == ROW_KEYS
    assert {"fp32", "opt", *GUARDED_KEYS, "4bit", "search", "guarded-budget"} <= set(ROW_KEYS)

    fp32 = rows["fp32"]
    assert fp32["status"] == "ok"
    # The fp32 model against its own outputs: identical up to float rounding.
    assert fp32["cosine_mean"] == pytest.approx(1.0, abs=1e-5)
    assert fp32["num_sentences"] == 8
    assert fp32["latency_runs"] >= 8
    assert 0 < fp32["latency_p50_ms"] <= fp32["latency_p90_ms"]

    for key, row in rows.items():
        assert row["status"] in ("ok", "not available"), f"row {key}: {row['status']}: {row['note']}"
        if row["status"] == "ok":
            assert -1.0 <= row["cosine_min"] <= row["cosine_mean"] <= 1.0 + 1e-6, key
            assert row["size_bytes"] > 0, key

    if _installed("olive-passes-quant"):
        for key in ("dyn-tensor", "dyn", "static", "4bit"):
            assert rows[key]["status"] == "ok", rows[key]["note"]
            # Quantized weights must actually shrink the model and change (but not wreck) its outputs.
            assert rows[key]["size_bytes"] < 0.7 * fp32["size_bytes"], key
            assert 0.9 < rows[key]["cosine_mean"] < 1.0, key
    if _installed("olive-passes-graph"):
        assert rows["opt"]["status"] == "ok", rows["opt"]["note"]
        assert rows["opt"]["cosine_min"] > 0.9999
    if _installed("olive-passes-quant") and _installed("olive-passes-graph"):
        _check_budget_search(rows["guarded-budget"], tmp_path)

    table = (tmp_path / "results.md").read_text()
    assert "python benchmarks/minilm/run.py --quick" in table
    assert "| fp32 (exported) |" in table
    assert "searched workflow" in table


@pytest.mark.skipif(not _installed("olive-passes-quant"), reason="the guarded rows need olive-passes-quant")
def test_quick_run_records_what_the_accuracy_guard_decided(tmp_path):
    rows = {row["key"]: row for row in _run_quick(tmp_path, None, "--no-search")}
    fp32 = rows["fp32"]
    with_graph = _installed("olive-passes-graph")
    for key in GUARDED_KEYS:
        row = rows[key]
        if key != "guarded-unfused" and not with_graph:
            assert row["status"] == "not available", key
            continue
        assert row["status"] == "ok", f"{key}: {row['note']}"
        assert "OnnxAccuracyGuardedQuantization(" in row["note"], key
        guard = row["guard"]
        # The guard scored the 16 calibration samples (the rows judge on held-out sentences of their own), met its
        # target there, and quantized for real.
        assert guard["target_met"] is True, key
        assert guard["num_samples"] == 16, key
        assert guard["achieved"]["cosine_mean"] >= 0.99, key
        assert guard["achieved"]["cosine_min"] >= guard["targets"][1]["value"], key
        assert len(guard["fp32_nodes"]) < guard["candidates"], key
        assert row["size_bytes"] < 0.7 * fp32["size_bytes"], key
        assert 0.99 <= row["cosine_min"] <= row["cosine_mean"] <= 1.0 + 1e-6, key
    if with_graph:
        # Fused attention leaves fewer weight nodes to quantize than the unfused graph has.
        assert rows["guarded"]["guard"]["candidates"] < rows["guarded-unfused"]["guard"]["candidates"]
    table = (tmp_path / "results.md").read_text()
    assert "## Accuracy-guarded rows" in table
    assert "| `guarded-unfused` | cosine_mean>=0.99 & cosine_min>=0.995 |" in table


@pytest.mark.skipif(not _installed("olive-passes-quant"), reason="needs olive-passes-quant installed to disable it")
def test_missing_pass_distribution_makes_rows_not_available(tmp_path):
    rows = {row["key"]: row for row in _run_quick(tmp_path, {"OLIVE_DISABLE_PLUGINS": "olive-passes-quant"})}
    assert rows["fp32"]["status"] == "ok"
    for key in ("dyn-tensor", "dyn", "static", "opt+dyn", *GUARDED_KEYS, "4bit", "search", "guarded-budget"):
        assert rows[key]["status"] == "not available", key
    assert "OnnxDynamicQuantization" in rows["dyn"]["note"]
    table = (tmp_path / "results.md").read_text()
    assert "| `dyn` | dynamic int8, per-channel (olive-passes-quant defaults) | | | | | | | | not available:" in table


def _check_budget_search(row: dict, work_dir: Path) -> None:
    """The guard-budget row: one sensitivity analysis, one guard per searched target, the best one kept."""
    assert row["status"] == "ok", row["note"]
    assert "OnnxSensitivityAnalysis → OnnxAccuracyGuardedQuantization(target_value=" in row["note"]
    # No guard measures sensitivity again: each re-ranks the analysis' table (or needs no ranking at all).
    assert row["guard"]["ranking"] in ("reused from the input model's quantization_sensitivity", "not needed")
    workflow = json.loads((work_dir / "guard-budget-workflow.json").read_text())
    latency = workflow["evaluators"]["common"]["metrics"][0]
    # The budget is on latency relative to the exported model, timed in alternating rounds with it.
    assert latency["sub_types"][0] == {"name": "ratio_p50", "goal": {"type": "threshold", "value": 3.0}}
    searched = workflow["passes"]["quantization"]["target_value"]["support"]
    footprint = json.loads((work_dir / "guard-budget-output" / "footprint.json").read_text())
    nodes = footprint["nodes"]
    assert sum(n["pass_name"] == "OnnxSensitivityAnalysis" for n in nodes) == 1
    guards = [n for n in nodes if n["pass_name"] == "OnnxAccuracyGuardedQuantization"]
    assert sorted(n["config"]["target_value"] for n in guards) == sorted(searched)
    assert all(n["metrics"]["latency-ratio_p50"]["value"] > 0 for n in guards if n["status"] == "ok")
    # The objective is the worst-sample agreement: the kept model has the best among those meeting the goals.
    best = next(n for n in guards if n["model_id"] == footprint["best_model_id"])
    eligible = [n for n in guards if n["status"] == "ok" and n["meets_goals"]]
    assert best["meets_goals"]
    key = "agreement-cosine_min"
    assert best["metrics"][key]["value"] == max(n["metrics"][key]["value"] for n in eligible)
