"""``passes``: one entry per pass key, each a config (or a list of alternative configs) of one pass.

An entry's params sit beside its reserved keys or, as older files write them, under ``config``; the pass's
own config class checks them once the pass is loaded (:mod:`olive.engine.plan`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from olive.config_errors import SCRIPT_KINDS, config_error, expect, json_path, user_path
from olive.data.config import DataConfig
from olive.exceptions import closest_match_hint

# Keys of a pass entry that are not the pass's params.
PASS_RESERVED_KEYS = ("type", "config", "user_script", "script_dir", "disable_search")


@attrs.frozen
class PassSpec:
    """One configuration of a pass as the workflow gives it (before the pass class is loaded)."""

    key: str
    type: str
    params: dict[str, Any]
    json_path: str
    params_path: str
    user_script: Path | None = None
    script_dir: Path | None = None
    disable_search: bool = False


def pass_entries(value: Any, data_configs: dict[str, DataConfig], base_dir: Path) -> dict[str, list[PassSpec]]:
    """Every pass key's configs (a list holds alternatives), in the workflow's order."""
    expect(value, dict, "passes", "an object mapping pass names to pass configs")
    if not value:
        raise config_error(
            "passes", 'empty; add at least one pass, e.g. {"quantize": {"type": "OnnxDynamicQuantization"}}'
        )
    result: dict[str, list[PassSpec]] = {}
    for key, spec in value.items():
        path = json_path("passes", key)
        if not isinstance(spec, list):
            result[key] = [_pass_spec(key, spec, path, data_configs, base_dir)]
            continue
        if not spec:
            raise config_error(path, "empty list; give a pass config or a list of alternative configs")
        result[key] = [_pass_spec(key, item, f"{path}[{i}]", data_configs, base_dir) for i, item in enumerate(spec)]
    return result


def _pass_spec(key: str, spec: Any, path: str, data_configs: dict[str, DataConfig], base_dir: Path) -> PassSpec:
    expect(spec, dict, path, 'an object like {"type": "PassName", ...params}')
    if "type" not in spec:
        raise config_error(f"{path}.type", "missing; name the pass (see `olive passes`)")
    kind = expect(spec["type"], str, f"{path}.type", "a pass name string")
    if not kind.strip():
        raise config_error(f"{path}.type", "empty; name the pass (see `olive passes`)")
    params, params_path = _params(spec, path)
    if "data_config" in params:
        params["data_config"] = _data_config(
            params["data_config"], key, f"{params_path}.data_config", data_configs, base_dir
        )
    disable = expect(spec.get("disable_search", False), bool, f"{path}.disable_search", "true or false")
    scripts = {
        name: user_path(
            expect(spec[name], str, f"{path}.{name}", "a path string"),
            f"{path}.{name}",
            base_dir,
            must_exist=True,
            kind=kind,
        )
        for name, kind in SCRIPT_KINDS.items()
        if spec.get(name)
    }
    return PassSpec(
        key=key,
        type=kind.strip(),
        params=params,
        json_path=path,
        params_path=params_path,
        disable_search=disable,
        **scripts,
    )


def _params(spec: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    """The entry's params, flat or under ``config``, and the JSON path they sit at."""
    params = {k: v for k, v in spec.items() if k not in PASS_RESERVED_KEYS}
    params_path = path
    if spec.get("config") is not None:
        nested = expect(spec["config"], dict, f"{path}.config", "an object of pass params")
        for name in nested:
            if name in params:
                raise config_error(f"{path}.config.{name}", f"also given directly under {path}; keep one")
        params.update(nested)
        params_path = f"{path}.config"
    for name in params:
        if not isinstance(name, str):
            raise config_error(params_path, f"param name {name!r} is not a string")
    return params, params_path


def _data_config(value: Any, key: str, path: str, data_configs: dict[str, DataConfig], base_dir: Path) -> Any:
    """A pass's ``data_config``: a data config's name, a ``.npz`` file, or a data config written in place."""
    if isinstance(value, dict):
        return DataConfig.from_json({"name": f"{key}_data", **value}, json_path=path, base_dir=base_dir)
    if not isinstance(value, str):
        return value
    if value in data_configs:
        return data_configs[value]
    if value.endswith(".npz"):
        return str(user_path(value, path, base_dir, must_exist=True, kind="file"))
    raise config_error(
        path,
        f"no data config named '{value}'"
        f"{closest_match_hint(value, data_configs)}; defined: {', '.join(data_configs) or '(none)'}",
    )
