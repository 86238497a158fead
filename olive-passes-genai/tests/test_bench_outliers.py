"""benchmarks/bench_outliers.py still runs (its --quick mode, the outlier decoder) and reports every row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from olive.testing.processes import run_watched

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_outliers.py"


def test_the_quick_benchmark_reports_every_row(tmp_path):
    out = tmp_path / "rows.json"
    result = run_watched(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out), "--workdir", str(tmp_path / "work")],
        stalled_after=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {r["row"]: r for r in json.loads(out.read_text())["rows"]}
    assert list(rows) == [
        "fp32",
        "builder int4",
        "builder int8",
        "RTN int4",
        "k-quant int4",
        "scale migration + builder int4",
        "scale migration fp32",
        "scale migration + RTN int4",
    ]
    assert abs(rows["scale migration fp32"]["perplexity"] / rows["fp32"]["perplexity"] - 1) < 1e-3
    for name in ("builder int4", "RTN int4", "k-quant int4", "scale migration + builder int4"):
        assert rows[name]["size_mb"] < 0.5 * rows["fp32"]["size_mb"], rows[name]
    assert rows["scale migration + builder int4"]["perplexity"] < rows["builder int4"]["perplexity"], rows
    assert rows["scale migration + RTN int4"]["perplexity"] < rows["RTN int4"]["perplexity"], rows
