"""``PyTorchModel``: a ``torch.nn.Module`` from a file or from a function in a script.

Written in a workflow with Microsoft Olive's keys::

    "input_model": {"type": "PyTorchModel", "model_path": "model.pt",
                    "io_config": {"input_names": ["x"], "input_shapes": [[1, 16]], "output_names": ["y"],
                                  "dynamic_axes": {"x": {"0": "batch"}, "y": {"0": "batch"}}}}

- ``model_path``: a whole module saved with ``torch.save(module, path)`` (``model_file_format``
  ``PyTorch.EntireModel``, the default; loading it runs the file's pickled code, so only use your own
  files), a TorchScript file (``PyTorch.TorchScript``), or any file or folder ``model_loader`` reads.
- ``model_loader`` + ``model_script``: the name of a function in the script, called as
  ``model_loader(model_path)`` (``model_path`` may be left out: ``None``), that returns the module.
  ``script_dir`` is put on ``sys.path`` while the script is imported.
- ``io_config``: required: ``input_names`` (parameters of ``forward``), ``output_names``,
  ``input_shapes`` and ``input_types`` (default ``float32``), ``dynamic_axes``.
- ``dummy_inputs_func``: a function in ``model_script`` called with this handler that returns the export's
  inputs (a tensor, a tuple in ``input_names`` order, or a dict by name); then ``input_shapes`` may be left out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassConfigError, PassRunError, WorkflowConfigError, closest_match_hint
from olive.paths import resolve_user_path
from olive_passes_torch.io_config import IoConfig, build_io_config, check_io_config
from olive_passes_torch.torch_model import (
    TorchModelHandler,
    content_digest,
    labelled,
    library_versions,
    model_files,
    resolve_path,
)

if TYPE_CHECKING:
    from types import ModuleType

    import numpy as np
    import torch

logger = logging.getLogger(__name__)

FIELDS = (
    "model_path",
    "model_file_format",
    "model_loader",
    "model_script",
    "script_dir",
    "io_config",
    "dummy_inputs_func",
    "model_attributes",
)
FORMATS = ("PyTorch.EntireModel", "PyTorch.TorchScript")
_OTHER_FORMATS = {
    "PyTorch.StateDict": "a state dict holds no module; write a model_loader that builds the module and loads the "
    "state dict into it",
    "PyTorch.MLflow": "MLflow models are not loaded by this version; save the module with torch.save",
    "PyTorch.SliceGPT": "SliceGPT models are not loaded by this version",
}


class PyTorchModelHandler(TorchModelHandler):
    """A PyTorch module from a file or a loader function (see the module docstring for its fields)."""

    model_type = "PyTorchModel"

    def __init__(
        self,
        model_path: str | Path | None = None,
        model_file_format: str = "PyTorch.EntireModel",
        model_loader: str | None = None,
        model_script: str | Path | None = None,
        script_dir: str | Path | None = None,
        io_config: Mapping[str, Any] | None = None,
        dummy_inputs_func: str | None = None,
        model_attributes: Mapping[str, Any] | None = None,
    ):
        super().__init__(model_path, model_attributes)
        self.model_file_format = model_file_format
        self.model_loader = model_loader
        self.model_script = str(model_script) if model_script is not None else None
        self.script_dir = str(script_dir) if script_dir is not None else None
        self.io_config = dict(io_config) if io_config else None
        self.dummy_inputs_func = dummy_inputs_func

    # ------------------------------------------------------------------------------------------ the interface

    @classmethod
    def from_config(cls, fields: Mapping[str, Any], json_path: str, base_dir: Path) -> PyTorchModelHandler:
        for key in fields:
            if key not in FIELDS:
                raise WorkflowConfigError(
                    f"unknown key for PyTorchModel{closest_match_hint(str(key), FIELDS)}; valid keys: "
                    f"{', '.join(FIELDS)}",
                    owner=f"{json_path}.{key}",
                )
        values = {k: v for k, v in fields.items() if v is not None}
        if "model_path" not in values and "model_loader" not in values:
            raise WorkflowConfigError(
                "missing; give the saved module (torch.save) or a model_loader function in model_script",
                owner=f"{json_path}.model_path",
            )
        if "model_path" in values:
            path = resolve_path(values["model_path"], f"{json_path}.model_path", base_dir)
            if not path.exists():
                raise WorkflowConfigError(
                    f"'{values['model_path']}' does not exist (looked at {path}); fix the path",
                    owner=f"{json_path}.model_path",
                )
            values["model_path"] = str(path)
        fmt = values.get("model_file_format", "PyTorch.EntireModel")
        if fmt in _OTHER_FORMATS:
            raise WorkflowConfigError(f"'{fmt}': {_OTHER_FORMATS[fmt]}", owner=f"{json_path}.model_file_format")
        if fmt not in FORMATS:
            raise WorkflowConfigError(
                f"unknown format {fmt!r}{closest_match_hint(str(fmt), FORMATS)}; use one of {', '.join(FORMATS)}",
                owner=f"{json_path}.model_file_format",
            )
        if "model_loader" not in values and Path(values["model_path"]).is_dir():
            raise WorkflowConfigError(
                f"'{values['model_path']}' is a folder; a folder needs a model_loader function (in model_script) "
                "that reads it",
                owner=f"{json_path}.model_path",
            )
        for key in ("model_loader", "dummy_inputs_func"):
            if key in values:
                if not isinstance(values[key], str) or not values[key]:
                    raise WorkflowConfigError(
                        f"expected the name of a function in model_script, got {values[key]!r}",
                        owner=f"{json_path}.{key}",
                    )
                if "model_script" not in values:
                    raise WorkflowConfigError(
                        f"names a function but model_script is missing; add the script that defines '{values[key]}'",
                        owner=f"{json_path}.{key}",
                    )
        if "script_dir" in values:
            script_dir = resolve_path(values["script_dir"], f"{json_path}.script_dir", base_dir)
            if not script_dir.is_dir():
                raise WorkflowConfigError(f"'{script_dir}' is not a folder", owner=f"{json_path}.script_dir")
            values["script_dir"] = str(script_dir)
        if "model_script" in values:
            if not isinstance(values["model_script"], str | Path):
                raise WorkflowConfigError("expected the path of a .py file", owner=f"{json_path}.model_script")
            # Looked for in script_dir when one is given, as Olive does; otherwise beside the workflow.
            script = resolve_user_path(values["model_script"], values.get("script_dir") or base_dir)
            if not script.is_file() or script.suffix != ".py":
                raise WorkflowConfigError(
                    f"'{script}' is not a Python file; give the .py file that defines the functions",
                    owner=f"{json_path}.model_script",
                )
            values["model_script"] = str(script)
        if "io_config" not in values:
            raise WorkflowConfigError(
                'missing; conversion needs the inputs and outputs, e.g. {"input_names": ["x"], "input_shapes": '
                '[[1, 16]], "output_names": ["y"]}',
                owner=f"{json_path}.io_config",
            )
        io = check_io_config(values["io_config"], f"{json_path}.io_config")
        if "input_shapes" not in io and "dummy_inputs_func" not in values:
            raise WorkflowConfigError(
                "missing; give one shape per input (or a dummy_inputs_func that makes the inputs)",
                owner=f"{json_path}.io_config.input_shapes",
            )
        handler = cls(**values)
        handler.json_path = json_path
        return handler

    def _extra_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"model_file_format": self.model_file_format}
        for key in ("model_loader", "model_script", "script_dir", "io_config", "dummy_inputs_func"):
            if getattr(self, key):
                extra[key] = getattr(self, key)
        if self.model_attributes:
            extra["model_attributes"] = self.model_attributes
        return extra

    def validate(self) -> None:
        """The files exist and ``model_script`` imports and defines the functions it is named for."""
        if self.model_path is not None and not Path(self.model_path).exists():
            raise WorkflowConfigError(f"'{self.model_path}' does not exist", owner=f"{self.json_path}.model_path")
        for key in ("model_loader", "dummy_inputs_func"):
            if getattr(self, key):
                self._function(key)

    def content_hash(self) -> str:
        files: list[tuple[str, Path]] = []
        if self.model_path is not None:
            path = Path(self.model_path)
            found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            files += labelled(found, path, "model/")
        if self.model_script:
            files.append(("model_script", Path(self.model_script)))
        if self.script_dir:
            root = Path(self.script_dir)
            files += labelled(sorted(root.rglob("*.py")), root, "script_dir/")
        settings = {
            "model_file_format": self.model_file_format,
            "model_loader": self.model_loader,
            "dummy_inputs_func": self.dummy_inputs_func,
            "io_config": self.io_config,
        }
        return content_digest(self.model_type, files, settings, library_versions("torch"))

    @property
    def size_on_disk(self) -> int:
        return sum(p.stat().st_size for p in model_files(Path(self.model_path))) if self.model_path else 0

    # ------------------------------------------------------------------------------------------ torch

    def _script(self) -> ModuleType:
        from olive.data.user_script import load_user_script

        return load_user_script(self.model_script, self.script_dir, where=f"{self.json_path}.model_script")

    def _function(self, key: str) -> Any:
        from olive.data.user_script import get_user_function

        return get_user_function(self._script(), getattr(self, key), f"{self.json_path}.{key}")

    def load_model(self, torch_dtype: str | None = None) -> torch.nn.Module:
        import torch

        if self.model_loader:
            loader = self._function("model_loader")
            try:
                module = loader(self.model_path)
            except Exception as exc:
                raise PassRunError(
                    f"model_loader '{self.model_loader}' in model_script '{self.model_script}' raised "
                    f"{type(exc).__name__}: {exc}",
                    owner=f"{self.json_path}.model_loader",
                ) from exc
            where = f"model_loader '{self.model_loader}'"
        else:
            try:
                if self.model_file_format == "PyTorch.TorchScript":
                    module = torch.jit.load(self.model_path, map_location="cpu")
                else:
                    # The user's own file (a whole pickled module needs its code), as Olive loads it.
                    module = torch.load(self.model_path, map_location="cpu", weights_only=False)
            except Exception as exc:
                raise PassConfigError(
                    f"torch cannot load '{self.model_path}' as {self.model_file_format} ({type(exc).__name__}: {exc}); "
                    "save the module with torch.save(module, path), or set model_file_format",
                    owner=f"{self.json_path}.model_path",
                ) from exc
            where = f"'{self.model_path}'"
        if not isinstance(module, torch.nn.Module):
            raise PassConfigError(
                f"{where} gave a {type(module).__name__}, not a torch.nn.Module (a state dict needs a model_loader "
                "that builds the module)",
                owner=f"{self.json_path}.{'model_loader' if self.model_loader else 'model_path'}",
            )
        if torch_dtype:
            module = module.to(getattr(torch, torch_dtype))
        return module.eval()

    def io_config_for(
        self, module: torch.nn.Module | None = None, overrides: Mapping[str, Any] | None = None
    ) -> IoConfig:
        merged = {**(self.io_config or {}), **(overrides or {})}
        io = build_io_config(merged, f"{self.json_path}.io_config")
        if io.input_types is None:
            import attrs

            io = attrs.evolve(io, input_types=("float32",) * len(io.input_names))
        return io

    def example_inputs(self, io: IoConfig, vary: bool, module: torch.nn.Module | None = None) -> dict[str, np.ndarray]:
        if not self.dummy_inputs_func:
            return super().example_inputs(io, vary, module)
        # The user's inputs, at the one size the function makes.
        func = self._function("dummy_inputs_func")
        try:
            value = func(self)
        except Exception as exc:
            raise PassRunError(
                f"dummy_inputs_func '{self.dummy_inputs_func}' in model_script '{self.model_script}' raised "
                f"{type(exc).__name__}: {exc}",
                owner=f"{self.json_path}.dummy_inputs_func",
            ) from exc
        return inputs_by_name(value, io, f"{self.json_path}.dummy_inputs_func")


def inputs_by_name(value: Any, io: IoConfig, owner: str) -> dict[str, np.ndarray]:
    """A tensor, a tuple or list (in ``input_names`` order) or a dict by name, as numpy arrays by input name."""
    from olive.data.components import to_numpy

    names = list(io.input_names)
    if isinstance(value, Mapping):
        missing = [n for n in names if n not in value]
        if missing:
            raise PassConfigError(
                f"returned no {', '.join(repr(m) for m in missing)} (it has {', '.join(map(repr, value))})", owner=owner
            )
        return {n: to_numpy(value[n]) for n in names}
    items = list(value) if isinstance(value, tuple | list) else [value]
    if len(items) != len(names):
        raise PassConfigError(f"returned {len(items)} inputs for {len(names)} input_names", owner=owner)
    return {n: to_numpy(v) for n, v in zip(names, items, strict=True)}
