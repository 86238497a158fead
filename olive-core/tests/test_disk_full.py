"""A cache on a full disk: the run says the disk is full (not what a pass says of the truncated file it wrote),
names the folder, and leaves no half-written entry. Needs root and a mount namespace for a small tmpfs; skipped
elsewhere, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from engine_support import base_workflow

from olive.testing.models import mlp_model, save_model
from olive.testing.small_disk import small_disk_unavailable

TESTS_DIR = Path(__file__).resolve().parent


REASON = small_disk_unavailable()


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_a_full_cache_disk_is_said_as_one_and_leaves_no_half_written_entry(tmp_path: Path) -> None:
    # About 4 MB of weights: the pass's output model cannot fit on a 3 MB disk.
    model = save_model(mlp_model(in_features=1024, hidden=1024, out_features=8), tmp_path / "big").model_path
    cache = tmp_path / "cache"
    cache.mkdir()
    workflow = base_workflow(tmp_path, input_model={"type": "ONNXModel", "model_path": str(model)})
    workflow["passes"] = {"add": {"type": "AddMatMuls", "n": 1}}
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(workflow))
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from engine_support import make_registry;"
        "from olive.plugins.registry import set_registry; set_registry(make_registry());"
        "from olive.cli.main import main; main(sys.argv[2:])"
    )
    inner = (
        f'mount -t tmpfs -o size=3m tmpfs "{cache}" && "{sys.executable}" -c "$0" "{TESTS_DIR}" run "{config}"; '
        f'rc=$?; echo "rc=$rc"; find "{cache}" -name "*.onnx" -o -name "*.tmp" | sed "s/^/left: /"'
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", inner, script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert "rc=1" in done.stdout, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    assert f"the disk holding '{cache}' ran out of space (3 MB in all)" in errors[0], errors[0]
    assert "point cache_dir at another disk" in errors[0]
    assert "Traceback" not in done.stderr
    assert not [line for line in done.stdout.splitlines() if line.startswith("left: ")], done.stdout
