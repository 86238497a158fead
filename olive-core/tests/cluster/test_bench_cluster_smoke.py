"""benchmarks/bench_cluster.py still runs (its --quick mode: small models, few points) and reports every number; no
timing is asserted. It runs here, where Ray, moto and root are, rather than in the e2e environment."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import skip_or_fail, unshare_reason

from olive.testing.processes import run_watched

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_cluster.py"


def test_cluster_benchmark_reports_every_row() -> None:
    reason = unshare_reason()
    if reason is not None:
        skip_or_fail(reason)
    result = run_watched([sys.executable, str(BENCH), "--quick", "--json"], stalled_after=600)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    rows = {(r["workload"], r["row"]): r for r in report["rows"]}
    for workload in ("quickstart", "large"):
        for row in ("process x1", "ray 1 node", "process x2", "ray 2 nodes", "remote upload", "second machine"):
            assert (workload, row) in rows, (workload, row)
        assert rows[(workload, "second machine")]["pass_runs"] == 0
        assert rows[(workload, "second machine")]["storage_bytes_down"] > 0
        # Where Ray ran each trial is its scheduler's choice: bytes back are measured, not promised here
        # (test_cluster.py asserts that the second node's results land in the engine's cache).
        assert rows[(workload, "ray 2 nodes")]["ray_bytes_back"] >= 0
        assert "overhead_share_of_trial" in rows[(workload, "ray 2 nodes")]
        assert len({r["best"] for (w, _), r in rows.items() if w == workload}) == 1
    assert report["cpu"]
