"""Saving ONNX models from passes: output paths, external data params, proto to handler."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassConfigError
from olive.model.handler import ONNXModelHandler
from olive.passes.pass_config import PassConfigParam
from olive.paths import OutputFileName, UnsafeName, check_plain_name

if TYPE_CHECKING:
    import onnx

# Protobuf cannot serialize a message of 2 GiB or more; bigger models must keep weights outside.
_PROTOBUF_LIMIT = 2**31 - 1


def resolve_onnx_path(file_or_dir_path: str | Path, model_filename: str = "model.onnx") -> str:
    """``<dir>/model.onnx`` for a folder path, or the path itself when it already ends in ``.onnx``.

    The parent folder is created.
    """
    path = Path(file_or_dir_path)
    if path.suffix != ".onnx":
        path = path / model_filename
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


def get_external_data_config() -> dict[str, PassConfigParam]:
    """The params every ONNX-writing pass offers for saving weights as external data."""
    return {
        "save_as_external_data": PassConfigParam(
            type_=bool,
            default_value=False,
            description="Save weights in a separate file (needed above 2 GB).",
        ),
        "all_tensors_to_one_file": PassConfigParam(
            type_=bool, default_value=True, description="Put every external tensor in one file."
        ),
        "external_data_name": PassConfigParam(
            type_=OutputFileName | None,
            default_value=None,
            description="Name of the external data file (default: '<model file>.data').",
        ),
        "size_threshold": PassConfigParam(
            type_=int, default_value=1024, description="Tensors smaller than this many bytes stay inline."
        ),
        "convert_attribute": PassConfigParam(
            type_=bool, default_value=False, description="Also move tensor attributes to external data."
        ),
    }


def _get(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    if isinstance(config, Mapping):
        return config.get(key, default)
    return getattr(config, key, default)


def model_proto_to_file(
    model: onnx.ModelProto,
    output_path: str | Path,
    save_as_external_data: bool = False,
    all_tensors_to_one_file: bool = True,
    external_data_name: str | None = None,
    size_threshold: int = 1024,
    convert_attribute: bool = False,
) -> bool:
    """Write ``model`` to ``output_path``; returns True when weights went to external data."""
    import onnx

    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    if not save_as_external_data and model.ByteSize() < _PROTOBUF_LIMIT:
        onnx.save_model(model, str(output_path))
        return False
    location = external_data_name or f"{output_path.name}.data"
    try:
        check_plain_name(location)
    except UnsafeName as exc:
        raise PassConfigError(
            f"external_data_name '{location}' cannot be used: {exc}; give a plain file name such as 'model.onnx.data'"
        ) from None
    # onnx appends to an existing data file; the output folder is the pass's own, so a leftover is replaced.
    (output_path.parent / location).unlink(missing_ok=True)
    onnx.save_model(
        model,
        str(output_path),
        save_as_external_data=True,
        all_tensors_to_one_file=all_tensors_to_one_file,
        location=location,
        size_threshold=size_threshold,
        convert_attribute=convert_attribute,
    )
    return True


def model_proto_to_olive_model(
    model_proto: onnx.ModelProto,
    output_model_path: str | Path,
    external_data_config: Any = None,
    check_model: bool = False,
    external_initializers_file_name: str | None = None,
    constant_inputs_file_name: str | None = None,
) -> ONNXModelHandler:
    """Save a proto under ``output_model_path`` (a folder or ``.onnx`` path) and return its handler.

    ``external_data_config`` is the pass's config (or any mapping) holding the params of
    :func:`get_external_data_config`; missing keys take their defaults.
    """
    path = Path(resolve_onnx_path(output_model_path))
    has_external = model_proto_to_file(
        model_proto,
        path,
        save_as_external_data=bool(_get(external_data_config, "save_as_external_data", False)),
        all_tensors_to_one_file=bool(_get(external_data_config, "all_tensors_to_one_file", True)),
        external_data_name=_get(external_data_config, "external_data_name", None),
        size_threshold=int(_get(external_data_config, "size_threshold", 1024)),
        convert_attribute=bool(_get(external_data_config, "convert_attribute", False)),
    )
    if check_model:
        import onnx

        onnx.checker.check_model(str(path))
    return ONNXModelHandler(
        model_path=str(path.parent) if has_external else str(path),
        onnx_file_name=path.name if has_external else None,
        external_initializers_file_name=external_initializers_file_name,
        constant_inputs_file_name=constant_inputs_file_name,
    )
