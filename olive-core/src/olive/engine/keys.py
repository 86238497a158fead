"""Cache keys: the full sha256 of everything a pass run or an evaluation depends on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.cache.store import hash_file
from olive.data.config import DataConfig
from olive.passes.pass_config import to_json_value

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.olive_pass import Pass
    from olive.passes.pass_config import BasePassConfig
    from olive.plugins.identity import PassIdentity

KEY_FORMAT = 1


def _file_hashes(value: Any, found: dict[str, str]) -> None:
    # A config naming a file (calibration data, a script) depends on that file's bytes, not its name.
    if isinstance(value, str):
        if len(value) < 4096 and (value.startswith("/") or value[1:3] in (":\\", ":/")):
            try:
                path = Path(value)
                if path.is_file():
                    found[value] = hash_file(path)
            except (OSError, ValueError):
                pass
    elif isinstance(value, dict):
        for item in value.values():
            _file_hashes(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _file_hashes(item, found)


class ScriptHashes:
    """Content hashes of user scripts for cache keys, each file read once per search."""

    def __init__(self) -> None:
        self._known: dict[Path, str] = {}

    def __call__(self, script: Path | None) -> str | None:
        if script is None:
            return None
        if script not in self._known:
            self._known[script] = hash_file(script)
        return self._known[script]


def digest(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def key_config(config: BasePassConfig) -> dict[str, Any]:
    """A pass config as its run key holds it: its JSON, with a data config named by its content
    (:meth:`DataConfig.content_hash`), so that the same data at another path is the same run."""
    return {
        name: {"data_config": value.content_hash()} if isinstance(value, DataConfig) else to_json_value(value)
        for name, value in config.to_dict().items()
    }


def run_key(
    input_hash: str,
    input_model_json: dict[str, Any],
    pass_class: type[Pass],
    identity: PassIdentity,
    config: dict[str, Any],
    accelerator: AcceleratorSpec,
    user_script_hash: str | None,
) -> str:
    """The key of one run of ``pass_class`` (offered as ``identity``) with ``config`` on an input model."""
    files: dict[str, str] = {}
    _file_hashes(config, files)
    agnostic = bool(pass_class.is_accelerator_agnostic(accelerator))
    model_settings = {
        k: v
        for k, v in (input_model_json.get("config") or {}).items()
        if k in ("inference_settings", "model_attributes")
    }
    return digest(
        {
            "format": KEY_FORMAT,
            "input_model": input_hash,
            "input_settings": model_settings,
            "pass": identity.name,
            "distribution": identity.distribution,
            "distribution_version": identity.version,
            "pass_version": pass_class._version,
            "config": config,
            "files": files,
            # provider, device and provider options: a pass that depends on the accelerator runs once per target
            "accelerator": None if agnostic else accelerator.cache_key(),
            "user_script": user_script_hash,
        }
    )


def eval_key(model_hash: str, model_json: dict[str, Any], payload: dict[str, Any]) -> str:
    """The key of one evaluation of a model: its content, its ``inference_settings`` (on a target: the provider,
    its options and device) and what is measured (the payload holds the evaluator's default target)."""
    files: dict[str, str] = {}
    _file_hashes(payload, files)
    settings = (model_json.get("config") or {}).get("inference_settings")
    return digest(
        {"format": KEY_FORMAT, "model": model_hash, "settings": settings, "evaluation": payload, "files": files}
    )
