"""benchmarks/bench_adapters.py still runs (its --quick mode, a tiny decoder) and reports its row; no time is
asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from olive.testing.processes import run_watched

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_adapters.py"


def test_the_quick_benchmark_reports_its_row(tmp_path):
    out = tmp_path / "row.json"
    result = run_watched(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out), "--workdir", str(tmp_path / "work")],
        stalled_after=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (row,) = json.loads(out.read_text())["rows"]
    assert row["tokens_equal_pytorch_merged"] is True
    for key in ("ratio_no_adapter_vs_plain", "ratio_active_vs_no_adapter", "ratio_active_vs_plain"):
        assert row[key] > 0, row
    assert 0 < row["adapter_file_mb"] < 1 and row["adapter_load_ms"] >= 0
