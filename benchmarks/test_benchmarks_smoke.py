"""The benchmarks still run (their --quick modes) and report every number; no timing is asserted.

They run in the e2e environment (``tox -e e2e``), not in the packages' unit suites.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _run(script: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(HERE / script), "--quick", *args], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_graph_benchmark_runs_and_fusion_shrinks_the_graph(tmp_path):
    _run("bench_graph.py", "--json", str(tmp_path / "graph.json"))
    variants = {v["variant"]: v for v in json.loads((tmp_path / "graph.json").read_text())["variants"]}
    assert variants["OrtTransformersOptimization"]["nodes"] < variants["input model"]["nodes"]
    assert variants["OrtTransformersOptimization"]["max_abs_diff"] < 1e-4


def test_parallel_benchmark_runs_every_local_executor():
    rows = json.loads(_run("bench_parallel.py", "--no-ray", "--json"))
    assert [(r["executor"], r["workers"]) for r in rows] == [("sequential", 1), ("process", 1), ("process", 2)]
    assert all(r["points"] == 4 and r["wall_s"] > 0 for r in rows)


def test_engine_overhead_benchmark_reports_every_number():
    report = json.loads(_run("bench_engine_overhead.py", "--json").strip().splitlines()[-1])
    assert report["points"] == 8
    for key in ("direct_ms_per_call", "search_point_cold_ms", "cached_lookup_warm_ms", "fixed_per_run_ms"):
        assert report[key] > 0


def test_startup_benchmark_quick_mode(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("bench_startup", HERE / "bench_startup.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = bench.main(["--quick", "--plugins", "1", "2", "--repeats", "1"])
    lines = table.splitlines()
    assert lines[2] == (
        "| generated plugin distributions | passes listed | `python -c pass` | `olive --help` | `olive passes` |"
    )
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[4:]]
    assert [row[0] for row in rows] == ["1", "2"]
    assert int(rows[1][1]) == int(rows[0][1]) + 1  # one more generated pass is listed
    for row in rows:
        assert all(float(cell) > 0 for cell in row[2:])
    assert table in capsys.readouterr().out


def test_optimize_benchmark_judges_the_chosen_model_against_onnxruntimes_int8(tmp_path):
    _run("bench_optimize.py", "--json", str(tmp_path / "optimize.json"))
    result = json.loads((tmp_path / "optimize.json").read_text())
    assert set(result["rows"]) == {
        "fp32",
        "onnxruntime int8",
        "onnxruntime int8, another session (control)",
        "olive optimize (defaults)",
    }
    for row in result["rows"].values():
        assert 0 < row["cosine_min"] <= row["cosine_mean"] <= 1.0 + 1e-6
        assert row["ratio_to_ort_int8"] and all(r > 0 for r in row["ratio_to_ort_int8"])
    assert result["rows"]["onnxruntime int8"]["ratio_to_ort_int8"] == [1.0]
    assert result["optimize"]["candidates"] >= 1 and result["optimize"]["cold_s"] > 0
    assert result["quickstart"]["cold_s"] > 0 and result["quickstart"]["cosine_min"] > 0
