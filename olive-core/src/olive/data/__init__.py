"""Data for calibration and evaluation: data configs, the ``.npz`` container and user_script components.

None of these modules imports numpy when it is imported, so validating a workflow stays light.
"""

from __future__ import annotations

from olive.data.calibration import CalibrationDataReader
from olive.data.config import DataComponentConfig, DataConfig
from olive.data.registry import Registry

__all__ = ["CalibrationDataReader", "DataComponentConfig", "DataConfig", "Registry"]
