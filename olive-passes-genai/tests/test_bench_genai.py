"""benchmarks/bench_genai.py still runs (its --quick mode, the trained tiny decoder) and reports every row; no time
is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from olive.testing.processes import run_watched

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_genai.py"


def test_the_quick_benchmark_reports_every_row(tmp_path):
    out = tmp_path / "rows.json"
    result = run_watched(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out), "--workdir", str(tmp_path / "work")],
        stalled_after=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {r["row"]: r for r in json.loads(out.read_text())["rows"]}
    assert list(rows) == ["fp32", "builder CLI int4", "ModelBuilder int4", "k-quant int4", "guarded int4"]
    assert rows["fp32"]["decode_ratio"] == 1.0 and rows["fp32"]["top1_vs_fp32"] == 1.0
    for name in ("builder CLI int4", "ModelBuilder int4", "k-quant int4", "guarded int4"):
        assert rows[name]["size_mb"] < 0.5 * rows["fp32"]["size_mb"], rows[name]
        assert rows[name]["decode_ratio"] > 0 and rows[name]["peak_rss_mb"] > 0
    assert rows["guarded int4"]["top1_vs_fp32"] >= rows["k-quant int4"]["top1_vs_fp32"]
    # Our pass writes the builder command's own files, and is timed against them directly.
    assert rows["ModelBuilder int4"]["same_file_as_builder_cli"] is True
    assert rows["ModelBuilder int4"]["decode_ratio_to_builder_cli"] > 0
    # Each peak is its own build's: the weight-only pass never loads torch, the builder does (a peak that counted
    # the benchmark's own process, as wait4's ru_maxrss does for a forked child, made every row alike).
    assert rows["k-quant int4"]["peak_rss_mb"] < 0.8 * rows["fp32"]["peak_rss_mb"], rows
