"""``OpenVINOModel``: a folder holding one OpenVINO IR, ``NAME.xml`` (the graph) and ``NAME.bin`` (its weights).

Microsoft Olive's model type of that name. In a workflow::

    "input_model": {"type": "OpenVINOModel", "model_path": "models/bert-ov"}

OpenVINOConversion writes one; the OpenVINO passes read one and write another. The folder may hold other
files beside the IR (a tokenizer, a generation config); they travel with it. :meth:`folder_files` lists every
file of the folder: what the engine copies into ``output_dir`` and what the cache key hashes. The model runs
through :meth:`prepare_session` (an :class:`~olive_passes_openvino.session.OpenVINOSession`), so the metrics
time and score it as they do an ONNX model.
"""

from __future__ import annotations

import copy
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.config_errors import expect
from olive.exceptions import ModelLoadError, WorkflowConfigError
from olive.model.handler import OliveModelHandler, signature_fields
from olive_passes_openvino.settings import compile_settings

if TYPE_CHECKING:
    import openvino

    from olive_passes_openvino.session import OpenVINOSession

#: IRs of a tokenizer (openvino-tokenizers) that a model folder may hold beside the model's own.
TOKENIZER_IRS = ("openvino_tokenizer", "openvino_detokenizer")


class OpenVINOModelHandler(OliveModelHandler):
    """An OpenVINO IR folder (see the module docstring).

    :param model_path: the folder, or its ``.xml`` file.
    :param inference_settings: how it is compiled (:mod:`olive_passes_openvino.settings`).
    :param model_attributes: free-form facts passes record about the model.
    """

    model_type = "OpenVINOModel"
    # The evaluator runs it (prepare_session), so an IR input model is what every metric compares with.
    evaluable: ClassVar[bool] = True

    def __init__(
        self,
        model_path: str | Path,
        inference_settings: Mapping[str, Any] | None = None,
        model_attributes: Mapping[str, Any] | None = None,
    ):
        if model_path is None or str(model_path) == "":
            raise ModelLoadError("an OpenVINO model needs a model_path: the folder holding its .xml and .bin files")
        path = Path(model_path)
        # The .xml itself names its folder (a path copied from a file browser, or from openvino's own examples).
        if path.suffix == ".xml" and path.is_file():
            path = path.parent
        super().__init__(str(path), model_attributes)
        self.inference_settings: dict[str, Any] | None = (
            copy.deepcopy(dict(inference_settings)) if inference_settings else None
        )
        self._io_config: dict[str, Any] | None = None

    @classmethod
    def from_config(cls, fields: Mapping[str, Any], json_path: str, base_dir: Path) -> OpenVINOModelHandler:
        checked = signature_fields(
            cls,
            fields,
            json_path,
            base_dir,
            missing={"model_path": "give the folder that holds the model's .xml and .bin files"},
        )
        for key in ("inference_settings", "model_attributes"):
            if checked.get(key) is not None:
                expect(checked[key], dict, f"{json_path}.{key}", "an object")
        try:
            compile_settings(checked.get("inference_settings"), f"{json_path}.inference_settings")
        except ModelLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner=exc.owner) from exc
        handler = cls(**checked)
        try:
            handler.validate()
        except ModelLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner=f"{json_path}.model_path") from exc
        return handler

    # ------------------------------------------------------------------------------------- files

    @property
    def folder(self) -> Path:
        return Path(self._model_path or "")

    @property
    def model_config(self) -> dict[str, str]:
        """Microsoft Olive's view of the folder: ``model_name`` (the IR's stem), ``model`` (its .xml) and
        ``weights`` (its .bin)."""
        xml = self.xml_path
        return {"model_name": xml.stem, "model": str(xml.resolve()), "weights": str(xml.with_suffix(".bin").resolve())}

    @property
    def xml_path(self) -> Path:
        """The IR's ``.xml`` file (the folder must hold exactly one, with its ``.bin`` beside it)."""
        folder = self.folder
        if not folder.is_dir():
            raise ModelLoadError(
                f"OpenVINO model '{folder}' is not a folder; give the folder holding the model's .xml and .bin files"
            )
        # optimum-intel writes the tokenizer's own IRs beside the model's.
        xmls = sorted(p for p in folder.glob("*.xml") if p.is_file() and p.stem not in TOKENIZER_IRS)
        if not xmls:
            raise ModelLoadError(
                f"OpenVINO model folder '{folder}' holds no .xml file; convert a model into it with the "
                "OpenVINOConversion pass (or openvino.save_model)"
            )
        if len(xmls) > 1:
            raise ModelLoadError(
                f"OpenVINO model folder '{folder}' holds {len(xmls)} .xml files ({', '.join(p.name for p in xmls)}); "
                "keep one model per folder"
            )
        weights = xmls[0].with_suffix(".bin")
        if not weights.is_file():
            raise ModelLoadError(
                f"OpenVINO model folder '{folder}' has {xmls[0].name} but not its weights {weights.name}; keep the "
                ".bin file beside the .xml"
            )
        return xmls[0]

    def validate(self) -> None:
        """The folder holds one ``.xml`` and its ``.bin`` (openvino is not imported)."""
        xml = self.xml_path
        with xml.open("rb") as handle:
            head = handle.read(512)
        if b"<net" not in head:
            raise ModelLoadError(f"'{xml}' is not an OpenVINO IR (no <net> element at its start); check the file")

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
        """sha256 of every file of the folder (names and bytes)."""
        from olive.cache.store import hash_file

        sha = hashlib.sha256(b"OpenVINOModel\0")
        for path, rel in self.folder_files():
            sha.update(f"{rel}\0{hash_file(path)}\0".encode())
        return sha.hexdigest()

    @property
    def size_on_disk(self) -> int:
        """Bytes of the IR (``.xml`` plus ``.bin``)."""
        xml = self.xml_path
        return xml.stat().st_size + xml.with_suffix(".bin").stat().st_size

    # ------------------------------------------------------------------------------------- running

    def load_model(self) -> openvino.Model:
        """The IR as an ``openvino.Model``."""
        import openvino as ov

        xml = self.xml_path
        try:
            return ov.Core().read_model(str(xml), str(xml.with_suffix(".bin")))
        except Exception as exc:  # openvino raises RuntimeError for a file it cannot parse
            raise ModelLoadError(f"OpenVINO cannot read '{xml}' ({type(exc).__name__}: {exc}); check the file") from exc

    def get_io_config(self) -> dict[str, Any]:
        """Input/output names, shapes (ints, ``"?"`` for a dynamic dimension) and numpy dtype names."""
        if self._io_config is None:
            model = self.load_model()

            def describe(ports: Sequence[Any]) -> tuple[list[str], list[list[int | str]], list[str]]:
                names, shapes, types = [], [], []
                for port in ports:
                    names.append(port.any_name)
                    shapes.append([d.get_length() if d.is_static else "?" for d in port.get_partial_shape()])
                    types.append(str(port.get_element_type().to_dtype()))
                return names, shapes, types

            input_names, input_shapes, input_types = describe(model.inputs)
            output_names, output_shapes, output_types = describe(model.outputs)
            self._io_config = {
                "input_names": input_names,
                "input_shapes": input_shapes,
                "input_types": input_types,
                "output_names": output_names,
                "output_shapes": output_shapes,
                "output_types": output_types,
            }
        return copy.deepcopy(self._io_config)

    def prepare_session(
        self,
        inference_settings: Mapping[str, Any] | None = None,
        device: str | None = None,
        execution_providers: Sequence[Any] | str | None = None,
        rank: int | None = None,
    ) -> OpenVINOSession:
        """The model compiled by OpenVINO for ``inference_settings`` (else the handler's own).

        ``execution_providers`` are onnxruntime's and do not apply: the device is ``device_name``.
        """
        from olive_passes_openvino.session import OpenVINOSession

        self.validate()
        return OpenVINOSession(self.xml_path, inference_settings or self.inference_settings)

    def _extra_json(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.inference_settings:
            extra["inference_settings"] = self.inference_settings
        if self.model_attributes:
            extra["model_attributes"] = self.model_attributes
        return extra


def save_ir(
    model: openvino.Model, folder: str | Path, name: str, compress_to_fp16: bool = False
) -> OpenVINOModelHandler:
    """Write ``model`` as ``folder/NAME.xml`` + ``NAME.bin`` (a fresh folder of a pass's output) and return its
    handler."""
    import openvino as ov

    from olive.paths import UnsafeName, check_plain_name

    try:
        check_plain_name(f"{name}.xml")
    except UnsafeName as exc:
        raise ModelLoadError(
            f"model_name {name!r} is not a plain file name ({exc}); give a name such as 'ov_model'"
        ) from None
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    ov.save_model(model, str(target / f"{name}.xml"), compress_to_fp16=compress_to_fp16)
    return OpenVINOModelHandler(str(target))
