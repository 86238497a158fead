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

What a pass needs beyond that is between the pass and the model type: ``OnnxConversion`` calls
``load_model()`` (a ``torch.nn.Module``), ``io_config`` and ``export_module()`` on the torch model types.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from olive.exceptions import ModelLoadError, PluginLoadError, WorkflowConfigError
from olive.model.handler import OliveModelHandler, ONNXModelHandler
from olive.plugins.discovery import normalize_name
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
TORCH_DISTRIBUTION = "olive-passes-torch"

# Microsoft Olive's model types and the distribution here that provides each (None: none does), so a
# workflow naming one that is not installed gets the install line instead of "unknown".
PROVIDED_ELSEWHERE: dict[str, str | None] = {
    "HfModel": TORCH_DISTRIBUTION,
    "PyTorchModel": TORCH_DISTRIBUTION,
    "DistributedHfModel": None,
    "DistributedOnnxModel": None,
    "CompositeModel": None,
    "CompositePyTorchModel": None,
    "DiffusersModel": None,
    "OpenVINOModel": None,
    "QNNModel": None,
    "SNPEModel": None,
    "TensorFlowModel": None,
}
INSTALL_HINTS = {TORCH_DISTRIBUTION: 'from a clone of this repository: pip install -e "./olive-passes-torch[hf]"'}
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
        provided_elsewhere=PROVIDED_ELSEWHERE,
        install_hints=INSTALL_HINTS,
        error_type=UnknownModelTypeError,
        entry_points=entry_points,
        exempt=(_CORE,),
    )
    if not any(e.name == "ONNXModel" and normalize_name(e.distribution) == _CORE for e in registry.entries()):
        # olive-core run from a source tree whose metadata predates its entry point: ONNX still works.
        registry.register("ONNXModel", ONNXModelHandler, distribution=_CORE)
    return registry


_registry: ProcessWide[NamedTypeRegistry] = ProcessWide(new_model_type_registry)


def model_type_registry() -> NamedTypeRegistry:
    """The process-wide registry of model types, scanned on first use."""
    return _registry.get()


@contextmanager
def use_model_type_registry(registry: NamedTypeRegistry) -> Iterator[NamedTypeRegistry]:
    """Make ``registry`` the process-wide one inside the ``with`` block (tests, embedders)."""
    with _registry.use(registry):
        yield registry


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
    if not isinstance(data, Mapping):
        raise WorkflowConfigError(
            f'expected an object like {{"type": "ONNXModel", "model_path": "model.onnx"}}, got {type(data).__name__}',
            owner=json_path,
        )
    kind = data.get("type")
    if not isinstance(kind, str) or not kind:
        raise WorkflowConfigError(
            'missing; add "type": "ONNXModel" (or "HfModel", "PyTorchModel")', owner=f"{json_path}.type"
        )
    try:
        cls = get_model_type(kind)
    except (UnknownModelTypeError, PluginLoadError) as exc:
        raise WorkflowConfigError(exc.reason, owner=f"{json_path}.type") from exc
    fields = {k: v for k, v in data.items() if k not in ("type", "config")}
    prefix = json_path
    if data.get("config") is not None:
        nested = data["config"]
        if not isinstance(nested, Mapping):
            raise WorkflowConfigError("expected an object of model fields", owner=f"{json_path}.config")
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
