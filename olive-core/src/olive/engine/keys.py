"""Cache keys: the full sha256 of everything a pass run or an evaluation depends on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.cache.store import hash_file
from olive.data.config import CONTAINER_DEFAULTS
from olive.data.containers import find_container

if TYPE_CHECKING:
    from olive.data.config import DataConfig
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.olive_pass import Pass
    from olive.plugins.identity import PassIdentity

KEY_FORMAT = 1
#: Evaluation keys name data by content (:func:`data_digest`) since format 2; format 1 keys named it by path
#: and are never looked up again (they simply miss).
EVAL_KEY_FORMAT = 2
#: The key under which a replaced path's digest sits (no workflow writes it: a config holding it is no path).
CONTENT_MARK = "olive-content-sha256"


def _is_absolute_path(value: str) -> bool:
    return len(value) < 4096 and (value.startswith("/") or value[1:3] in (":\\", ":/"))


def _folder_digest(folder: Path) -> str:
    """The sha256 of a folder's regular files: their paths relative to it and their bytes' digests."""
    sha = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        sha.update(f"{path.relative_to(folder).as_posix()}\0{hash_file(path)}\n".encode())
    return sha.hexdigest()


def _by_content(value: Any, replaced: list[str]) -> Any:
    """``value`` with every absolute path of an existing file or folder replaced by its content digest.

    A config naming a file (calibration data, a table, a script) depends on that file's bytes, not on where it
    lies: the same data at another path (another machine, a colleague's clone) gives the same key, an edited file
    another. A path that does not exist stays as written. ``replaced`` collects the paths replaced.
    """
    if isinstance(value, str):
        if _is_absolute_path(value):
            try:
                path = Path(value)
                if path.is_file():
                    replaced.append(value)
                    return {CONTENT_MARK: {"file": hash_file(path)}}
                if path.is_dir():
                    replaced.append(value)
                    return {CONTENT_MARK: {"folder": _folder_digest(path)}}
            except (OSError, ValueError):
                pass
        return value
    if isinstance(value, dict):
        return {key: _by_content(item, replaced) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_by_content(item, replaced) for item in value]
    return value


def data_digest(config: DataConfig) -> dict[str, Any]:
    """What an evaluation's key holds of a data config: its JSON form with every file and folder it reads (data
    files and folders, ``user_script``, ``script_dir``, a plugin container's own files) by content, and the
    part of the samples it yields (``role``). Where the data lies is not part of it."""
    replaced: list[str] = []
    files: list[str] = []
    container = find_container(config.type) if config.type not in CONTAINER_DEFAULTS else None
    if container is not None:
        files = [str(name) for name in container.files(config)]
    return {
        "config": _by_content(config.to_json(), replaced),
        "files": [_by_content(str(Path(name).absolute()), replaced) for name in files],
        "role": config.role,
    }


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
    replaced: list[str] = []
    by_content = _by_content(config, replaced)
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
            # A config that names no file keeps the key it always had; one that does names it by content.
            "config": config if not replaced else by_content,
            "files": {} if not replaced else {"by": "content"},
            # provider, device and provider options: a pass that depends on the accelerator runs once per target
            "accelerator": None if agnostic else accelerator.cache_key(),
            "user_script": user_script_hash,
        }
    )


def eval_key(model_hash: str, model_json: dict[str, Any], payload: dict[str, Any]) -> str:
    """The key of one evaluation of a model: its content, its ``inference_settings`` (on a target: the provider,
    its options and device) and what is measured (the payload holds the evaluator's default target)."""
    settings = (model_json.get("config") or {}).get("inference_settings")
    return digest(
        {
            "format": EVAL_KEY_FORMAT,
            "model": model_hash,
            "settings": settings,
            # Files the metrics name (a user script, an inline data config's data) count by content, not by path.
            "evaluation": _by_content(payload, []),
        }
    )
