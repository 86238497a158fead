"""Loading a workflow's ``user_script`` and finding functions in it."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from olive.exceptions import WorkflowConfigError, closest_match_hint

# Keyed by (resolved path, size, mtime) so an edited script is loaded again, an unchanged one once.
_LOADED: dict[tuple[str, int, int], ModuleType] = {}


def load_user_script(path: str | Path, script_dir: str | Path | None = None, where: str = "user_script") -> ModuleType:
    """Import the file at ``path`` as a module (cached while the file is unchanged).

    ``script_dir`` (or the script's own folder) is put on ``sys.path`` while it is imported, so the script
    can import its sibling modules.
    """
    path = Path(path)
    if not path.is_file():
        raise WorkflowConfigError(
            f"user script '{path}' does not exist; fix the path (relative paths start at the workflow file's folder)",
            owner=where,
        )
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    cached = _LOADED.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256(key[0].encode()).hexdigest()[:12]
    module_name = f"olive_user_script_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise WorkflowConfigError(f"'{path}' cannot be imported as a Python module; use a .py file", owner=where)
    module = importlib.util.module_from_spec(spec)
    search_dir = str(Path(script_dir).resolve() if script_dir else path.parent.resolve())
    added = search_dir not in sys.path
    if added:
        sys.path.insert(0, search_dir)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise WorkflowConfigError(
            f"importing user script '{path}' failed ({type(exc).__name__}: {exc}); fix the script", owner=where
        ) from exc
    finally:
        if added and search_dir in sys.path:
            sys.path.remove(search_dir)
    _LOADED[key] = module
    return module


def get_user_function(module: ModuleType, name: str, where: str) -> Callable[..., Any]:
    """The callable ``name`` in ``module``; a clear error naming ``where`` when it is missing."""
    func = getattr(module, name, None)
    if func is None:
        candidates = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise WorkflowConfigError(
            f"function '{name}' is not defined in user script '{module.__file__}'"
            f"{closest_match_hint(name, candidates)}; define it there or fix the name",
            owner=where,
        )
    if not callable(func):
        raise WorkflowConfigError(f"'{name}' in user script '{module.__file__}' is not a function", owner=where)
    return func
