"""Every command the README of a project made by ``olive new-pass`` tells its user to run works, in a fresh
virtual environment (one that sees nothing of this one) after the install lines the README gives: its own
tests (``pytest``), a plain ``tox``, ``olive passes``, ``python -m build`` and ``twine check``. Only
``twine upload`` is left out: it needs an account on a package index.

A plain ``tox`` passes against the olive-core that rendered the project: its tox.ini defaults to it (recorded
from that olive-core's installed metadata), since olive-core is not on a package index, and it says how to
point the tests at another olive-core.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import olive_cli

from olive.plugins.install_hints import olive_core_requirement
from olive.testing.processes import run_watched

#: the README's only command that cannot run here
NEEDS_AN_INDEX_ACCOUNT = "twine upload dist/*"


def _bash_blocks(readme: str) -> dict[str, list[str]]:
    """The README's ``bash`` blocks by the heading above each, as lists of command lines."""
    blocks: dict[str, list[str]] = {}
    heading = ""
    for part in re.split(r"(^## [^\n]*$|^```bash\n.*?^```$)", readme, flags=re.M | re.S):
        if part.startswith("## "):
            heading = part[3:].strip()
        elif part.startswith("```bash"):
            lines = part.splitlines()[1:-1]
            blocks[heading] = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return blocks


def test_every_command_of_the_generated_readme_works_in_a_fresh_environment(tmp_path: Path) -> None:
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
    # tox's environments install the tests' extra only: a tox run never installs tox, build and twine again.
    assert "\nextras = test\n" in tox_ini
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert "OLIVE_CORE" in readme and "{OLIVE_CORE" not in readme

    blocks = _bash_blocks(readme)
    develop, use, publish = blocks["Develop and test"], blocks["Use it"], blocks["Publish"]
    # From a fresh environment: the README makes it, installs olive-core (the one that rendered the project,
    # since none is on a package index), then the project with the extra that brings what it runs next.
    assert develop[0] == "python -m venv .venv && . .venv/bin/activate"
    assert develop[1].startswith("pip install ") and "olive-core" in develop[1]
    assert develop[2:] == ['pip install -e ".[dev]"', "pytest", "tox"]
    assert NEEDS_AN_INDEX_ACCOUNT in publish
    commands = [*develop, *use, *(line for line in publish if line != NEEDS_AN_INDEX_ACCOUNT)]
    script = "set -euo pipefail\n" + "".join(f"echo '+++ {c}'\n{c}\n" for c in commands)

    # As a user runs it in the project folder: `python` is an interpreter without this environment's packages
    # (a virtual environment made from this one's sees only the standard library), and nothing of this
    # process's tox, virtual environment or olive-core choice leaks in.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOX_") and k not in ("VIRTUAL_ENV", "OLIVE_CORE", "PYTHONPATH")
    }
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # Installs, tox's environment and a build: hung only after ten minutes without output or a file written in
    # the project (its .venv, .tox and dist folders grow as it works).
    result = run_watched(
        ["bash", "-c", script],
        cwd=project,
        env=env,
        stalled_after=600,
        watch=[project / ".venv", project / ".tox", project / "dist"],
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "include-system-site-packages = false" in (project / ".venv" / "pyvenv.cfg").read_text(encoding="utf-8")
    for command in commands:
        assert f"+++ {command}" in result.stdout, command  # each one ran, in order, until the last
    assert " passed" in result.stdout and "congratulations" in result.stdout
    assert "StripDocStrings" in result.stdout.split("+++ olive passes StripDocStrings", 1)[1]
    assert sorted(p.suffix for p in (project / "dist").iterdir()) == [".gz", ".whl"]
    assert "PASSED" in result.stdout.split("+++ twine check dist/*", 1)[1]
    # tox's environment has what the tests need, and not the dev extra's tools.
    tox_bin = project / ".tox" / "py3" / "bin"
    assert (tox_bin / "pytest").exists() and not (tox_bin / "twine").exists()
