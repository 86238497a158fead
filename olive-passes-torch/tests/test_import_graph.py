"""Imports show the map: olive-passes-torch imports no pass distribution it does not declare, imports its own
modules at the top (lazily only those that load a heavy library) and has no import cycle. It is the one
distribution here that imports torch."""

from __future__ import annotations

from pathlib import Path

from olive.testing.imports import check_distribution

PROJECT = Path(__file__).resolve().parents[1]
# Lazy imports of the package's own light modules, written before this check: not to grow.
PENDING = {"olive_passes_torch.conversion", "olive_passes_torch.hf_model", "olive_passes_torch.torch_model"}


def test_imports_show_the_map() -> None:
    assert check_distribution(PROJECT, pending=PENDING) == []
