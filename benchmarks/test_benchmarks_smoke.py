"""The graph and parallel benchmarks still run (their --quick modes); no timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
