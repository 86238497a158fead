"""Every ``olive`` command fails one way: one ``Error:`` line, escaped alike, and an exit code from one rule."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from olive.cli import failure
from olive.cli.failure import EXIT_CONFIG, EXIT_FAILED, exit_code, one_line
from olive.cli.main import cli
from olive.exceptions import (
    OliveError,
    PassConfigError,
    PassRunError,
    PluginLoadError,
    TemplateError,
    WorkflowConfigError,
)

CLI = Path(failure.__file__).parent


def test_one_line_joins_whitespace_and_escapes_what_a_terminal_would_not_show() -> None:
    assert one_line("a\n   b\tc\x07d") == "a b c\\x07d"
    assert one_line(WorkflowConfigError("bad", owner="passes.q")) == "passes.q: bad"


def _template_error_from_import() -> TemplateError:
    try:
        raise ImportError("No module named 'cookiecutter'")
    except ImportError as cause:
        error = TemplateError("olive new-pass needs cookiecutter")
        error.__cause__ = cause
        return error


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (WorkflowConfigError("x"), EXIT_CONFIG),
        (PassConfigError("x"), EXIT_CONFIG),
        (TemplateError("x"), EXIT_CONFIG),
        (_template_error_from_import(), EXIT_FAILED),
        (PassRunError("x"), EXIT_FAILED),
        (PluginLoadError("x"), EXIT_FAILED),
        (OliveError("x"), EXIT_FAILED),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_the_exit_code_says_whose_the_error_is(error: BaseException, code: int) -> None:
    assert exit_code(error) == code


def test_new_pass_fails_like_every_other_command() -> None:
    result = CliRunner().invoke(cli, ["new-pass", "--no-input"])
    assert result.exit_code == EXIT_CONFIG
    assert result.stderr == "Error: --no-input needs --name (the pass's name in words, e.g. 'Strip Doc Strings')\n"


def _calls(tree: ast.AST) -> list[str]:
    return [ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)]


@pytest.mark.parametrize("module", sorted(p.name for p in CLI.glob("*.py") if p.name != "failure.py"))
def test_no_command_prints_an_error_or_a_traceback_of_its_own(module: str) -> None:
    # The messages and exit codes of failures live in olive.cli.failure; a command that wrote its own would
    # escape differently or pick another exit code.
    tree = ast.parse((CLI / module).read_text(encoding="utf-8"))
    calls = _calls(tree)
    assert "traceback.print_exception" not in calls
    literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert not [text for text in literals if "interrupted" in text.lower()]
    assert not [text for text in literals if text.startswith("Error:")], "print errors with olive.cli.failure"
    assert "sys.exit(1)" not in ast.unparse(tree) and "sys.exit(2)" not in ast.unparse(tree)
    handlers = [n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler) and n.type is not None]
    for handler in handlers:
        caught = ast.unparse(handler.type)
        if "OliveError" in caught or "ConfigError" in caught or "TemplateError" in caught:
            echoes = [c for c in _calls(ast.Module(body=handler.body, type_ignores=[])) if c == "click.echo"]
            assert echoes == [], f"{module}:{handler.lineno} prints an error itself; use olive.cli.failure.fail"
