"""How every ``olive`` command fails: one ``Error:`` line on stderr and an exit code that says whose it is.

Exit codes: 1 the run failed (or found nothing to keep); 2 the input is invalid (a config, a flag, a name to
change); 130 interrupted (Ctrl-C). ``--verbose`` adds the traceback above the line.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from olive.config_errors import printable
from olive.exceptions import PassConfigError, SettingError, TemplateError, WorkflowConfigError

EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130

#: What Ctrl-C during a run means for the next run.
INTERRUPTED_RUN = "interrupted; finished pass runs are cached and reused by the next run"
INTERRUPTED_BEFORE_RUN = "interrupted before anything ran"


def one_line(text: object) -> str:
    """``text`` as one readable line: runs of whitespace (newlines too) become one space, and characters a
    terminal would not show as themselves are escaped."""
    return printable(" ".join(str(text).split()))


def exit_code(exc: BaseException) -> int:
    """2 for an error the user fixes in what they gave (a config, a flag, a setting, a template answer), else 1.

    A template error caused by a missing module is the installation's, not the answers': 1.
    """
    if isinstance(exc, TemplateError):
        return EXIT_FAILED if isinstance(exc.__cause__, ImportError) else EXIT_CONFIG
    return EXIT_CONFIG if isinstance(exc, PassConfigError | WorkflowConfigError | SettingError) else EXIT_FAILED


def error_line(message: object) -> None:
    """Print ``Error: message`` on one line of stderr."""
    click.echo(f"Error: {one_line(message)}", err=True)


def fail(exc: BaseException, verbose: bool = False) -> NoReturn:
    """Print ``exc`` as one ``Error:`` line (with its traceback first when ``verbose``) and exit with
    :func:`exit_code`."""
    if verbose:
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    error_line(exc)
    sys.exit(exit_code(exc))


def interrupted(message: str = INTERRUPTED_RUN) -> NoReturn:
    """Ctrl-C: say what it left behind and exit with 130, as a shell does for SIGINT."""
    error_line(message)
    sys.exit(EXIT_INTERRUPTED)
