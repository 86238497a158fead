"""benchmarks/bench_openvino.py still runs (its --quick mode, a tiny BERT-like model) and reports every row; no
time is asserted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from olive.testing.processes import run_watched

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_openvino.py"


def test_the_quick_benchmark_reports_every_row(tmp_path):
    out = tmp_path / "rows.json"
    result = run_watched(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out), "--work-dir", str(tmp_path / "work")],
        stalled_after=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    rows = {r["row"]: r for r in report["rows"]}
    assert list(rows) == [
        "onnxruntime fp32",
        "OpenVINO IR, default precision",
        "OpenVINO IR, f32",
        "OpenVINO IR, bf16",
        "OpenVINO nncf int8",
        "OpenVINO nncf int8, output projections float",
        "OpenVINO nncf int8 weights",
    ]
    reference = rows["onnxruntime fp32"]
    assert reference["ratio_p50"] == 1.0 and reference["runtime"] == "CPUExecutionProvider"
    assert {r["runtime"] for name, r in rows.items() if name != "onnxruntime fp32"} == {"OpenVINO:CPU"}
    # The same threads for both runtimes; each pinned precision is the one the session reports.
    assert {r["threads"] for r in rows.values()} == {report["threads"]}
    assert rows["OpenVINO IR, f32"]["precision"] == "f32" and rows["OpenVINO IR, bf16"]["precision"] == "bf16"
    assert rows["OpenVINO IR, f32"]["cosine_min"] > 0.9999
    assert rows["OpenVINO nncf int8"]["size_mb"] < rows["OpenVINO IR, f32"]["size_mb"]
    for row in rows.values():
        assert row["ratio_p50"] > 0 and 0.9 < row["cosine_mean"] <= 1.0 + 1e-9, row
