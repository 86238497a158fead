"""What the PyTorch model types (``HfModel``, ``PyTorchModel``) share.

A :class:`TorchModelHandler` knows where the model's files are and how to load them into a
``torch.nn.Module``; :func:`exportable` wraps that module so that it takes the io_config's inputs in
order and returns its outputs as a tuple, which is what ``torch.onnx.export`` traces. Constructing a
handler, ``from_config``, ``to_json`` and ``content_hash`` import neither torch nor transformers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.cache.store import hash_file
from olive.exceptions import ModelLoadError, PassConfigError, WorkflowConfigError
from olive.model.handler import OliveModelHandler
from olive.paths import resolve_user_path
from olive_passes_torch.io_config import IoConfig

if TYPE_CHECKING:
    import numpy as np
    import torch

# Files of a model folder that do not change what the model computes.
_NOT_MODEL_FILES = ("README", "LICENSE", ".git")
DTYPES = ("float32", "float16", "bfloat16")


def library_versions(*names: str) -> dict[str, str | None]:
    """Installed versions of ``names`` from metadata (no import: torch takes seconds to import)."""
    import importlib.metadata

    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def model_files(path: Path) -> list[Path]:
    """The files of a model: ``path`` itself, or the files directly in the folder ``path`` (subfolders such as a
    sentence-transformers pooling config are not loaded by transformers), without READMEs and licences."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(_NOT_MODEL_FILES))


def content_digest(
    kind: str, files: Sequence[tuple[str, Path]], settings: Mapping[str, Any], versions: Mapping[str, Any]
) -> str:
    """sha256 of a model's files (each ``(label, path)``: a name that does not depend on where the folder is,
    and the file's bytes), the settings that change the loaded model and the versions of the libraries that
    load and export it."""
    sha = hashlib.sha256(kind.encode() + b"\0")
    for label, file in files:
        sha.update(f"{label}\0{hash_file(file)}\0".encode())
    sha.update(json.dumps({"settings": settings, "versions": versions}, sort_keys=True, default=str).encode())
    return sha.hexdigest()


def labelled(files: Sequence[Path], root: Path, prefix: str = "") -> list[tuple[str, Path]]:
    """``(prefix + path relative to root, path)`` for each file."""
    return [(prefix + (f.name if f == root else str(f.relative_to(root))), f) for f in files]


def resolve_path(value: Any, owner: str, base_dir: Path, kind: str = "path") -> Path:
    """``value`` resolved by the workflow's path rule (:func:`olive.paths.resolve_user_path`); a
    :class:`WorkflowConfigError` when it is not a path string."""
    if not isinstance(value, str | Path) or not str(value):
        raise WorkflowConfigError(f"expected a {kind} (a string), got {value!r}", owner=owner)
    return resolve_user_path(value, base_dir)


class TorchModelHandler(OliveModelHandler):
    """Base of the model types ``OnnxConversion`` takes. Subclasses implement :meth:`load_model`,
    :meth:`io_config_for` and the handler interface of :mod:`olive.model.types`."""

    #: JSON path of the model's fields in the workflow, for messages (set by ``from_config``).
    json_path: str = "input_model"

    def load_model(self, torch_dtype: str | None = None) -> torch.nn.Module:
        """The model as a ``torch.nn.Module`` in eval mode, cast to ``torch_dtype`` when given."""
        raise NotImplementedError

    def get_io_config(self) -> dict[str, Any]:
        raise self._not_onnx()

    def prepare_session(self, *args: Any, **kwargs: Any) -> Any:
        raise self._not_onnx()

    def _not_onnx(self) -> ModelLoadError:
        # What metrics and ONNX passes call on a model; a clear error instead of an AttributeError.
        return ModelLoadError(
            f"{self.model_type} '{self.model_path}' runs in PyTorch, not onnxruntime; metrics and ONNX passes run "
            "on ONNX models, such as the output of OnnxConversion",
            owner=self.json_path,
        )

    def io_config_for(
        self, module: torch.nn.Module | None = None, overrides: Mapping[str, Any] | None = None
    ) -> IoConfig:
        """The io_config the export uses: the model's own, with ``overrides`` (the pass's ``io_config``) on top."""
        raise NotImplementedError

    #: Inputs are passed to forward by name (Hugging Face models) or in order (PyTorch modules, as Olive does).
    inputs_by_name: bool = False

    def forward_kwargs(self, module: torch.nn.Module) -> dict[str, Any]:
        """Keyword arguments every forward call of the export gets besides the inputs."""
        return {}

    def example_inputs(self, io: IoConfig, vary: bool, module: torch.nn.Module | None = None) -> dict[str, np.ndarray]:
        """Inputs for the export (``vary=False``) or, with ``vary``, for checking it at other sizes."""
        from olive_passes_torch._inputs import synthetic_inputs

        return synthetic_inputs(io, vary=vary)

    def output_attributes(self) -> dict[str, Any]:
        """``model_attributes`` the converted ONNX model starts from."""
        return dict(self.model_attributes)

    def describe(self) -> dict[str, Any]:
        """What was converted, for the conversion check's record: the model type and path."""
        return {"type": self.model_type, "model_path": self.model_path}

    def check_forward(self, module: torch.nn.Module, io: IoConfig) -> None:
        """Raise :class:`PassConfigError` naming the io_config's inputs and the forward signature when they do
        not fit: by name for inputs passed by name, by count for inputs passed in order."""
        owner = f"{self.json_path}.io_config.input_names"
        if self.inputs_by_name:
            check_input_names(forward_parameters(module)[0], io.input_names, owner)
        else:
            check_input_count(module, io.input_names, owner)


def forward_parameters(module: Any) -> tuple[list[str], bool]:
    import inspect

    params = inspect.signature(module.forward).parameters
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return named, any(p.kind == p.VAR_KEYWORD for p in params.values())


def check_input_names(named: Sequence[str], input_names: Sequence[str], owner: str) -> None:
    """Every input name must be a named parameter of the forward function. (transformers' ``**kwargs`` carry
    flags, never inputs: a name that only ``**kwargs`` would take is a mistake.)"""
    unknown = [n for n in input_names if n not in named]
    if unknown:
        raise PassConfigError(
            f"{', '.join(repr(n) for n in unknown)} not in the model's forward signature "
            f"({', '.join(named) or 'no named parameters'}); name the inputs as forward's parameters",
            owner=owner,
        )


def check_input_count(module: Any, input_names: Sequence[str], owner: str) -> None:
    """Inputs passed in order: forward must take that many positional arguments."""
    import inspect

    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):  # a TorchScript module's forward has no Python signature
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    signature = ", ".join(p.name for p in positional) or "no arguments"
    if (len(input_names) > len(positional) and not varargs) or len(input_names) < len(required):
        raise PassConfigError(
            f"lists {len(input_names)} input(s) ({', '.join(input_names)}) but the model's forward signature takes "
            f"{len(required)}{'' if len(required) == len(positional) else f' to {len(positional)}'} ({signature}); "
            "inputs are passed to forward in order: list one name per argument",
            owner=owner,
        )


def exportable(
    module: torch.nn.Module, io: IoConfig, forward_kwargs: Mapping[str, Any], by_name: bool
) -> torch.nn.Module:
    """``module`` wrapped to take the io_config's inputs in order (passing them on by name or in order) and
    return its outputs as a tuple."""
    import torch

    if isinstance(module, torch.jit.ScriptModule) and not by_name and not forward_kwargs:
        # A loaded TorchScript module cannot be traced from inside another module; it exports as it is.
        return module.eval()
    names = list(io.input_names)
    outputs = list(io.output_names)
    extra = dict(forward_kwargs)

    class Exported(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = module

        def forward(self, *args: Any) -> tuple[Any, ...]:
            if by_name:
                result = self.model(**dict(zip(names, args, strict=True)), **extra)
            else:
                result = self.model(*args, **extra)
            return pick_outputs(result, outputs)

    return Exported().eval()


def pick_outputs(result: Any, names: Sequence[str]) -> tuple[Any, ...]:
    """The outputs called ``names`` from what a forward call returned: a tensor (one output), a tuple or list
    (by position), a mapping or a transformers ``ModelOutput`` (by name)."""
    if isinstance(result, Mapping) or hasattr(result, "to_tuple"):
        missing = [n for n in names if n not in result]
        if missing:
            raise PassConfigError(
                f"the model returns no output {', '.join(repr(m) for m in missing)} (it returns "
                f"{', '.join(repr(k) for k in result)}); fix io_config.output_names"
            )
        return tuple(result[n] for n in names)
    if isinstance(result, tuple | list):
        if len(result) < len(names):
            raise PassConfigError(
                f"the model returns {len(result)} outputs but io_config.output_names lists {len(names)}; "
                "name one output per returned tensor"
            )
        return tuple(result[: len(names)])
    if len(names) != 1:
        raise PassConfigError(
            f"the model returns one tensor but io_config.output_names lists {len(names)}; name one output"
        )
    return (result,)
