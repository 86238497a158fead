"""The engine overhead benchmark runs in its quick mode and reports every number."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_engine_overhead.py"


def test_quick_benchmark_reports_numbers() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--json"], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["points"] == 8
    for key in ("direct_ms_per_call", "search_point_cold_ms", "cached_lookup_warm_ms", "fixed_per_run_ms"):
        assert report[key] > 0


def test_quick_parallel_benchmark_reports_each_executor() -> None:
    bench = BENCH.parent / "bench_parallel.py"
    proc = subprocess.run(
        [sys.executable, str(bench), "--quick", "--no-ray", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [(r["executor"], r["workers"]) for r in rows] == [("sequential", 1), ("process", 1), ("process", 2)]
    assert all(r["points"] == 4 and r["wall_s"] > 0 for r in rows)
