"""``ExtractAdapters``: a decoder's LoRA weights become graph inputs, and each adapter becomes a file of its own.

Microsoft Olive's pass of the same name and params, on the onnxruntime-genai folder ``ModelBuilder`` writes from
an ``HfModel`` with adapters (whose builder writes each adapted MatMul's ``lora_A`` / ``lora_B`` as initializers,
``model.layers.0.attn.q_proj.lora_A.MatMul.weight`` ...):

- ``make_inputs`` (default true): the LoRA weights become inputs of the decoder. False keeps them as
  initializers: the model runs with the adapter it was built with, and the files are still written.
- ``dynamic_lora_r`` (default true): the rank axis of those inputs is free (``lora_r``), so adapters of any rank
  fit the one base; false fixes it at the built adapter's rank, and adapters of another rank are refused.
- ``optional_inputs`` (default true): each input keeps a default initializer, empty ``[in, 0]`` / ``[0, out]``
  (zeros at the fixed rank when ``dynamic_lora_r`` is false), so the base runs as the base with no adapter.
- ``save_format``: ``onnx_adapter`` (default; ``onnxruntime.AdapterFormat``, what ``onnxruntime_genai.Adapters``
  and ``onnxruntime.LoraAdapter`` load), ``numpy`` (``.npz``) or ``safetensors``.

One file per adapter, ``<name>.<ext>`` beside the decoder: the one built in (its initializers as they are, B
already scaled by the builder) and every other adapter of the ``HfModel`` (read from its PEFT folder, B scaled by
``lora_alpha / r``, or ``/ sqrt(r)`` with rsLoRA, transposed to the MatMul's ``[in, r]`` / ``[r, out]``), each name
checked against the decoder's adapter inputs and their shapes before anything is written. The output is a
``GenAIModel`` whose ``model_attributes`` record ``adapter_inputs`` (name -> shape) and ``adapters`` (name -> file),
with Olive's ``constant_inputs`` and ``additional_files``; ``genai_config.json`` and the tokenizer are kept.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Mapping
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import model_proto_to_olive_model
from olive_passes_genai.genai_model import (
    GENAI_CONFIG,
    GenAIModelHandler,
    decoder_file_name,
    genai_folder_from_onnx,
    read_genai_config,
)
from olive_passes_torch.adapters import read_adapter_config

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

SAVE_FORMATS = {"onnx_adapter": ".onnx_adapter", "numpy": ".npz", "safetensors": ".safetensors"}
#: The rank axis of adapter inputs when ``dynamic_lora_r`` is on.
RANK_AXIS = "lora_r"
# A LoRA weight as the builder names it: <module>.lora_A.MatMul.weight (torch exports: <module>.lora_A.weight).
_ONNX_LORA = re.compile(r"^(?P<module>.+)\.lora_(?P<which>[AB])(?:\.MatMul)?\.weight$")
_PEFT_LORA = re.compile(r"^(?:base_model\.model\.)?(?P<module>.+)\.lora_(?P<which>[AB])(?:\.default)?\.weight$")
# The builder's module names for Hugging Face ones (attention is "attn", the rest keep their names).
_BUILDER_NAMES = ((".self_attn.", ".attn."),)
#: The file an adapter of unknown name is written to (Olive's name).
UNNAMED = "adapter_weights"


class ExtractAdapters(Pass):
    """Turn an onnxruntime-genai decoder's LoRA weights into inputs and write one adapter file per adapter."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("GenAIModel",)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "adapter_type": PassConfigParam(
                type_=str, default_value="lora", description="Type of adapter to extract: lora (the only one here)."
            ),
            "make_inputs": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Make the adapter weights inputs of the model (false: they stay initializers and the "
                "model keeps the adapter it was built with).",
            ),
            "dynamic_lora_r": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Free rank axis (lora_r) on the adapter inputs, so adapters of any rank fit.",
            ),
            "optional_inputs": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Give each adapter input an empty default (rank 0), so the model runs as the base when "
                "no adapter is active.",
            ),
            "save_format": PassConfigParam(
                type_=str,
                default_value="onnx_adapter",
                description=f"Format of the adapter files: {', '.join(SAVE_FORMATS)}.",
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if str(config.adapter_type).lower() != "lora":
            raise PassParamError(
                f"param 'adapter_type' is {config.adapter_type!r}; only lora is extracted here", params="adapter_type"
            )
        if config.save_format not in SAVE_FORMATS:
            raise PassParamError(
                f"param 'save_format' is {config.save_format!r}; use one of {', '.join(SAVE_FORMATS)}",
                params="save_format",
            )

    def _run_for_config(
        self, model: OliveModelHandler, config: BasePassConfig, output_model_path: str
    ) -> GenAIModelHandler:
        import onnx

        owner = self.config_owner()
        proto = onnx.load(str(model.model_path), load_external_data=True)
        lora = lora_initializers(proto.graph)
        quantized = [n.name for n in proto.graph.node if n.op_type == "MatMulNBits" and "/lora_" in n.name]
        if not lora and quantized:
            raise PassRunError(
                f"'{model.model_path}' has its LoRA MatMuls quantized ({len(quantized)} MatMulNBits, e.g. "
                f"{quantized[0]}), which cannot take another adapter's weights; build it with ModelBuilder (whose "
                "int4 and int8 keep them float) and run ExtractAdapters before any other quantizing pass",
                owner=owner,
            )
        if not lora:
            raise PassRunError(
                f"'{model.model_path}' carries no LoRA weights (no initializer named like "
                "<module>.lora_A.MatMul.weight); build it with ModelBuilder from an HfModel with adapter_path",
                owner=owner,
            )
        built = _built_in_weights(proto.graph, lora)
        inputs = {name: _input_shape(name, arr.shape, config.dynamic_lora_r) for name, arr in built.items()}
        attributes = dict(getattr(model, "model_attributes", None) or {})
        records: Mapping[str, Any] = attributes.get("adapters") or {}
        built_name = attributes.get("adapter_built_in") or (next(iter(records)) if records else UNNAMED)

        # Every adapter is converted and checked before anything is written.
        weights: dict[str, dict[str, np.ndarray]] = {built_name: built}
        for name, record in records.items():
            if name == built_name:
                continue
            folder = Path(record["path"] if isinstance(record, Mapping) else record)
            weights[name] = peft_to_inputs(name, folder, {k: (v, built[k].dtype) for k, v in inputs.items()})

        if config.make_inputs:
            _make_inputs(proto.graph, built, config.dynamic_lora_r, config.optional_inputs)
        out = model_proto_to_olive_model(
            proto, output_model_path, {"save_as_external_data": True, "external_data_name": "model.onnx.data"}
        )
        folder = Path(out.model_path).parent if Path(out.model_path).is_file() else Path(out.model_path)
        files = {}
        for name, tensors in weights.items():
            path = folder / f"{name}{SAVE_FORMATS[config.save_format]}"
            save_weights(tensors, path, config.save_format)
            files[name] = path
        result = genai_folder_from_onnx(model, out) if isinstance(model, GenAIModelHandler) else out
        attributes = dict(result.model_attributes or {})
        attributes["adapters"] = {
            name: {"file": path.name, "sha256": _sha256(path), "rank": _rank_of(weights[name])}
            for name, path in files.items()
        }
        for name, record in records.items():
            # The PEFT folder it came from: what an adapter's agreement is measured against (merged in PyTorch).
            if name in attributes["adapters"] and isinstance(record, Mapping) and record.get("path"):
                attributes["adapters"][name]["path"] = str(record["path"])
        attributes["adapter_inputs"] = (
            {name: list(shape) for name, shape in inputs.items()} if config.make_inputs else {}
        )
        attributes.pop("adapter_built_in", None)
        # Olive's keys for the same facts.
        key = "constant_inputs" if config.make_inputs else "external_initializers"
        attributes[key] = {name: [list(arr.shape), str(arr.dtype)] for name, arr in built.items()}
        # Names beside the decoder: the folder travels whole (cache, output_dir), so a path would go stale.
        ours = {p.name for p in files.values()}
        earlier = [f for f in attributes.get("additional_files") or [] if Path(f).name not in ours]
        attributes["additional_files"] = [*earlier, *sorted(ours)]
        result.model_attributes = attributes
        logger.info(
            "%s: %d adapter inputs, %d adapter files (%s)",
            owner,
            len(built),
            len(files),
            ", ".join(p.name for p in files.values()),
        )
        return result


def lora_initializers(graph: onnx.GraphProto) -> list[str]:
    """Names of the initializers that are LoRA A/B weights, in graph order."""
    return [init.name for init in graph.initializer if _ONNX_LORA.match(init.name)]


def _which(name: str) -> str:
    match = _ONNX_LORA.match(name)
    return match["which"] if match else ""


def _built_in_weights(graph: onnx.GraphProto, names: list[str]) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    wanted = set(names)
    return {init.name: numpy_helper.to_array(init) for init in graph.initializer if init.name in wanted}


def _input_shape(name: str, shape: tuple[int, ...], dynamic: bool) -> tuple[int | str, ...]:
    if not dynamic:
        return tuple(shape)
    return (shape[0], RANK_AXIS) if _which(name) == "A" else (RANK_AXIS, shape[1])


def _empty_shape(name: str, shape: tuple[int, ...]) -> tuple[int, int]:
    """Rank 0: ``[in, 0]`` for A, ``[0, out]`` for B (the adapted MatMul adds nothing)."""
    return (shape[0], 0) if _which(name) == "A" else (0, shape[1])


def _make_inputs(graph: onnx.GraphProto, built: Mapping[str, np.ndarray], dynamic: bool, optional: bool) -> None:
    """Each LoRA initializer becomes an input; with ``optional`` its initializer stays as the default, empty at
    rank 0 (or zeros at the fixed rank)."""
    import numpy as np
    from onnx import helper, numpy_helper

    kept = []
    for init in graph.initializer:
        if init.name not in built:
            kept.append(init)
            continue
        arr = built[init.name]
        if optional:
            shape = _empty_shape(init.name, arr.shape) if dynamic else arr.shape
            kept.append(numpy_helper.from_array(np.zeros(shape, dtype=arr.dtype), init.name))
        dims = _input_shape(init.name, arr.shape, dynamic)
        elem = helper.np_dtype_to_tensor_dtype(arr.dtype)
        graph.input.append(helper.make_tensor_value_info(init.name, elem, list(dims)))
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _scaling(config: Mapping[str, Any], module: str, rank: int) -> float:
    alpha = config.get("lora_alpha", rank)
    for pattern, value in (config.get("alpha_pattern") or {}).items():
        if re.search(rf"(^|\.){pattern}$", module):
            alpha = value
    return alpha / math.sqrt(rank) if config.get("use_rslora") else alpha / rank


def builder_module_name(peft_module: str) -> str:
    """The builder's name for a Hugging Face module (``model.layers.0.self_attn.q_proj`` ->
    ``model.layers.0.attn.q_proj``)."""
    name = f".{peft_module}."
    for theirs, ours in _BUILDER_NAMES:
        name = name.replace(theirs, ours)
    return name.strip(".")


def peft_to_inputs(
    name: str,
    folder: Path,
    inputs: Mapping[str, tuple[tuple[int | str, ...], Any]],
    fixed_rank_fix: str = "run ExtractAdapters with dynamic_lora_r true for adapters of any rank",
) -> dict[str, np.ndarray]:
    """A PEFT LoRA folder's weights as a decoder's adapter inputs (``inputs``: name -> (shape, numpy dtype), a
    string on a free axis): named as the inputs, ``[in, r]`` / ``[r, out]``, B scaled, in the inputs' dtype. Every
    weight must name an input with a shape that fits (a :class:`PassRunError` naming the adapter, the weight, the
    input and both shapes)."""
    import json

    import torch
    from safetensors.torch import load_file

    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    tensors = load_file(str(folder / "adapter_model.safetensors"))
    out: dict[str, np.ndarray] = {}
    for key, tensor in sorted(tensors.items()):
        match = _PEFT_LORA.match(key)
        if not match:
            raise PassRunError(f"adapter '{name}' ({folder}): {key} is not a LoRA A/B weight")
        module, which = match["module"], match["which"]
        array = tensor.to(torch.float32).numpy().T.copy()
        rank = array.shape[1] if which == "A" else array.shape[0]
        if which == "B":
            array *= _scaling(config, module, rank)
        for target, piece in _as_builder_inputs(name, folder, module, which, array, inputs):
            expected, dtype = inputs[target]
            # The feature axis (A's in, B's out) must be the base's; the rank axis only where it is fixed.
            feature, rank_axis = (0, 1) if which == "A" else (1, 0)
            if piece.shape[feature] != expected[feature]:
                raise PassRunError(
                    f"adapter '{name}' ({folder}): {key} is {list(piece.shape)} as the MatMul takes it, but the base "
                    f"model's input {target} is {list(expected)}; the adapter was trained on another base model"
                )
            if isinstance(expected[rank_axis], int) and rank != expected[rank_axis]:
                raise PassRunError(
                    f"adapter '{name}' ({folder}): {key} is {list(piece.shape)} as the MatMul takes it (rank {rank}), "
                    f"but the base model's input {target} is {list(expected)}: it takes rank {expected[rank_axis]} "
                    f"only; {fixed_rank_fix}"
                )
            out[target] = piece.astype(dtype)
    unpaired = sorted(
        {n.replace(".lora_A.", ".lora_B.") for n in out if ".lora_A." in n} ^ {n for n in out if ".lora_B." in n}
    )
    if unpaired:
        raise PassRunError(f"adapter '{name}' ({folder}) has LoRA weights without their pair: {', '.join(unpaired)}")
    return out


#: Hugging Face modules that hold several projections in one weight, and the ones the builder unpacks them into
#: (Phi-3's qkv_proj and gate_up_proj): one lora_A for all, lora_B split along its outputs.
_PACKED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


def _as_builder_inputs(
    name: str, folder: Path, module: str, which: str, array: np.ndarray, inputs: Mapping[str, Any]
) -> list[tuple[str, np.ndarray]]:
    """``(input name, weight)`` pairs for one PEFT weight as the MatMul takes it: itself, or a packed module's
    parts (the same A for each, B's output columns split at the parts' widths)."""
    ours = builder_module_name(module)
    target = f"{ours}.lora_{which}.MatMul.weight"
    if target in inputs:
        return [(target, array)]
    prefix, _, last = ours.rpartition(".")
    parts = [f"{prefix}.{part}.lora_{which}.MatMul.weight" for part in _PACKED.get(last, ())]
    if not parts or not all(part in inputs for part in parts):
        modules = sorted({n.rsplit(".lora_", 1)[0].rsplit(".", 1)[-1] for n in inputs})
        raise PassRunError(
            f"adapter '{name}' ({folder}) adapts {module}, but the base model has no adapter input {target} (its "
            f"adapter inputs adapt {', '.join(modules) or 'nothing'}); build the base from an adapter that targets "
            "the same modules"
        )
    if which == "A":
        return [(part, array) for part in parts]
    widths = [inputs[part][0][1] for part in parts]
    if not all(isinstance(w, int) for w in widths) or sum(widths) != array.shape[1]:
        raise PassRunError(
            f"adapter '{name}' ({folder}): {module}'s lora_B has {array.shape[1]} outputs as the MatMul takes it, but "
            f"the base model's inputs for its parts take {widths}; the adapter was trained on another base model"
        )
    edges = [0, *accumulate(widths)]
    return [(part, array[:, lo:hi]) for part, lo, hi in zip(parts, edges[:-1], edges[1:], strict=True)]


def adapter_inputs_of(graph: onnx.GraphProto) -> dict[str, tuple[tuple[int | str, ...], Any]]:
    """The LoRA inputs of a decoder ``ExtractAdapters`` wrote: name -> (shape, numpy dtype); a free axis is its
    name."""
    from onnx import helper

    found = {}
    for value in graph.input:
        if not _ONNX_LORA.match(value.name):
            continue
        tensor = value.type.tensor_type
        shape = tuple(d.dim_param or d.dim_value for d in tensor.shape.dim)
        found[value.name] = (shape, helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    return found


def save_weights(tensors: Mapping[str, np.ndarray], path: Path, save_format: str) -> None:
    """Write adapter weights in ``save_format``, to a temporary name first so that no half file is left."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        if save_format == "onnx_adapter":
            import onnxruntime as ort

            adapter = ort.AdapterFormat()
            adapter.set_adapter_version(1)
            adapter.set_model_version(1)
            adapter.set_parameters({k: ort.OrtValue.ortvalue_from_numpy(v) for k, v in tensors.items()})
            adapter.export_adapter(str(tmp))
        elif save_format == "numpy":
            import numpy as np

            with tmp.open("wb") as handle:
                np.savez(handle, **tensors)
        else:
            from safetensors.numpy import save_file

            save_file(dict(tensors), str(tmp))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _rank_of(tensors: Mapping[str, np.ndarray]) -> int:
    ranks = {arr.shape[1] for name, arr in tensors.items() if _which(name) == "A"}
    return max(ranks) if ranks else 0


def _sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


# ------------------------------------------------------------------------------ olive convert-adapters
def convert_adapter_folder(
    folder: Path,
    output: Path,
    adapter_format: str,
    dtype: str,
    quantize: bool,
    block_size: int,
    symmetric: bool,
    base_model: Path | None,
) -> tuple[Path, bool]:
    """``olive convert-adapters``: the adapter folder's weights written as a base decoder's adapter inputs;
    returns the file written and whether the names were checked against ``base_model``."""
    import numpy as np

    name = folder.name
    if not folder.is_dir():
        raise ValueError(f"--adapter_path: '{folder}' is not a folder; give the folder PeftModel.save_pretrained wrote")
    config = read_adapter_config(name, folder, "--adapter_path")
    if config.get("peft_type") != "LORA" or config.get("use_dora"):
        raise ValueError(f"--adapter_path: '{folder}' is not a LoRA adapter (peft_type LORA, no DoRA)")
    target_dtype = np.dtype(dtype)
    if base_model is not None:
        inputs = _base_inputs(base_model)
        if quantize:
            raise ValueError(
                f"--quantize_int4: the adapter inputs of '{base_model}' are float MatMul weights ({len(inputs)} of "
                "them); int4 adapter weights (.quant.weight / .quant.scale) fit only a base whose adapter MatMuls are "
                "MatMulNBits. Leave --quantize_int4 out"
            )
        dtypes = {np.dtype(d) for _, d in inputs.values()}
        if dtypes and target_dtype not in dtypes:
            raise ValueError(
                f"--dtype {dtype}: the adapter inputs of '{base_model}' are {', '.join(sorted(map(str, dtypes)))}; "
                "give that dtype"
            )
        fix = "convert an adapter of that rank, or rebuild the base with ExtractAdapters' dynamic_lora_r true"
    else:
        inputs = _unchecked_inputs(folder, target_dtype, RANK_AXIS)
        fix = ""
    weights = peft_to_inputs(name, folder, inputs, fix)
    weights = {k: v.astype(target_dtype) for k, v in weights.items()}
    if quantize:
        weights = _quantize_int4(weights, block_size, symmetric)
    extension = SAVE_FORMATS[adapter_format]
    path = output if output.name.endswith(extension) else output.with_name(output.name + extension)
    if path.exists():
        raise ValueError(f"-o/--output_path: '{path}' exists; give a new file name (it is never overwritten)")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_weights(weights, path, adapter_format)
    return path, base_model is not None


def _base_inputs(base_model: Path) -> dict[str, Any]:
    import onnx

    path = base_model
    if base_model.is_dir():
        path = base_model / (
            decoder_file_name(read_genai_config(base_model)) if (base_model / GENAI_CONFIG).is_file() else "model.onnx"
        )
    if not path.is_file():
        raise ValueError(f"--base_model: '{base_model}' has no decoder ({path} is missing)")
    inputs = adapter_inputs_of(onnx.load(str(path), load_external_data=False).graph)
    if not inputs:
        raise ValueError(
            f"--base_model: '{path}' has no adapter inputs; build it from an HfModel with adapter_path and run "
            "ExtractAdapters on it"
        )
    return inputs


def _unchecked_inputs(folder: Path, dtype: Any, rank_axis: str) -> dict[str, Any]:
    """Every weight of the adapter taken as its own input, free on both axes (nothing to check against)."""
    from safetensors import safe_open

    inputs = {}
    with safe_open(str(folder / "adapter_model.safetensors"), "pt") as handle:
        for key in handle.keys():  # noqa: SIM118 (safe_open is not a mapping)
            match = _PEFT_LORA.match(key)
            if match:
                shape = handle.get_slice(key).get_shape()
                target = f"{builder_module_name(match['module'])}.lora_{match['which']}.MatMul.weight"
                # As the MatMul takes it: [in, r] for A, [r, out] for B.
                inputs[target] = ((shape[1], rank_axis) if match["which"] == "A" else (rank_axis, shape[0]), dtype)
    return inputs


def _quantize_int4(weights: dict[str, Any], block_size: int, symmetric: bool) -> dict[str, Any]:
    """Blockwise int4 of each weight with onnxruntime's quantizer, named ``<...>.quant.weight`` / ``.quant.scale``
    (and ``.quant.zero_point`` when asymmetric), as Olive writes them."""
    import numpy as np
    from onnxruntime.quantization.matmul_nbits_quantizer import quantize_matmul_4bits

    out = {}
    for name, weight in weights.items():
        rows, cols = weight.shape
        blocks = (rows + block_size - 1) // block_size
        padded = np.pad(weight, ((0, blocks * block_size - rows), (0, 0))) if blocks * block_size != rows else weight
        packed = np.zeros((cols, blocks, block_size // 2), dtype="uint8")
        scales = np.zeros(cols * blocks, dtype=weight.dtype)
        zero_point = np.zeros(cols * ((blocks + 1) // 2), dtype="uint8")
        quantize_matmul_4bits(
            packed, np.ascontiguousarray(padded), scales, zero_point, block_size, cols, rows, symmetric
        )
        stem = name.removesuffix(".weight")
        out[f"{stem}.quant.weight"] = packed
        out[f"{stem}.quant.scale"] = scales
        if not symmetric:
            out[f"{stem}.quant.zero_point"] = zero_point
    return out
