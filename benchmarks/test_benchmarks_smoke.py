"""The benchmarks still run (their --quick modes) and report every number; no timing is asserted.

They run in the e2e environment (``tox -e e2e``), not in the packages' unit suites.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from olive.testing.processes import run_watched

HERE = Path(__file__).parent


def _run(script: str, *args: str) -> str:
    # Bounded work (--quick), no bound on seconds: a busy machine is slow, not hung. Each benchmark prints a line
    # per step; ten silent minutes are a hang.
    result = run_watched([sys.executable, str(HERE / script), "--quick", *args], stalled_after=600)
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


def test_ranking_tolerance_benchmark_reports_every_metric_of_both_models():
    rows = json.loads(_run("bench_ranking_tolerance.py", "--json"))
    assert {(r["model"], r["metric"]) for r in rows} >= {
        ("input model", "latency-p50"),
        ("dynamic int8", "latency-ratio_p50"),
        ("dynamic int8", "agreement-cosine_mean"),
    }
    # Agreement is deterministic on CPU; the input model against itself is 1 by definition.
    by_key = {(r["model"], r["metric"]): r for r in rows}
    assert by_key[("dynamic int8", "agreement-cosine_mean")]["max_abs_diff"] == 0
    assert by_key[("input model", "latency-ratio_p50")]["median"] == 1.0


def test_scale_benchmark_checks_every_pass_and_measures_the_search(tmp_path):
    _run("bench_scale.py", "--json", str(tmp_path / "scale.json"), "--reruns")
    report = json.loads((tmp_path / "scale.json").read_text())
    rows = {r["pass"]: r for r in report["rows"]}
    bench = _load("bench_scale.py")
    assert set(rows) == {*bench.PASSES, bench.SEARCH_KEY}
    for key, (_, _, bound) in bench.PASSES.items():
        row = rows[key]
        # Every output was checked: loaded by onnxruntime, outputs compared with the float model's.
        assert row["check_cosine_mean"] >= bound
        assert row["bare_peak_rss"] > row["model_bytes"]  # the tree's peak includes the weights read
        assert row["run_peak_rss"] > 0 and row["run_pass_peak_rss"] > 0
    search = rows[bench.SEARCH_KEY]
    assert len(search["single_point_peak_rss"]) == search["search_points"] == 4
    assert search["search_vs_heaviest_point"] > 0
    assert report["reruns"]["search16_models"] >= 16
    assert report["reruns"]["help_peak_rss"] > 0


def test_scale_benchmark_measures_a_process_tree():
    bench = _load("bench_scale.py")
    # A parent that starts a child holding 200 MB: the tree's peak counts both processes.
    child = "import time; b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1.0)"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {child!r}])"
    result = bench.measure([sys.executable, "-c", parent], HERE, Path(bench.tempfile.mkdtemp()) / "log")
    assert result["returncode"] == 0
    assert result["peak_rss"] > 200 * 2**20


def _load(script: str):
    spec = importlib.util.spec_from_file_location(script.removesuffix(".py"), HERE / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def test_int8_kernel_benchmark_scores_both_weight_widths_on_this_cpu():
    from olive.hardware.cpu import describe_cpu
    from olive.measure.int8_kernel import int8_matmul_saturates

    report = json.loads(_run("bench_int8_kernel.py", "--json").strip().splitlines()[-1])
    assert report["cpu"] == describe_cpu() and report["default_reduce_range"] is int8_matmul_saturates()
    assert len(report["rows"]) == 2
    for row in report["rows"]:
        assert 0.9 < row["cosine_min_8bit"] <= 1.0 + 1e-6 and 0.9 < row["cosine_min_7bit"] <= 1.0 + 1e-6
        if report["saturates"]:
            # Where pairs saturate, 7-bit weights do better; where sums are exact, 8-bit ones do.
            assert row["cosine_min_7bit"] > row["cosine_min_8bit"]
        else:
            assert row["cosine_min_8bit"] > row["cosine_min_7bit"]


def test_quickstart_benchmark_reads_each_runs_winner_and_its_cached_rerun_chooses_it_again(tmp_path):
    from olive.hardware.cpu import describe_cpu

    _run("bench_quickstart.py", "--json", str(tmp_path / "quickstart.json"))
    report = json.loads((tmp_path / "quickstart.json").read_text())
    assert report["cpu"] == describe_cpu()
    fresh, cached = report["rows"]
    assert fresh["candidates"] > 1 and fresh["ratio_p50"] > 0 and fresh["ratio_spread"] >= 0
    assert "quantize:" in fresh["winner"] and fresh["cosine_mean"] > 0.99
    # Served from the cache, the rerun ranks the same measurements: the same winner and ties.
    assert (cached["winner"], cached["ratio_p50"], cached["tied"]) == (
        fresh["winner"],
        fresh["ratio_p50"],
        fresh["tied"],
    )
    assert report["winners"] == [fresh["winner"]]
