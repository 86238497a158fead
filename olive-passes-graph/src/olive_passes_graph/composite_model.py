"""``CompositeModel``: an ONNX model split into components that run one after another (SplitModel's output).

Microsoft Olive's model type of that name: ``{"type": "CompositeModel", "config": {"model_path": FOLDER,
"model_components": [{"type": "ONNXModel", "config": {...}}, ...], "model_component_names": [...]}}``. The
components live in the folder; each is an ONNX model whose inputs are the original inputs or outputs of earlier
components. ComposeOnnxModels joins them back into one model.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from olive.config_errors import expect, user_path
from olive.exceptions import ModelLoadError, WorkflowConfigError
from olive.model.handler import OliveModelHandler, ONNXModelHandler
from olive.model.types import handler_from_config, model_from_json

_FIELDS = ("model_path", "model_components", "model_component_names", "model_attributes")


class CompositeModelHandler(OliveModelHandler):
    """ONNX components run in order, ``model_component_names[i]`` naming ``model_components[i]``."""

    model_type = "CompositeModel"

    def __init__(
        self,
        model_components: Sequence[ONNXModelHandler | Mapping[str, Any]],
        model_component_names: Sequence[str],
        model_path: str | Path | None = None,
        model_attributes: Mapping[str, Any] | None = None,
    ):
        components = [
            c if isinstance(c, OliveModelHandler) else model_from_json(_anchored(c, model_path))
            for c in model_components
        ]
        if len(components) != len(model_component_names):
            raise ModelLoadError(
                f"a CompositeModel has {len(components)} components but {len(model_component_names)} names; give "
                "one name per component"
            )
        for name, component in zip(model_component_names, components, strict=True):
            if not isinstance(component, ONNXModelHandler):
                raise ModelLoadError(f"component '{name}' is a {component.model_type}; components must be ONNX models")
        if model_path is None and components:
            model_path = Path(components[0].model_path).parent
        super().__init__(model_path, model_attributes)
        self.model_components: list[ONNXModelHandler] = components
        self.model_component_names: list[str] = list(model_component_names)

    @classmethod
    def from_config(cls, fields: Mapping[str, Any], json_path: str, base_dir: Path) -> CompositeModelHandler:
        for key in fields:
            if key not in _FIELDS:
                raise WorkflowConfigError(
                    f"unknown key for CompositeModel; valid keys: {', '.join(_FIELDS)}", owner=f"{json_path}.{key}"
                )
        components = expect(
            fields.get("model_components"),
            list,
            f"{json_path}.model_components",
            'a list of {"type": "ONNXModel", "model_path": ...} objects',
        )
        names = fields.get("model_component_names") or [f"component_{i}" for i in range(len(components))]
        expect(names, list, f"{json_path}.model_component_names", "a list of names, one per component")
        handlers = [
            handler_from_config(item, f"{json_path}.model_components[{i}]", base_dir)
            for i, item in enumerate(components)
        ]
        path = fields.get("model_path")
        if path is not None:
            path = user_path(path, f"{json_path}.model_path", base_dir, must_exist=True)
        try:
            return cls(handlers, names, path, fields.get("model_attributes"))
        except ModelLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner=f"{json_path}.model_components") from exc

    def components(self) -> list[tuple[str, ONNXModelHandler]]:
        return list(zip(self.model_component_names, self.model_components, strict=True))

    def validate(self) -> None:
        for component in self.model_components:
            component.validate()

    def _extra_json(self) -> dict[str, Any]:
        return {
            # Component paths are relative to the folder, so the model can move (into the cache, to output_dir).
            "model_components": [
                _relative(component.to_json(), self.model_path) for component in self.model_components
            ],
            "model_component_names": list(self.model_component_names),
            "model_attributes": self.model_attributes or None,
        }

    def component_files(self) -> list[tuple[str, Path]]:
        """``(name, path)`` of each component's file and external data files."""
        files = []
        for name, component in self.components():
            files.append((name, Path(component.model_path)))
            files.extend((name, Path(extra)) for extra in component.external_data_files())
        return files

    def folder_files(self) -> list[tuple[Path, str]]:
        """``(path, name relative to the folder)`` of every component file: what a copy of the model holds."""
        root = Path(self.model_path)
        found = []
        for _, path in self.component_files():
            rel = os.path.relpath(path, root)
            if rel.startswith(".."):
                raise ModelLoadError(f"CompositeModel component file '{path}' is outside its folder '{root}'")
            found.append((path, Path(rel).as_posix()))
        return found

    def content_hash(self) -> str:
        from olive.cache.store import hash_model

        sha = hashlib.sha256(b"CompositeModel\0")
        for name, component in self.components():
            sha.update(f"{name}\0{hash_model(component)}\0".encode())
        return sha.hexdigest()

    @property
    def size_on_disk(self) -> int:
        return sum(component.size_on_disk for component in self.model_components)

    def prepare_session(self, *args: Any, **kwargs: Any) -> Any:
        raise ModelLoadError(
            f"a CompositeModel ({', '.join(self.model_component_names)}) is not run as one onnxruntime session; "
            "add a ComposeOnnxModels pass to join its components into one model first"
        )


def _anchored(component: Mapping[str, Any], folder: str | Path | None) -> Mapping[str, Any]:
    """``component``'s JSON with a relative ``model_path`` taken inside ``folder``."""
    fields = dict(component.get("config") or {})
    path = fields.get("model_path")
    if folder is None or path is None or Path(path).is_absolute():
        return component
    return {**component, "config": {**fields, "model_path": str(Path(folder) / path)}}


def _relative(component: dict[str, Any], folder: str | None) -> dict[str, Any]:
    fields = dict(component.get("config") or {})
    path = fields.get("model_path")
    if folder is None or path is None:
        return component
    inside = Path(path).resolve()
    root = Path(folder).resolve()
    if inside != root and root not in inside.parents:
        return component
    return {**component, "config": {**fields, "model_path": inside.relative_to(root).as_posix() or "."}}
