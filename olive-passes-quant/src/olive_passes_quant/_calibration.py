"""Turning a pass's ``data_config`` value into onnxruntime calibration data, checked against the model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError, PassConfigError

if TYPE_CHECKING:
    from olive.data.calibration import CalibrationDataReader
    from olive.model.handler import ONNXModelHandler


def no_data_message(owner: str) -> str:
    return (
        f"{owner}: static quantization needs calibration data; set data_config to the name of one of the "
        "workflow's data_configs (e.g. an NpzDataContainer), a DataConfig, or a path to an .npz file keyed by "
        "the model's input names (or use OnnxDynamicQuantization, which needs none)"
    )


def calibration_reader(
    value: Any, model: ONNXModelHandler, max_samples: int | None, owner: str
) -> CalibrationDataReader:
    """A reader over the calibration data whose first batch matched ``model``'s inputs (names, ranks, dtypes).

    ``value`` is a ``DataConfig``, its JSON form, or a path to an ``.npz`` file.
    """
    from olive.data.calibration import CalibrationDataReader, as_data_config

    if value is None:
        raise PassConfigError(no_data_message(owner))
    if isinstance(value, str | Path):
        path = Path(value).expanduser()
        if path.suffix != ".npz":
            raise PassConfigError(
                f"{owner}: data_config '{value}' is not an .npz file; inside a workflow give the name of one of its "
                "data_configs, in direct use a DataConfig, its JSON form or a path to an .npz file"
            )
        if not path.is_file():
            raise PassConfigError(f"{owner}: calibration data file '{path}' does not exist; fix data_config")
    try:
        data_config = as_data_config(value, where=f"{owner}: data_config")
        return CalibrationDataReader(data_config, max_samples=max_samples).check_against(model)
    except PassConfigError:
        raise
    except OliveError as exc:
        raise PassConfigError(f"{owner}: calibration data does not fit the model: {exc}") from exc
