"""Saving ONNX models from passes: output paths, external data params, proto to handler."""

from __future__ import annotations

import contextlib
import functools
import gc
import shutil
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import ModelLoadError, PassConfigError, PassRunError
from olive.model.handler import ONNXModelHandler
from olive.passes.pass_config import PassConfigParam
from olive.paths import OutputFileName, UnsafeName, check_plain_name

if TYPE_CHECKING:
    import onnx
    import onnx_ir

# Protobuf cannot serialize a message of 2 GiB or more; bigger models must keep weights outside.
_PROTOBUF_LIMIT = 2**31 - 1
_CWD_LOCK = threading.Lock()
# Field numbers of ModelProto.graph and GraphProto.initializer in onnx.proto, for the streaming writer.
_MODEL_GRAPH_FIELD = 7
_GRAPH_INITIALIZER_FIELD = 5


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
    *,
    weights_dir: str | Path | None = None,
) -> bool:
    """Write ``model`` to ``output_path``; returns True when weights went to external data.

    ``model`` may still refer to external data files in ``weights_dir`` (a graph loaded without its
    weights, see :func:`load_without_weights` and :func:`copy_external_data`): those tensors are read one
    at a time as they are written, so the weights are never all in memory. Either way the proto is
    written tensor by tensor and no serialized copy of the whole model is made; tensors that went to
    external data are left pointing at the new file.
    """
    import onnx

    output_path = Path(output_path)
    output_path.parent.mkdir(parents=True, exist_ok=True)
    if weights_dir is not None:
        _load_attribute_tensors(model, Path(weights_dir))
    if not save_as_external_data:
        layout = _InlineLayout(model, weights_dir)
        if layout.size < _PROTOBUF_LIMIT:
            layout.write(output_path)
            return False
    location = _external_location(output_path, external_data_name)
    if weights_dir is not None:
        _write_external(model, output_path, location, size_threshold, Path(weights_dir))
        return True
    # onnx writes the tensors one at a time and drops each one's bytes from the proto once written, so no
    # second copy of the weights is made (the proto is left pointing at the file).
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


def _external_location(output_path: Path, external_data_name: str | None, remove_leftover: bool = True) -> str:
    """The external data file's name beside ``output_path``, checked, with a leftover of that name removed."""
    location = external_data_name or f"{output_path.name}.data"
    try:
        check_plain_name(location)
    except UnsafeName as exc:
        raise PassConfigError(
            f"external_data_name '{location}' cannot be used: {exc}; give a plain file name such as 'model.onnx.data'"
        ) from None
    if location.casefold() == output_path.name.casefold():
        # The weights would be written over the model file itself (or, on a case-insensitive disk, onto it).
        raise PassConfigError(
            f"external_data_name '{location}' is the name of the model file itself; give another name, such as "
            f"'{output_path.name}.data'"
        )
    if remove_leftover:
        # onnx appends to an existing data file; the output folder is the pass's own, so a leftover is replaced.
        (output_path.parent / location).unlink(missing_ok=True)
    return location


class _InlineLayout:
    """``model`` as one protobuf file, written one initializer at a time.

    ``onnx.save_model`` serializes the whole message into one bytes object first (and protobuf's
    ``ByteSize`` serializes it once more just to count), a copy of every weight each time. Protobuf's wire
    format lets a message be written as its fields in any order, so this writes the model without its
    graph, then the graph's other fields, then each initializer as its own length-delimited field: the
    same message for any protobuf parser, at the memory of the largest tensor.
    """

    def __init__(self, model: onnx.ModelProto, weights_dir: str | Path | None = None):
        import onnx

        self.model = model
        self.weights_dir = weights_dir
        self.head = _copy_fields(model, onnx.ModelProto(), skip="graph").SerializeToString()
        self.rest = _copy_fields(model.graph, onnx.GraphProto(), skip="initializer").SerializeToString()
        self.sizes = [self._tensor(tensor).ByteSize() for tensor in model.graph.initializer]
        self.tag = _varint(_GRAPH_INITIALIZER_FIELD << 3 | 2)
        self.graph_size = len(self.rest) + sum(len(self.tag) + len(_varint(size)) + size for size in self.sizes)
        graph_header = _varint(_MODEL_GRAPH_FIELD << 3 | 2) + _varint(self.graph_size)
        self.size = len(self.head) + len(graph_header) + self.graph_size

    def write(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            with tmp.open("wb") as out:
                out.write(self.head)
                out.write(_varint(_MODEL_GRAPH_FIELD << 3 | 2) + _varint(self.graph_size) + self.rest)
                for tensor, size in zip(self.model.graph.initializer, self.sizes, strict=True):
                    out.write(self.tag + _varint(size))
                    out.write(self._tensor(tensor).SerializeToString())
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)

    def _tensor(self, tensor: onnx.TensorProto) -> onnx.TensorProto:
        """``tensor`` with its data in it (a loaded copy of one still in ``weights_dir``)."""
        return tensor if self.weights_dir is None else _loaded_copy(tensor, Path(self.weights_dir))


def _loaded_copy(tensor: onnx.TensorProto, weights_dir: Path) -> onnx.TensorProto:
    import onnx
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

    if not uses_external_data(tensor):
        return tensor
    loaded = onnx.TensorProto()
    loaded.CopyFrom(tensor)
    load_external_data_for_tensor(loaded, str(weights_dir))
    return loaded


def _load_attribute_tensors(model: onnx.ModelProto, weights_dir: Path) -> None:
    """Load external tensors held by node attributes (Constant values; few and small in practice)."""
    from onnx.external_data_helper import _get_attribute_tensors, load_external_data_for_tensor, uses_external_data

    for tensor in _get_attribute_tensors(model):
        if uses_external_data(tensor):
            load_external_data_for_tensor(tensor, str(weights_dir))


def _write_external(model: onnx.ModelProto, path: Path, location: str, size_threshold: int, weights_dir: Path) -> None:
    """Save ``model`` with its initializers in ``location``, copying those still in ``weights_dir`` one at a time."""
    import onnx
    from onnx.external_data_helper import uses_external_data

    with (path.parent / location).open("wb") as data:
        for tensor in model.graph.initializer:
            if uses_external_data(tensor):
                raw = _loaded_copy(tensor, weights_dir).raw_data
            elif tensor.HasField("raw_data") and len(tensor.raw_data) >= size_threshold:
                raw = tensor.raw_data
            else:
                continue
            if len(raw) < size_threshold:
                tensor.raw_data = raw
                tensor.data_location = onnx.TensorProto.DEFAULT
                del tensor.external_data[:]
                continue
            # Page-aligned, as onnx's own writer places tensors, so readers may map them.
            offset = -data.tell() % 4096 + data.tell()
            data.seek(offset)
            data.write(raw)
            tensor.ClearField("raw_data")
            del tensor.external_data[:]
            tensor.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", offset), ("length", len(raw))):
                tensor.external_data.add(key=key, value=str(value))
    onnx.save_model(model, str(path))


def weightless_copy(model: onnx.ModelProto, inline_below: int = 64 * 1024) -> onnx.ModelProto:
    """A copy of ``model`` whose initializers of ``inline_below`` bytes or more keep their name, type and
    shape but no data: enough for shape and type inference, at the memory of the graph."""
    import onnx

    copy = _copy_fields(model, onnx.ModelProto(), skip="graph")
    _copy_fields(model.graph, copy.graph, skip="initializer")
    for tensor in model.graph.initializer:
        if tensor.ByteSize() < inline_below:
            copy.graph.initializer.add().CopyFrom(tensor)
        else:
            copy.graph.initializer.add(name=tensor.name, dims=tensor.dims, data_type=tensor.data_type)
    return copy


def _copy_fields(source: Any, target: Any, skip: str) -> Any:
    """``target`` with every set field of ``source`` but ``skip`` copied in."""
    for field, value in source.ListFields():
        if field.name == skip:
            continue
        if field.is_repeated:
            getattr(target, field.name).extend(value)
        elif field.message_type is not None:
            getattr(target, field.name).CopyFrom(value)
        else:
            setattr(target, field.name, value)
    return target


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def require_protobuf_size(model: ONNXModelHandler, tool: str, fix: str, owner: str | None = None) -> None:
    """Raise a :class:`PassRunError` before any work when ``model`` is too big for ``tool``.

    For tools that take the whole model as one protobuf message, which cannot reach 2 GB (weights in
    external data included, since such tools load them into the message): the error says so, with the
    model's size and ``fix``, instead of a protobuf failure midway.
    """
    size = model.size_on_disk
    if size >= _PROTOBUF_LIMIT:
        raise PassRunError(
            f"'{model.model_path}' holds {size / 1e9:.2f} GB, and {tool} takes the whole model as one protobuf "
            f"message, which cannot reach 2 GB ({_PROTOBUF_LIMIT + 1} bytes); {fix}",
            owner=owner,
        )


def release_memory() -> None:
    """Give memory that was freed back to the operating system.

    glibc keeps freed heap memory for reuse, and a pass that loads a model, lets it go and loads the next
    (a library's preprocessing, then its quantizer) would otherwise peak at the sum of its steps rather
    than at the largest one. Elsewhere than on glibc this only collects garbage.
    """
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    import ctypes

    # The running program's own symbols: glibc's malloc_trim where the interpreter links glibc. (Not
    # ctypes.util.find_library, which starts an `ldconfig` process: a fork of this whole process.)
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def load_without_weights(model: ONNXModelHandler | str | Path, inline_below: int = 64 * 1024) -> onnx.ModelProto:
    """The graph of ``model`` with only its small external tensors (under ``inline_below`` bytes) loaded.

    Larger tensors keep pointing at their data files (relative to the model's folder), so tools that read
    the graph, shapes and small constants (shape inference, graph analysis) work on a model of any size at
    the memory of its graph. A file that is not ONNX, or missing data, is a :class:`ModelLoadError`.
    """
    from onnx.external_data_helper import ExternalDataInfo, load_external_data_for_tensor, uses_external_data

    handler = model if isinstance(model, ONNXModelHandler) else ONNXModelHandler(str(model))
    proto = handler.load_model(load_external_data=False)
    folder = str(Path(handler.model_path).parent)
    for tensor in _all_tensors(proto):
        if uses_external_data(tensor) and (ExternalDataInfo(tensor).length or 0) < inline_below:
            try:
                load_external_data_for_tensor(tensor, folder)
            except (OSError, ValueError) as exc:
                raise ModelLoadError(
                    f"ONNX model '{handler.model_path}' cannot read the external data of tensor '{tensor.name}' "
                    f"({exc}); keep the data files beside the model"
                ) from exc
    return proto


@contextlib.contextmanager
def weights_in(folder: str | Path) -> Iterator[None]:
    """Run the body with ``folder`` as the working directory, where ``numpy_helper.to_array`` looks for
    the data of tensors that still refer to external files (their ``base_dir`` defaults to it).

    Libraries that read weights through ``numpy_helper`` (onnxruntime's transformer fusions) then load
    each one when they need it instead of the whole model up front. The working directory belongs to the
    process, so one body at a time runs under this lock.
    """
    with _CWD_LOCK, contextlib.chdir(folder):
        yield


def _all_tensors(proto: onnx.ModelProto) -> Any:
    from onnx.external_data_helper import _get_all_tensors

    return _get_all_tensors(proto)


def copy_external_data(model_path: str | Path, folder: str | Path) -> list[Path]:
    """Copy the external data files of ``model_path`` into ``folder``, under their own names.

    A graph saved into ``folder`` then finds the weights, so a library that only takes a model path (an
    onnxruntime session, onnxoptimizer) can run on a graph changed in memory without the weights ever
    being loaded into this process: the copy goes through the kernel (``sendfile``), not through memory.
    Not hard links: onnx's loader refuses data files that have a second link (a guard against hard-link
    attacks), so a link would make the input itself unreadable to onnx, in every process, while it lasts.
    """
    import onnx
    from onnx.external_data_helper import ExternalDataInfo, uses_external_data

    source = Path(model_path)
    proto = onnx.load(str(source), load_external_data=False)
    names = {ExternalDataInfo(t).location for t in _all_tensors(proto) if uses_external_data(t)}
    folder = Path(folder)
    copied = []
    for name in sorted(names):
        check_plain_name(name)
        origin, target = source.parent / name, folder / name
        if not origin.is_file():
            raise ModelLoadError(
                f"ONNX model '{source}' refers to external data '{name}' that is missing; keep the data files "
                "beside the model"
            )
        shutil.copyfile(origin, target)
        copied.append(target)
    return copied


def model_proto_to_olive_model(
    model_proto: onnx.ModelProto,
    output_model_path: str | Path,
    external_data_config: Any = None,
    check_model: bool = False,
    external_initializers_file_name: str | None = None,
    constant_inputs_file_name: str | None = None,
    *,
    weights_dir: str | Path | None = None,
) -> ONNXModelHandler:
    """Save a proto under ``output_model_path`` (a folder or ``.onnx`` path) and return its handler.

    ``external_data_config`` is the pass's config (or any mapping) holding the params of
    :func:`get_external_data_config`; missing keys take their defaults. ``weights_dir``: where tensors the
    proto still refers to live (see :func:`model_proto_to_file`).
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
        weights_dir=weights_dir,
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


def ir_model_to_olive_model(
    model: onnx_ir.Model,
    output_model_path: str | Path,
    external_data_config: Any = None,
) -> ONNXModelHandler:
    """Save an ONNX IR model (``onnx_ir``, which onnxscript's ``ir`` is) under ``output_model_path`` (a folder or
    ``.onnx`` path) and return its handler: Microsoft Olive's helper of this name.

    ``external_data_config`` as for :func:`model_proto_to_olive_model` (``save_as_external_data``,
    ``external_data_name``); weights over protobuf's 2 GiB limit go to external data regardless.
    """
    import onnx_ir

    path = Path(resolve_onnx_path(output_model_path))
    weights = sum(
        value.const_value.nbytes for value in model.graph.initializers.values() if value.const_value is not None
    )
    if bool(_get(external_data_config, "save_as_external_data", False)) or weights >= _PROTOBUF_LIMIT:
        # onnx_ir writes the data file whole (not appending), and the model may still read its weights from a
        # file of that name: nothing is removed first.
        location = _external_location(path, _get(external_data_config, "external_data_name", None), False)
        onnx_ir.save(model, str(path), external_data=location)
        return ONNXModelHandler(model_path=str(path.parent), onnx_file_name=path.name)
    # Weights the model still reads from its source's external data would be saved as references to a file that
    # is not beside the new model: they are read in first.
    onnx_ir.external_data.load_to_model(model)
    onnx_ir.save(model, str(path))
    return ONNXModelHandler(model_path=str(path))


def fix_dim_params(model_proto: onnx.ModelProto, dim_params: list[str], dim_values: list[int]) -> None:
    """Give the symbolic dimensions ``dim_params`` the sizes ``dim_values`` in ``model_proto`` (in place), and the
    outputs the fixed shapes that follow: Microsoft Olive's helper of this name.

    Raises :class:`PassConfigError` when the two lists differ in length or a size is negative.
    """
    from onnxruntime.tools.onnx_model_utils import make_dim_param_fixed

    if len(dim_params) != len(dim_values):
        raise PassConfigError(
            f"dim_param has {len(dim_params)} name(s) but dim_value has {len(dim_values)} value(s); give one value "
            "per name"
        )
    negative = [f"{name}={value}" for name, value in zip(dim_params, dim_values, strict=True) if value < 0]
    if negative:
        raise PassConfigError(f"dim_value must be >= 0; got {', '.join(negative)}")
    for name, value in zip(dim_params, dim_values, strict=True):
        make_dim_param_fixed(model_proto.graph, name, value)
    _fix_output_shapes(model_proto)


def fix_input_shapes(model_proto: onnx.ModelProto, input_names: list[str], input_shapes: list[list[int]]) -> None:
    """Give the inputs ``input_names`` the fixed shapes ``input_shapes`` in ``model_proto`` (in place), and the
    outputs the fixed shapes that follow: Microsoft Olive's helper of this name.

    Raises :class:`PassConfigError` when the two lists differ in length, a size is not positive, or a name is
    not an input of the model.
    """
    from onnxruntime.tools.onnx_model_utils import make_input_shape_fixed

    if len(input_names) != len(input_shapes):
        raise PassConfigError(
            f"input_name has {len(input_names)} name(s) but input_shape has {len(input_shapes)} shape(s); give one "
            "shape per input"
        )
    bad = [
        f"{name}: {shape}" for name, shape in zip(input_names, input_shapes, strict=True) if min(shape, default=1) <= 0
    ]
    if bad:
        raise PassConfigError(f"input_shape sizes must be > 0; got {'; '.join(bad)}")
    inputs = [value.name for value in model_proto.graph.input]
    unknown = [name for name in input_names if name not in inputs]
    if unknown:
        raise PassConfigError(
            f"the model has no input {', '.join(map(repr, unknown))}; its inputs: {', '.join(inputs)}"
        )
    for name, shape in zip(input_names, input_shapes, strict=True):
        make_input_shape_fixed(model_proto.graph, name, shape)
    _fix_output_shapes(model_proto)


def _fix_output_shapes(model_proto: onnx.ModelProto) -> None:
    """Outputs whose shapes shape inference now fixes get those shapes (onnxruntime's symbolic inference: it knows
    the contrib ops and large models)."""
    from onnxruntime.tools.onnx_model_utils import is_fixed_size_tensor
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    inferred = SymbolicShapeInference.infer_shapes(model_proto, auto_merge=True, guess_output_rank=True)
    for index, output in enumerate(model_proto.graph.output):
        if not is_fixed_size_tensor(output):
            found = inferred.graph.output[index]
            if is_fixed_size_tensor(found):
                output.type.tensor_type.shape.CopyFrom(found.type.tensor_type.shape)
