"""Summaries for the listing, read from a pass's source file without importing it."""

from __future__ import annotations

import sys
import textwrap

import pytest

from olive.plugins.summaries import source_summary

SOURCE = '''
import this_module_does_not_exist  # importing this file would fail


class Plain(Base):
    """Plain summary.

    More text.
    """


class MultiLineHeader(
    Base,
    Mixin,
):
    # a comment before the docstring

    r\'\'\'Raw single-quoted summary.\'\'\'


class NoBases:
    "Short string docstring."


class NoDoc(Base):
    x = 1


class Blank(Base):
    """

    Summary after a blank line.
    """


from elsewhere import ReExported  # noqa
'''


@pytest.fixture
def package(tmp_path, monkeypatch):
    root = tmp_path / "site"
    (root / "summ_pkg").mkdir(parents=True)
    (root / "summ_pkg" / "__init__.py").write_text("raise RuntimeError('the package must not be imported')\n")
    (root / "summ_pkg" / "passes.py").write_text(textwrap.dedent(SOURCE))
    monkeypatch.syspath_prepend(str(root))
    yield "summ_pkg.passes"
    assert not [m for m in sys.modules if m.startswith("summ_pkg")]


@pytest.mark.parametrize(
    ("attribute", "summary"),
    [
        ("Plain", "Plain summary."),
        ("MultiLineHeader", "Raw single-quoted summary."),
        ("NoBases", "Short string docstring."),
        ("Blank", "Summary after a blank line."),
        ("NoDoc", None),
        ("ReExported", None),
        ("Missing", None),
    ],
)
def test_source_summary(package, attribute, summary):
    assert source_summary(f"{package}:{attribute}") == summary


@pytest.mark.parametrize("value", ["no_such_module_xyz:Thing", "summ_pkg.nope:Thing", "summ_pkg.passes", ":X"])
def test_source_summary_gives_none_for_what_it_cannot_find(package, value):
    assert source_summary(value) is None
