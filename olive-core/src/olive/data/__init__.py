"""Data for calibration and evaluation: data configs, the ``.npz`` container and user_script components.

Names are loaded lazily so that validating a workflow does not import numpy.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CalibrationDataReader", "DataComponentConfig", "DataConfig", "Registry"]

_EXPORTS = {
    "DataConfig": "olive.data.config",
    "DataComponentConfig": "olive.data.config",
    "CalibrationDataReader": "olive.data.calibration",
    "Registry": "olive.data.registry",
}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'olive.data' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
