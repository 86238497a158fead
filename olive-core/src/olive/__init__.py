"""Olive: optimize ONNX models with plugin passes and search for the best combination.

This module stays light: ``import olive`` loads no onnxruntime, numpy or pass module.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The workflow runner pulls in the engine; load it only when asked for.
    if name == "run":
        from olive.workflows import run

        return run
    raise AttributeError(f"module 'olive' has no attribute {name!r}")
