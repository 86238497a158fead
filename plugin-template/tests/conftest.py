"""Rendering helpers shared by the template's tests."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

TEMPLATE = Path(__file__).resolve().parents[1]
REPO = TEMPLATE.parent


def olive_cli(*args: str) -> list[str]:
    """The command line that runs ``olive ARGS`` with the current interpreter."""
    return [sys.executable, "-m", "olive.cli.main", *args]


@pytest.fixture
def render(tmp_path: Path) -> Callable[..., Path]:
    """``render(**answers)``: render the template with cookiecutter's own API, as ``cookiecutter`` does.

    Renders into ``tmp_path / "out"``; a private cookiecutter config keeps replay files out of $HOME.
    """
    from cookiecutter.main import cookiecutter

    config = tmp_path / "cookiecutter-config.yaml"
    scratch = json.dumps(str(tmp_path / "cookiecutter-scratch"))
    config.write_text(f"cookiecutters_dir: {scratch}\nreplay_dir: {scratch}\n", encoding="utf-8")
    output = tmp_path / "out"
    output.mkdir()

    def run(**answers: str) -> Path:
        return Path(
            cookiecutter(
                str(TEMPLATE), no_input=True, extra_context=answers, output_dir=str(output), config_file=str(config)
            )
        )

    return run
