"""The generated reference pages describe the code: every ``olive`` command with its options, and every installed
pass with its params, read from the click definitions and the pass configs themselves."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_reference import cli_reference, pass_reference, write_reference


def test_the_cli_reference_has_every_command_and_its_options() -> None:
    from olive.cli.main import COMMANDS

    page = cli_reference()
    for name in COMMANDS:
        assert f"`olive {name}`" in page, name
    assert "#### `olive cache prune`" in page  # a group's subcommands, one level down
    assert "| `--keep TEXT` |" in page and "| `--max-size SIZE` |" in page
    # Usage lines are text, never a bash block the docs check would run.
    assert "```bash" not in page and "Usage: olive optimize [OPTIONS] [MODEL]" in page


def test_the_pass_reference_has_every_installed_pass_and_its_params() -> None:
    from olive.plugins.registry import get_registry

    page = pass_reference()
    for entry in get_registry().entries():
        assert f"### {entry.name}\n" in page, entry.name
    section = page[page.index("### OnnxDynamicQuantization\n") :]
    section = section[: section.index("\n### ")]
    assert "From **olive-passes-quant**" in section
    # A param row: name, type, default and what a search tries.
    assert "| `per_channel` | `bool` |" in section


def test_pages_are_rewritten_only_when_they_change(tmp_path: Path) -> None:
    first = write_reference(tmp_path)
    stamps = [p.stat().st_mtime_ns for p in first]
    second = write_reference(tmp_path)
    assert [p.stat().st_mtime_ns for p in second] == stamps
    assert {p.relative_to(tmp_path).as_posix() for p in second} == {"reference/cli.md", "reference/passes.md"}
