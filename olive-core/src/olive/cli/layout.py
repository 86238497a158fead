"""Text for a terminal: docstrings without their reStructuredText markup, and whether a table fits.

Rich squeezes a table that is wider than the terminal by cutting words in the middle
(``DynamicToFixedShap``/``e``); the listings measure a table first and lay it out another way when it does
not fit.
"""

from __future__ import annotations

import io
import re
from typing import Any

# :class:`~pkg.Name` -> Name, ``code`` -> code, `text` -> text
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|ref|doc|py:\w+):`(~?)([^`<]+?)(?:\s*<[^>]*>)?`")
_DOUBLE = re.compile(r"``(.+?)``")
_INTERPRETED = re.compile(r"(?<![\w`])`([^`\n]+)`(?!`)_?")


def plain_text(text: str) -> str:
    """``text`` (a docstring or its summary) without reStructuredText markup: roles, literals, links."""
    text = _ROLE.sub(lambda m: m[2].rpartition(".")[2] if m[1] else m[2], text)
    text = _DOUBLE.sub(r"\1", text)
    return _INTERPRETED.sub(r"\1", text)


def minimum_width(renderable: Any, width: int) -> int:
    """The fewest columns ``renderable`` needs without cutting a word (as rich measures it)."""
    from rich.console import Console
    from rich.measure import Measurement

    console = Console(width=max(width, 1), file=io.StringIO())
    return Measurement.get(console, console.options.update_width(10**6), renderable).minimum
