"""``data_configs``: the data a workflow's passes fit on and its metrics judge on, by name. Each container type
checks its own config (:class:`olive.data.config.DataConfig`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from olive.config_errors import config_error, expect
from olive.data.config import DataConfig
from olive.exceptions import WorkflowConfigError


def named_data_configs(value: Any, base_dir: Path) -> dict[str, DataConfig]:
    """The workflow's data configs by name (a list, or as older files write them an object of names)."""
    if isinstance(value, dict):  # older files map names to configs
        items = [
            ({"name": name, **spec} if isinstance(spec, dict) else spec, f"data_configs.{name}")
            for name, spec in value.items()
        ]
    else:
        expect(value, list, "data_configs", "a list of data configs")
        items = [(spec, f"data_configs[{i}]") for i, spec in enumerate(value)]
    result: dict[str, DataConfig] = {}
    for spec, path in items:
        expect(spec, dict, path, 'an object like {"name": "calib", "type": "NpzDataContainer", ...}')
        if "name" not in spec:
            raise config_error(f"{path}.name", "missing; every data config needs a name to refer to it by")
        expect(spec["name"], str, f"{path}.name", "a string")
        if spec["name"] in result:
            raise config_error(f"{path}.name", f"duplicate data config name '{spec['name']}'; names must be unique")
        try:
            config = DataConfig.from_json(spec, json_path=path, base_dir=base_dir)
        except WorkflowConfigError:
            raise
        except Exception as exc:  # a bug or an unexpected shape: still one line with the path
            raise config_error(path, f"invalid data config ({type(exc).__name__}: {exc})") from exc
        result[spec["name"]] = config
    return result
