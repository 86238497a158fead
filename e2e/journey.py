"""Helpers of the journeys: the repository's root, and the real ``olive`` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from olive.testing.processes import run_watched

REPO = Path(__file__).resolve().parents[1]


def olive(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``olive ARGS`` as a user runs it (160 columns unless ``env`` says otherwise)."""
    script = Path(sys.executable).with_name("olive")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "olive.cli.main"]
    # A run may take long on a busy machine; it counts as hung only after five minutes without output.
    return run_watched(
        [*command, *args], env={**os.environ, "COLUMNS": "160", **(env or {})}, cwd=cwd, stalled_after=300
    )
