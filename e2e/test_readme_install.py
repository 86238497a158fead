"""The README's install lines, run exactly as written in a copy of the repository: the two commands (editable
installs from the clone's root, then ``olive quickstart``), and the route for another machine (wheels built in
the clone, installed in a fresh environment elsewhere). Each runs in a fresh virtual environment that sees
nothing of this one; dependencies come from the configured package index.

Afterwards the copy is still clean (``git status``), ``olive cache info`` finds the per-user cache with no
flags, and a pass whose distribution was uninstalled names the line that installs it from where olive-core
came from (the clone's folder, or the folder of the wheels).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from journey import REPO

from olive.testing.processes import run_watched


def _bash_blocks(markdown: str) -> list[tuple[str, str]]:
    """``(heading, code)`` of every ```bash block, with the nearest heading above it."""
    blocks, heading = [], ""
    for match in re.finditer(r"^(#{1,4} [^\n]*)$|^```bash\n(.*?)^```", markdown, flags=re.M | re.S):
        if match.group(1):
            heading = match.group(1).lstrip("#").strip()
        else:
            blocks.append((heading, match.group(2).strip()))
    return blocks


README_BLOCKS = _bash_blocks((REPO / "README.md").read_text(encoding="utf-8"))


def _block(heading: str, must_hold: str) -> str:
    found = [code for head, code in README_BLOCKS if head == heading and must_hold in code]
    assert len(found) == 1, f"the README has no single ```bash block under '{heading}' holding '{must_hold}'"
    return found[0]


def _copy_of_the_repository(target: Path) -> Path:
    """The repository's files as a fresh clone has them (tracked and new, nothing ignored), committed."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    git = ["git", "-c", "user.name=olive", "-c", "user.email=olive@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=target, check=True)
    subprocess.run([*git, "add", "-A"], cwd=target, check=True)
    subprocess.run([*git, "commit", "-qm", "clone"], cwd=target, check=True)
    return target


def _fresh_env(venv: Path) -> dict[str, str]:
    """A shell environment with ``venv`` activated and nothing of the current one's Python."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "OLIVE_LOAD_PLUGINS", "OLIVE_DISABLE_PLUGINS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("TOX_")}
    here = str(Path(sys.executable).parent)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != here]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env["VIRTUAL_ENV"] = str(venv)
    env["COLUMNS"] = "120"
    return env


def _make_venv(path: Path) -> Path:
    # The README's commands run "python -m pip": the environment needs its own pip.
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path


def _sh(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    # pip and the journeys print as they go: fifteen silent minutes are a hang, however long the whole takes.
    return run_watched(["bash", "-e", "-c", command], cwd=cwd, env=env, stalled_after=900)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    return _copy_of_the_repository(tmp_path_factory.mktemp("clone"))


def test_the_two_commands_work_from_a_clone_and_leave_it_clean(
    clone: Path, tmp_path: Path, per_user_folders: Path
) -> None:
    command = _block("Two commands", "olive quickstart")
    assert command.startswith("python -m pip install -e ./olive-core")
    env = _fresh_env(_make_venv(tmp_path / "venv"))
    result = _sh(command, clone, env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Chosen model:" in result.stdout and "Traceback" not in result.stderr
    assert "WARNING:root" not in result.stderr and "pre-processing" not in result.stderr

    # Where things went: the user data folder and the per-user cache, nothing in the clone.
    written = Path(os.environ["XDG_DATA_HOME"]) / "olive" / "quickstart"
    assert (written / "quickstart.json").is_file() and (written / "output" / "model.onnx").is_file()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True)
    assert status.stdout == "", status.stdout
    info = _sh("olive cache info", clone, env)
    assert info.returncode == 0 and f"cache: {os.environ['OLIVE_CACHE_DIR']}" in info.stdout, info.stdout
    assert re.search(r"pass runs: [1-9]", info.stdout), info.stdout

    # Without the graph passes, the quickstart's own workflow names the distribution and the clone's line.
    _sh("python -m pip uninstall -y olive-passes-graph", clone, env)
    missing = _sh(f"olive run {written / 'quickstart.json'}", clone, env)
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert f'pip install -e "{clone / "olive-passes-graph"}"' in missing.stderr, missing.stderr


def test_the_wheels_route_works_on_another_machine(clone: Path, tmp_path: Path) -> None:
    build = _block("On another machine: wheels", "pip wheel")
    install = _block("On another machine: wheels", "olive quickstart")
    # Building needs only pip (the backend comes from the package index): this environment's will do.
    built = _sh(build, clone, _fresh_env(Path(sys.executable).parent.parent))
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]

    machine = tmp_path / "other-machine"
    shutil.copytree(clone / "dist", machine / "dist")
    env = _fresh_env(_make_venv(tmp_path / "venv"))
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    result = _sh(install, machine, env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Chosen model:" in result.stdout

    # A pass whose wheel is not installed names the wheel beside olive-core's.
    _sh("python -m pip uninstall -y olive-passes-graph", machine, env)
    listing = _sh("olive passes OnnxPeepholeOptimizer", machine, env)
    assert listing.returncode != 0, listing.stdout + listing.stderr
    wheel = next((machine / "dist").glob("olive_passes_graph-*.whl"))
    assert f'pip install "{wheel}"' in listing.stderr, listing.stderr
