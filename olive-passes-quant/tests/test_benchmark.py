"""benchmarks/bench_quantization.py --quick runs end to end and reports every variant (no timing asserts)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_quantization.py"


@pytest.mark.skipif(not SCRIPT.is_file(), reason="the benchmarks folder is not part of this checkout")
def test_quick_benchmark(tmp_path):
    out = tmp_path / "rows.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out)], capture_output=True, text=True, check=True
    )
    rows = {r["variant"]: r for r in json.loads(out.read_text())}
    assert "| dynamic int8, per-channel |" in result.stdout
    fp32 = rows["fp32"]
    for name, row in rows.items():
        assert row["latency_ms_p50"] > 0 and row["latency_ms_p90"] >= row["latency_ms_p50"], name
        if name != "fp32":
            assert row["size_bytes"] < fp32["size_bytes"], name
            assert row["cosine_mean"] >= 0.98, name
    assert rows["4-bit MatMulNBits, block 32"]["size_bytes"] < rows["dynamic int8, per-channel"]["size_bytes"]
