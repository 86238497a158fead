"""Imports show the map: olive-passes-quant never imports torch or a pass distribution it does not declare,
imports its own modules at the top (lazily only those that load a heavy library) and has no import cycle."""

from __future__ import annotations

from pathlib import Path

from olive.testing.imports import check_distribution

PROJECT = Path(__file__).resolve().parents[1]
# Lazy imports of the package's own light modules, written before this check: not to grow.
PENDING = {
    "olive_passes_quant._int8_variants",
    "olive_passes_quant.accuracy_guarded",
    "olive_passes_quant.preprocess",
    "olive_passes_quant.quantization",
    "olive_passes_quant.sensitivity",
}


def test_imports_show_the_map() -> None:
    # onnxruntime's transformer optimizer imports torch only at opt_level >= 1; this package must not need it.
    assert check_distribution(PROJECT, forbidden={"torch", "transformers"}, pending=PENDING) == []
