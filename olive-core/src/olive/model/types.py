"""Input model types: the ``olive.models`` entry-point group maps a type name to its handler class.

``ONNXModel`` is registered by olive-core itself, through its own ``pyproject.toml``; ``HfModel`` and
``PyTorchModel`` come from ``olive-passes-torch``, so olive-core never imports torch. A distribution
offers a model type with one entry point::

    [project.entry-points."olive.models"]
    HfModel = "olive_passes_torch.hf_model:HfModelHandler"

**The handler interface.** A model type is a subclass of :class:`~olive.model.handler.OliveModelHandler`
that implements:

- ``model_type`` (class attribute): the type name written in workflows and in ``to_json()``.
- ``from_config(cls, fields, json_path, base_dir) -> handler`` (classmethod): build the handler from the
  workflow's ``input_model`` fields (flat, ``type`` removed). It checks every field, makes paths absolute
  against ``base_dir`` (the workflow file's folder) and raises
  ``WorkflowConfigError(reason, owner=f"{json_path}.{field}")`` naming the field and the fix. It reads no
  weights. The base class gives a version driven by ``__init__``'s signature (unknown keys, ``model_path``
  resolved and required to exist).
- ``to_json() -> {"type": model_type, "config": {...}}``: ``model_from_json`` rebuilds the
  handler from it with ``cls(**config)``, so the config's keys are ``__init__``'s parameters.
- ``validate() -> None``: a cheap check before any work (``olive run --dry-run`` runs it): the files are
  there and are what the type needs; raises :class:`~olive.exceptions.ModelLoadError` or
  ``WorkflowConfigError`` naming the field.
- ``content_hash() -> str | None``: the cache key of the model's content: a sha256 of everything that
  changes what the model computes (for Hugging Face and PyTorch models: the weights' bytes, the config
  that changes the loaded model, and the torch/transformers versions). None means "hash the file at
  ``model_path``" (ONNX models: the file plus its external data, see :func:`olive.cache.store.hash_model`).
- ``size_on_disk`` (property): bytes the model takes on disk.
- ``model_path`` (property): where the model lives (a file or a folder).

A workflow's ``input_model`` is built by :func:`handler_from_config`. A type no installed distribution offers
is a config error saying which distribution offers it and the line that installs it
(:mod:`olive.plugins.install_hints`). The first pass of the workflow must list the type in its
``accepts_model_types``; when the type is not ONNX, the engine evaluates nothing on the input model itself and
compares every model with the first pass's output instead (see :class:`olive.engine.engine.Engine`).

What a pass needs beyond that is between the pass and the model type: ``OnnxConversion`` calls
``load_model()`` (a ``torch.nn.Module``), ``io_config`` and ``export_module()`` on the torch model types.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from olive.config_errors import expect
from olive.exceptions import ModelLoadError, PluginLoadError, WorkflowConfigError
from olive.model.handler import OliveModelHandler, ONNXModelHandler
from olive.plugins.install_hints import (
    MICROSOFT_OLIVE_ONLY_MODEL_TYPES,
    REPOSITORY_MODEL_TYPES,
    missing_model_type_hint,
)
from olive.plugins.named_types import NamedTypeRegistry
from olive.plugins.process_wide import ProcessWide

__all__ = [
    "MODELS_GROUP",
    "UnknownModelTypeError",
    "get_model_type",
    "handler_from_config",
    "model_from_json",
    "model_type_registry",
    "new_model_type_registry",
    "use_model_type_registry",
]

MODELS_GROUP = "olive.models"
# Other spellings older workflow files use.
_ALIASES = {"onnx": "ONNXModel"}
_CORE = "olive-core"


class UnknownModelTypeError(ModelLoadError):
    """No installed distribution offers the model type; the message says which one would."""


def new_model_type_registry(entry_points: bool = True) -> NamedTypeRegistry:
    """A fresh registry of model types (``entry_points=False``: olive-core's ``ONNXModel`` only)."""
    registry = NamedTypeRegistry(
        MODELS_GROUP,
        "model type",
        base=OliveModelHandler,
        known_elsewhere=(*REPOSITORY_MODEL_TYPES, *MICROSOFT_OLIVE_ONLY_MODEL_TYPES),
        missing_hint=missing_model_type_hint,
        error_type=UnknownModelTypeError,
        entry_points=entry_points,
        exempt=(_CORE,),
    )
    registry.register_unless_listed("ONNXModel", ONNXModelHandler, _CORE)
    return registry


_registry: ProcessWide[NamedTypeRegistry] = ProcessWide(new_model_type_registry)
#: The process-wide registry of model types, scanned on first use.
model_type_registry = _registry.get
#: Make a registry the process-wide one inside the ``with`` block (tests, embedders).
use_model_type_registry = _registry.use


def get_model_type(name: str) -> type[OliveModelHandler]:
    """The handler class of model type ``name`` (``"ONNXModel"``, ``"HfModel"``...; case does not matter).

    Raises :class:`UnknownModelTypeError` naming the distribution that provides a known type and how to
    install it, and :class:`~olive.exceptions.PluginLoadError` when that distribution is broken.
    """
    name = _ALIASES.get(str(name).lower(), str(name))
    return model_type_registry().get(name)


def handler_from_config(
    data: Any, json_path: str = "input_model", base_dir: str | Path | None = None
) -> OliveModelHandler:
    """Build the handler a workflow's ``input_model`` describes (fields flat or under ``config``).

    Every problem is a :class:`WorkflowConfigError` whose owner is the JSON path of the field.
    """
    expect(data, dict, json_path, 'an object like {"type": "ONNXModel", "model_path": "model.onnx"}')
    if data.get("type") is None:
        raise WorkflowConfigError(
            'missing; add "type": "ONNXModel" (or "HfModel", "PyTorchModel")', owner=f"{json_path}.type"
        )
    kind = expect(data["type"], str, f"{json_path}.type", "a model type name string").strip()
    if not kind:
        raise WorkflowConfigError('empty; name the model type, e.g. "ONNXModel"', owner=f"{json_path}.type")
    try:
        cls = get_model_type(kind)
    except (UnknownModelTypeError, PluginLoadError) as exc:
        raise WorkflowConfigError(exc.reason, owner=f"{json_path}.type") from exc
    fields = {k: v for k, v in data.items() if k not in ("type", "config")}
    prefix = json_path
    if data.get("config") is not None:
        nested = expect(data["config"], dict, f"{json_path}.config", "an object of model fields")
        for key in nested:
            if key in fields:
                raise WorkflowConfigError(
                    f"also given directly under {json_path}; keep one", owner=f"{json_path}.config.{key}"
                )
        fields.update(nested)
        prefix = f"{json_path}.config"
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    return cls.from_config(fields, prefix, base)


def model_from_json(data: Mapping[str, Any]) -> OliveModelHandler:
    """Build a handler from ``{"type": "ONNXModel", "config": {...}}`` (fields may also be flat); the type is
    looked up in the ``olive.models`` entry-point group."""
    kind = data.get("type")
    fields = dict(data.get("config") or {k: v for k, v in data.items() if k != "type"})
    return get_model_type(str(kind))(**fields)
