"""The examples run through the real ``olive`` command print only Olive's own output: no library warning
(``WARNING:root:Please consider to run pre-processing...``), a table with units, the ranking rule; and their
cache is the per-user one that ``olive cache info`` finds with no flags."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from journey import REPO, olive

EXAMPLES = sorted([*(REPO / "examples").glob("*.json"), *(REPO / "examples").glob("*.yaml")])


@pytest.mark.parametrize("workflow", EXAMPLES, ids=lambda p: p.name)
def test_an_example_prints_no_foreign_warning(workflow: Path, tmp_path: Path) -> None:
    result = olive("run", str(workflow), "--output-dir", str(tmp_path / "out"), env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stdout + result.stderr
    for foreign in ("WARNING:root", "pre-processing", "onnxruntime-inference-examples"):
        assert foreign not in result.stderr and foreign not in result.stdout, result.stderr
    assert "ranking: by " in result.stdout
    # Only the output folder's path is left whole (to be copied), whatever its length.
    lines = [line for line in result.stdout.splitlines() if not line.startswith("written to: ")]
    assert max(len(line) for line in lines) <= 80, result.stdout


def test_olive_cache_info_finds_the_examples_cache_with_no_flags(tmp_path: Path) -> None:
    workflow = REPO / "examples" / "mlp_dynamic_quantization.json"
    assert olive("run", str(workflow), "--output-dir", str(tmp_path / "out")).returncode == 0
    info = olive("cache", "info", cwd=REPO)
    assert info.returncode == 0, info.stderr
    assert f"cache: {os.environ['OLIVE_CACHE_DIR']}" in info.stdout
    assert re.search(r"OnnxDynamicQuantization: [1-9]", info.stdout), info.stdout
