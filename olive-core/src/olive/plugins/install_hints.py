"""Which distribution offers a pass, a model type or a data container, and the line that installs it.

The distributions of this repository are not on a package index: they are installed from a clone (or
from wheels built from one). Where olive-core itself came from is recorded in its installed metadata
(``direct_url.json``, PEP 610), so the hints point at the same place: the clone's folder for an install
from a folder, the folder of olive-core's wheel for an install from a wheel.

Names that Microsoft Olive offers and no distribution here provides are said to be so plainly, with what
kind of pass they are, instead of "unknown".
"""

from __future__ import annotations

import json
from collections.abc import Collection
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlparse

import attrs
import importlib_metadata as metadata

#: The pass distributions of this repository: distribution name -> the passes it offers (kept equal to
#: their pyproject.toml entry points by a test).
REPOSITORY_PASSES: dict[str, tuple[str, ...]] = {
    "olive-passes-quant": (
        "OnnxDynamicQuantization",
        "OnnxStaticQuantization",
        "OnnxQuantization",
        "OnnxQuantizationPreprocess",
        "OnnxBlockWiseRtnQuantization",
        "OnnxHqqQuantization",
        "OnnxKQuantQuantization",
        "OnnxGptqQuantization",
        "OnnxFloatToFloat16",
        "OnnxSensitivityAnalysis",
        "OnnxAccuracyGuardedQuantization",
        "MatMulNBitsToQDQ",
        "SelectiveMixedPrecision",
    ),
    "olive-passes-graph": (
        "OnnxPeepholeOptimizer",
        "OrtTransformersOptimization",
        "OrtGraphOptimization",
        "DynamicToFixedShape",
        "OnnxOpVersionConversion",
        "OrtSessionParamsTuning",
        "AddOliveMetadata",
        "GraphSurgeries",
        "CaptureSplitInfo",
        "SplitModel",
        "ComposeOnnxModels",
        "OnnxIODataTypeConverter",
    ),
    "olive-passes-torch": ("OnnxConversion",),
    "olive-passes-genai": (
        "ModelBuilder",
        "OnnxGuardedInt4",
        "ExtractAdapters",
        "HfScaleMigration",
    ),
    "olive-passes-openvino": (
        "OpenVINOConversion",
        "OpenVINOQuantization",
        "OpenVINOQuantizationWithAccuracy",
        "OpenVINOWeightCompression",
        "OpenVINOIoUpdate",
    ),
}

#: Input model types of this repository's distributions: type name -> (distribution, extra or None).
REPOSITORY_MODEL_TYPES: dict[str, tuple[str, str | None]] = {
    "HfModel": ("olive-passes-torch", "hf"),
    "PyTorchModel": ("olive-passes-torch", None),
    "GenAIModel": ("olive-passes-genai", None),
    "CompositeModel": ("olive-passes-graph", None),
    "OpenVINOModel": ("olive-passes-openvino", None),
}

#: Data container types of this repository's distributions: type name -> (distribution, extra or None).
REPOSITORY_DATA_CONTAINERS: dict[str, tuple[str, str | None]] = {
    "TextDataContainer": ("olive-passes-torch", "hf"),
    "HuggingfaceContainer": ("olive-passes-torch", "hf"),
}

_PYTORCH = "a PyTorch pass (it works on the PyTorch model before conversion)"
_QNN = "a Qualcomm QNN/SNPE SDK pass"
_QAIRT = "a Qualcomm QAIRT SDK pass"
_VITIS = "an AMD Vitis AI pass"
_RYZEN = "an AMD Ryzen AI pass"
_QUARK = "an AMD Quark quantization pass"
_INC = "an Intel Neural Compressor pass"
_OPENVINO = "an OpenVINO pass (it works on OpenVINO IR, not ONNX)"
_NVMO = "an NVIDIA ModelOpt pass"
_OPTIMUM = "a Hugging Face Optimum pass"
#: Microsoft Olive's passes (its ``olive_config.json``, 0.8 to today's, and older releases' names) that no
#: distribution here provides: name -> what kind of pass it is.
MICROSOFT_OLIVE_ONLY: dict[str, str] = {
    "AimetQuantization": "a Qualcomm AIMET quantization pass",
    "AppendPrePostProcessingOps": "an onnxruntime-extensions pre/post-processing pass",
    "EPContextBinaryGenerator": "an execution provider context binary pass",
    "IncDynamicQuantization": _INC,
    "IncQuantization": _INC,
    "IncStaticQuantization": _INC,
    "InputNCHWtoNHWC": _VITIS,
    "InsertBeamSearch": "a beam-search insertion pass (generative models)",
    "MixedPrecisionOverrides": "a QNN mixed-precision pass",
    "MobiusBuilder": "a generative-model builder (mobius)",
    "MoEExpertsDistributor": "a mixture-of-experts distribution pass",
    "NVModelOptGraphSurgery": _NVMO,
    "NVModelOptQuantization": _NVMO,
    "OnnxBnb4Quantization": "a bitsandbytes 4-bit quantization pass",
    "OnnxDiscrepancyCheck": "a pass that checks an ONNX model's outputs against a reference",
    "OnnxMatMul4Quantizer": "a 4-bit MatMul quantizer",
    "OnnxScriptFusion": "an onnxscript fusion pass",
    "OpenVINOEncapsulation": _OPENVINO,
    "OpenVINOOptimumConversion": _OPENVINO,
    "OptimumConversion": _OPTIMUM,
    "OptimumMerging": _OPTIMUM,
    "OrtMixedPrecision": "a GPU mixed-precision pass",
    "PowerOfTwoMethod": _VITIS,
    "QairtEncapsulation": _QAIRT,
    "QairtGenAIBuilder": _QAIRT,
    "QairtMHA2SHA": _QAIRT,
    "QairtPipelinePass": _QAIRT,
    "QairtPreparation": _QAIRT,
    "QNNContextBinaryGenerator": _QNN,
    "QNNConversion": _QNN,
    "QNNModelLibGenerator": _QNN,
    "QNNPreprocess": _QNN,
    "QuarkQuantization": _QUARK,
    "QuarkQuantizationVitisAI": _QUARK,
    "RyzenGenerateModelLLM": _RYZEN,
    "SDLoRA": "a Stable Diffusion LoRA training pass",
    "SNPEConversion": _QNN,
    "SNPEQuantization": _QNN,
    "SNPEtoONNXConversion": _QNN,
    "StaticLLM": "a pass that gives a decoder static shapes (for NPUs)",
    "TorchTRTConversion": "a Torch-TensorRT conversion pass",
    "VitisAIAddMetaData": _VITIS,
    "VitisAIQuantization": _VITIS,
    "VitisGenerateModelLLM": _VITIS,
    "VitisGenerateModelSD": _VITIS,
    "VitisQDQQuantizer": _VITIS,
    "VitisQOpQuantizer": _VITIS,
    "AutoAWQQuantizer": _PYTORCH,
    "AutoClip": _PYTORCH,
    "CaptureLayerAnnotations": _PYTORCH,
    "ConvertHfToGGUF": _PYTORCH,
    "DoRA": _PYTORCH,
    "Gptq": _PYTORCH,
    "GptqModel": _PYTORCH,
    "GptqQuantizer": _PYTORCH,
    "KQuant": _PYTORCH,
    "LoftQ": _PYTORCH,
    "LoHa": _PYTORCH,
    "LoKr": _PYTORCH,
    "LoRA": _PYTORCH,
    "MergeAdapterWeights": _PYTORCH,
    "PyTorchTensorParallel": _PYTORCH,
    "QLoRA": _PYTORCH,
    "QuantizationAwareTraining": _PYTORCH,
    "QuaRot": _PYTORCH,
    "Rtn": _PYTORCH,
    "SaveTestModelConfig": _PYTORCH,
    "SliceGPT": _PYTORCH,
    "SparseGPT": _PYTORCH,
    "SpinQuant": _PYTORCH,
}

#: For some of them, the pass here that does the same kind of work (on the ONNX model): name -> (pass, what).
MICROSOFT_OLIVE_CLOSEST: dict[str, tuple[str, str]] = {
    "Gptq": ("OnnxGptqQuantization", "GPTQ int4 on the ONNX model"),
    "GptqModel": ("OnnxGptqQuantization", "GPTQ int4 on the ONNX model"),
    "GptqQuantizer": ("OnnxGptqQuantization", "GPTQ int4 on the ONNX model"),
    "IncDynamicQuantization": ("OnnxDynamicQuantization", "onnxruntime's dynamic int8"),
    "IncQuantization": ("OnnxQuantization", "onnxruntime's int8"),
    "IncStaticQuantization": ("OnnxStaticQuantization", "onnxruntime's static int8"),
    "KQuant": ("OnnxKQuantQuantization", "k-quant int4 on the ONNX model"),
    "MobiusBuilder": ("ModelBuilder", "onnxruntime-genai's builder"),
    "OnnxMatMul4Quantizer": ("OnnxBlockWiseRtnQuantization", "block-wise int4 MatMul weights"),
    "OnnxScriptFusion": ("OrtTransformersOptimization", "onnxruntime's transformer fusions"),
    "OptimumConversion": ("OnnxConversion", "a PyTorch or Hugging Face model exported to ONNX"),
    "OrtMixedPrecision": ("OnnxFloatToFloat16", "float16 weights and activations"),
    "Rtn": ("OnnxBlockWiseRtnQuantization", "round-to-nearest int4 on the ONNX model"),
}

#: Microsoft Olive's input model types that no distribution here provides.
MICROSOFT_OLIVE_ONLY_MODEL_TYPES: tuple[str, ...] = (
    "DistributedHfModel",
    "DistributedOnnxModel",
    "CompositePyTorchModel",
    "QairtModel",
    "QairtPreparedModel",
    "QNNModel",
    "SNPEModel",
    "TensorFlowModel",
    "DiffusersModel",
)

#: For some of them, the model type here closest to it: name -> (type, what).
MICROSOFT_OLIVE_CLOSEST_MODEL_TYPES: dict[str, tuple[str, str]] = {
    "DistributedHfModel": ("HfModel", "the whole model, on one device"),
    "DistributedOnnxModel": ("ONNXModel", "the whole model, on one device"),
}

#: Microsoft Olive's data container types that no distribution here provides.
MICROSOFT_OLIVE_ONLY_DATA_CONTAINERS: tuple[str, ...] = (
    "ImageDataContainer",
    "RawDataContainer",
    "TransformersDummyDataContainer",
    "TransformersPromptDummyDataContainer",
    "TransformersTokenDummyDataContainer",
)

#: For some of them, the data container here closest to it: name -> (type, what).
MICROSOFT_OLIVE_CLOSEST_DATA_CONTAINERS: dict[str, tuple[str, str]] = {
    "ImageDataContainer": ("DataContainer", "images loaded by a user_script"),
    "RawDataContainer": ("NpzDataContainer", "arrays keyed by input name in an .npz"),
    "TransformersDummyDataContainer": ("DummyDataContainer", "synthetic inputs of given shapes"),
    "TransformersPromptDummyDataContainer": ("DummyDataContainer", "synthetic inputs of given shapes"),
    "TransformersTokenDummyDataContainer": ("DummyDataContainer", "synthetic inputs of given shapes"),
}


@attrs.frozen
class CoreSource:
    """Where the installed olive-core came from: a folder (``kind="folder"``) or a wheel file."""

    kind: str
    path: Path
    editable: bool = False


@lru_cache(maxsize=1)
def olive_core_source() -> CoreSource | None:
    """olive-core's install source from its ``direct_url.json``; None for an install from an index."""
    try:
        text = metadata.distribution("olive-core").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not text:
        return None
    try:
        record = json.loads(text)
        url = urlparse(record["url"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if url.scheme != "file":
        return None
    path = Path(unquote(url.path))
    if "dir_info" in record:
        return CoreSource("folder", path, bool((record.get("dir_info") or {}).get("editable")))
    if path.suffix == ".whl":
        return CoreSource("wheel", path)
    return None


def install_line(distribution: str, extra: str | None = None) -> str:
    """The command that installs ``distribution`` (one of this repository's) where olive-core came from."""
    folder_name = distribution
    source = olive_core_source()
    extra_part = f"[{extra}]" if extra else ""
    if source is not None and source.kind == "folder":
        folder = source.path.parent / folder_name
        if (folder / "pyproject.toml").is_file():
            return f'pip install -e "{folder}{extra_part}"'
    if source is not None and source.kind == "wheel":
        wheels = sorted(source.path.parent.glob(f"{distribution.replace('-', '_')}-*.whl"))
        if wheels:
            return f'pip install "{wheels[-1]}{extra_part}"'
        return (
            f"build its wheel in a clone of the repository (pip wheel --no-deps -w dist ./{folder_name}), "
            f"then pip install dist/{distribution.replace('-', '_')}-*.whl"
        )
    return f'pip install -e "./{folder_name}{extra_part}" (from the root of a clone of the repository)'


def olive_core_requirement() -> str | None:
    """The requirement that installs this olive-core again elsewhere: ``-e <folder>`` for an install from a
    folder, the wheel file's path for an install from a wheel; None for an install from a package index
    (``olive-core`` itself is then the requirement). A generated pass project's tox tests use it by default."""
    source = olive_core_source()
    if source is None:
        return None
    return f"-e {source.path}" if source.kind == "folder" else str(source.path)


def distribution_of_pass(name: str) -> str | None:
    """The repository distribution that offers pass ``name`` (case does not matter), if any."""
    for distribution, passes in REPOSITORY_PASSES.items():
        if _spelled(name, passes) is not None:
            return distribution
    return None


def microsoft_olive_pass(name: str) -> str | None:
    """Microsoft Olive's spelling of pass ``name`` when it is one of its passes that none here provides."""
    return _spelled(name, MICROSOFT_OLIVE_ONLY)


def missing_pass_hint(name: str, installed: Collection[str] = ()) -> str | None:
    """What to say about pass ``name`` when no installed distribution offers it (None: nothing known).

    ``installed``: the passes installed now, so that the closest pass here is said to be installed, or how to
    install it.
    """
    distribution = distribution_of_pass(name)
    if distribution is not None:
        return f"it is offered by {distribution}, which is not installed; install it with: {install_line(distribution)}"
    olive_name = microsoft_olive_pass(name)
    if olive_name is None:
        return None
    kind = MICROSOFT_OLIVE_ONLY[olive_name]
    hint = f"'{olive_name}' is a Microsoft Olive pass ({kind}) that no distribution here provides"
    closest = MICROSOFT_OLIVE_CLOSEST.get(olive_name)
    if closest is None:
        return hint
    other, what = closest
    if other in installed:
        return f"{hint}; the closest here: '{other}' ({what}), installed"
    offered_by = distribution_of_pass(other)
    where = f", offered by {offered_by}; install it with: {install_line(offered_by)}" if offered_by else ""
    return f"{hint}; the closest here: '{other}' ({what}){where}"


def missing_model_type_hint(name: str) -> str | None:
    """What to say about input model type ``name`` when no installed distribution offers it."""
    return _missing_type_hint(
        "model type",
        name,
        REPOSITORY_MODEL_TYPES,
        MICROSOFT_OLIVE_ONLY_MODEL_TYPES,
        MICROSOFT_OLIVE_CLOSEST_MODEL_TYPES,
    )


def missing_data_container_hint(name: str) -> str | None:
    """What to say about data container type ``name`` when no installed distribution offers it."""
    return _missing_type_hint(
        "data container",
        name,
        REPOSITORY_DATA_CONTAINERS,
        MICROSOFT_OLIVE_ONLY_DATA_CONTAINERS,
        MICROSOFT_OLIVE_CLOSEST_DATA_CONTAINERS,
    )


def _missing_type_hint(
    kind: str,
    name: str,
    repository: dict[str, tuple[str, str | None]],
    olive_only: tuple[str, ...],
    closest: dict[str, tuple[str, str]],
) -> str | None:
    ours = _spelled(name, repository)
    if ours is not None:
        distribution, extra = repository[ours]
        return (
            f"{kind} '{ours}' is offered by {distribution}, which is not installed; install it with: "
            f"{install_line(distribution, extra)}"
        )
    olive_name = _spelled(name, olive_only)
    if olive_name is None:
        return None
    hint = f"{kind} '{olive_name}' is a Microsoft Olive {kind} that no distribution here provides"
    if olive_name in closest:
        other, what = closest[olive_name]
        hint = f"{hint}; the closest here: '{other}' ({what})"
    return hint


def _spelled(name: str, names: Collection[str]) -> str | None:
    """How ``names`` spell ``name``, compared without case (as Microsoft Olive's registries do), or None."""
    if name in names:
        return name
    lowered = name.lower()
    return next((known for known in names if known.lower() == lowered), None)
