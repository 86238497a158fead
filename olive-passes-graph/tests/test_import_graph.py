"""Imports show the map: olive-passes-graph never imports torch or a pass distribution it does not declare,
imports its own modules at the top (lazily only those that load a heavy library) and has no import cycle."""

from __future__ import annotations

from pathlib import Path

from olive.testing.imports import check_distribution

PROJECT = Path(__file__).resolve().parents[1]


def test_imports_show_the_map() -> None:
    # The transformer fusions run at opt_level 0, where onnxruntime's optimizer needs no torch: neither do we.
    assert check_distribution(PROJECT, forbidden={"torch", "transformers"}) == []
