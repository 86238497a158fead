"""A project made by ``olive new-pass`` tests green with a plain ``tox``: its tox.ini defaults to the
olive-core that rendered it (recorded from that olive-core's installed metadata), since olive-core is not on
a package index, and it says how to point the tests at another olive-core."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import olive_cli

from olive.plugins.install_hints import olive_core_requirement
from olive.testing.processes import run_watched


def test_plain_tox_in_a_rendered_project_passes_against_the_olive_core_that_made_it(tmp_path: Path) -> None:
    rendered = subprocess.run(
        olive_cli("new-pass", "--no-input", "--name", "Strip Doc Strings", "-o", str(tmp_path)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    project = tmp_path / "olive-pass-strip-doc-strings"
    tox_ini = (project / "tox.ini").read_text(encoding="utf-8")
    recorded = olive_core_requirement()
    assert f"deps = {{env:OLIVE_CORE:{recorded or ''}}}" in tox_ini
    assert 'OLIVE_CORE="-e /path/to/olive/olive-core" tox' in tox_ini
    assert "OLIVE_CORE" in (project / "README.md").read_text(encoding="utf-8")

    # tox as a user runs it in the project folder: nothing of this process's tox or virtual environment leaks in.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOX_") and k not in ("VIRTUAL_ENV", "OLIVE_CORE")}
    # tox builds environments and runs the project's tests: hung only after ten minutes without output or a file
    # written in the project (its .tox folder grows as it installs).
    result = run_watched(
        [sys.executable, "-m", "tox", "-q"], cwd=project, env=env, stalled_after=600, watch=[project / ".tox"]
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " passed" in result.stdout and "congratulations" in result.stdout
