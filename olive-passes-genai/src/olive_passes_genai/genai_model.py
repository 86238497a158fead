"""``GenAIModel``: a folder that ``onnxruntime_genai.Model(folder)`` loads as it is.

The folder holds the ONNX decoder (with its external data), ``genai_config.json`` (which names the decoder's
file, its inputs and outputs and the search settings) and the tokenizer files. ``ModelBuilder`` writes one; a
weight-only pass given one writes another with the same ``genai_config.json`` and tokenizer. In a workflow::

    "input_model": {"type": "GenAIModel", "model_path": "models/qwen2-int4"}

The handler is an ONNX model handler whose ``model_path`` is the decoder file, so every ONNX pass and metric
takes it; a pass that rewrites the decoder hands its output to :meth:`GenAIModelHandler.with_graph` to keep the
folder servable; :meth:`GenAIModelHandler.folder_files` lists every file of the folder, which is what the engine
copies into ``output_dir`` and what the cache key hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from olive.config_errors import user_path
from olive.exceptions import ModelLoadError, WorkflowConfigError, closest_match_hint
from olive.model.handler import ONNXModelHandler

GENAI_CONFIG = "genai_config.json"
#: The tokenizer files onnxruntime-genai reads (``tokenizer.json`` is the one it cannot do without).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")
_FIELDS = ("model_path", "onnx_file_name", "inference_settings", "model_attributes")


def read_genai_config(folder: str | Path) -> dict[str, Any]:
    """The folder's ``genai_config.json``; a :class:`ModelLoadError` naming the file when it is missing or bad."""
    path = Path(folder) / GENAI_CONFIG
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelLoadError(
            f"'{folder}' has no {GENAI_CONFIG}: it is not an onnxruntime-genai model folder; build one with the "
            "ModelBuilder pass"
        ) from None
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot read '{path}' ({exc}); rebuild the folder with ModelBuilder") from exc
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise ModelLoadError(f"'{path}' has no \"model\" object; rebuild the folder with ModelBuilder")
    return data


def decoder_file_name(config: Mapping[str, Any]) -> str:
    """The decoder's ONNX file name ``genai_config.json`` gives (``model.decoder.filename``)."""
    name = (config.get("model", {}).get("decoder") or {}).get("filename")
    return str(name) if name else "model.onnx"


class GenAIModelHandler(ONNXModelHandler):
    """An onnxruntime-genai model folder (see the module docstring)."""

    model_type = "GenAIModel"

    def __init__(
        self,
        model_path: str | Path,
        onnx_file_name: str | None = None,
        inference_settings: Mapping[str, Any] | None = None,
        model_attributes: Mapping[str, Any] | None = None,
        **onnx_fields: Any,
    ):
        folder = Path(model_path)
        # A path to the decoder file itself is taken as its folder (model_config.json of older runs wrote one).
        if folder.is_file():
            onnx_file_name = onnx_file_name or folder.name
            folder = folder.parent
        super().__init__(
            str(folder),
            onnx_file_name=onnx_file_name,
            inference_settings=inference_settings,
            model_attributes=model_attributes,
            **onnx_fields,
        )

    @classmethod
    def from_config(cls, fields: Mapping[str, Any], json_path: str, base_dir: Path) -> GenAIModelHandler:
        for key in fields:
            if key not in _FIELDS:
                raise WorkflowConfigError(
                    f"unknown key for GenAIModel{closest_match_hint(str(key), _FIELDS)}; valid keys: "
                    f"{', '.join(_FIELDS)}",
                    owner=f"{json_path}.{key}",
                )
        if fields.get("model_path") is None:
            raise WorkflowConfigError(
                f"missing; give the folder that holds {GENAI_CONFIG}, the ONNX decoder and the tokenizer",
                owner=f"{json_path}.model_path",
            )
        path = user_path(fields["model_path"], f"{json_path}.model_path", base_dir, must_exist=True)
        handler = cls(str(path), **{k: v for k, v in fields.items() if k != "model_path"})
        handler.json_path = json_path
        return handler

    @property
    def folder(self) -> Path:
        """The model's folder."""
        return Path(self._model_path or "")

    def genai_config(self) -> dict[str, Any]:
        return read_genai_config(self.folder)

    def _resolve_file(self) -> str:
        if self.onnx_file_name is None and self.folder.is_dir():
            # genai_config.json says which file is the decoder (a folder may hold an embedding model too).
            self.onnx_file_name = decoder_file_name(self.genai_config())
        return super()._resolve_file()

    def validate(self) -> None:
        """``genai_config.json``, the decoder it names and ``tokenizer.json`` are in the folder."""
        owner = f"{getattr(self, 'json_path', 'input_model')}.model_path"
        if not self.folder.is_dir():
            raise WorkflowConfigError(
                f"'{self.folder}' is not a folder; give the folder ModelBuilder wrote", owner=owner
            )
        try:
            self.genai_config()
            super().validate()
        except ModelLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner=owner) from exc
        if not (self.folder / "tokenizer.json").is_file():
            raise WorkflowConfigError(
                f"'{self.folder}' has no tokenizer.json, which onnxruntime-genai needs; copy the model's tokenizer "
                "files into it (tokenizer.save_pretrained(folder))",
                owner=owner,
            )

    def folder_files(self) -> list[tuple[Path, str]]:
        """``(path, name relative to the folder)`` of every file in the folder: what a copy of the model holds."""
        root = self.folder
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if path.is_file() and not path.is_symlink():
                    found.append((path, path.relative_to(root).as_posix()))
        return found

    def content_hash(self) -> str:
        """sha256 of every file of the folder (names and bytes): the tokenizer and search settings change what
        the model generates as much as its weights."""
        from olive.cache.store import hash_file

        sha = hashlib.sha256(b"GenAIModel\0")
        for path, rel in self.folder_files():
            sha.update(f"{rel}\0{hash_file(path)}\0".encode())
        adapters = (self.model_attributes or {}).get("adapters")
        if isinstance(adapters, dict) and adapters:
            # Adapters still in their PEFT folders (ModelBuilder's output) are part of what a later pass writes.
            digests = {str(k): v.get("sha256") if isinstance(v, dict) else str(v) for k, v in adapters.items()}
            sha.update(json.dumps(digests, sort_keys=True).encode())
        return sha.hexdigest()

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data["type"] = self.model_type
        return data

    def with_graph(self, onnx_model: ONNXModelHandler) -> GenAIModelHandler:
        """``onnx_model`` (a pass's rewrite of the decoder, in its own folder) as a folder of this type: what
        olive-passes-quant's weight-only passes return for a GenAIModel (:func:`genai_folder_from_onnx`)."""
        return genai_folder_from_onnx(self, onnx_model)

    def text_feeds(self, config: Any, owner: str) -> list[dict[str, Any]]:
        """Prefill feeds of the decoder for the windows of a pass's text (``data_config`` or ``data_path``,
        ``window``, ``max_windows``), tokenized with the folder's tokenizer: what olive-passes-quant's
        ``OnnxGptqQuantization`` calibrates on."""
        # Here, not at the top: the feeds need the tokenizer (onnxruntime-genai, through the metrics' decoder), and
        # the model type is resolved without it.
        from olive_passes_genai.prefill import text_feeds

        return text_feeds(self, config, owner)


def genai_folder_from_onnx(source: GenAIModelHandler, onnx_model: ONNXModelHandler) -> GenAIModelHandler:
    """A :class:`GenAIModelHandler` for ``onnx_model`` (a pass's output, in its own folder), with the source
    folder's ``genai_config.json`` and tokenizer files copied beside it: a weight-only pass keeps the folder
    servable. Files already in the output folder are left as they are."""
    target = Path(onnx_model.model_path).parent
    config = source.genai_config()
    config["model"]["decoder"]["filename"] = Path(onnx_model.model_path).name
    ours = {Path(onnx_model.model_path).name, *(Path(f).name for f in onnx_model.external_data_files())}
    skip = {Path(source.model_path).name, *(Path(f).name for f in source.external_data_files()), GENAI_CONFIG}
    for path, rel in source.folder_files():
        if rel in skip or rel in ours or path.suffix == ".onnx":
            continue
        destination = target / rel
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
    (target / GENAI_CONFIG).write_text(json.dumps(config, indent=4), encoding="utf-8")
    return GenAIModelHandler(
        str(target),
        onnx_file_name=Path(onnx_model.model_path).name,
        inference_settings=source.inference_settings,
        model_attributes=source.model_attributes,
    )
