"""Test kit for pass authors: tiny model factories, running a pass, the pass contract check, venvs, and a
distribution's import map read from its source (``check_distribution``).

Also a pytest plugin (fixtures ``tiny_mlp``, ``tiny_conv``, ``tiny_bert``, ``run_pass``,
``isolated_registry``, ``fresh_venv``), active as soon as olive-core is installed.

Every name loads its module on first access, so ``import olive.testing`` imports neither onnx nor numpy
(nor torch: ``save_decoder`` and ``trained_decoder``, tiny decoder LLM folders, and ``inject_outliers``, which gives
one massive-activation channels without changing its function, import it when called).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "mlp_model": "olive.testing.models",
    "conv_model": "olive.testing.models",
    "bert_like_model": "olive.testing.models",
    "save_model": "olive.testing.models",
    "random_inputs": "olive.testing.models",
    "write_npz_dataset": "olive.testing.models",
    "output_cosine": "olive.testing.models",
    "assert_pass_contract": "olive.testing.contract",
    "run_pass": "olive.testing.runner",
    "check_model_loads": "olive.testing.runner",
    "make_venv": "olive.testing.venv",
    "build_wheel": "olive.testing.venv",
    "Venv": "olive.testing.venv",
    "run_watched": "olive.testing.processes",
    "StalledProcessError": "olive.testing.processes",
    "check_distribution": "olive.testing.imports",
    # tiny decoder LLM folders (need torch, transformers, tokenizers: pip install olive-passes-genai)
    "save_decoder": "olive.testing.decoders",
    "trained_decoder": "olive.testing.decoders",
    "held_out_text": "olive.testing.decoders",
    "calibration_text": "olive.testing.decoders",
    "inject_outliers": "olive.testing.outliers",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'olive.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
