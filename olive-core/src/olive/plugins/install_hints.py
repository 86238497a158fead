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
        "OnnxFloatToFloat16",
        "OnnxSensitivityAnalysis",
        "OnnxAccuracyGuardedQuantization",
    ),
    "olive-passes-graph": (
        "OnnxPeepholeOptimizer",
        "OrtTransformersOptimization",
        "OrtGraphOptimization",
        "DynamicToFixedShape",
        "OnnxOpVersionConversion",
        "OrtSessionParamsTuning",
    ),
    "olive-passes-torch": ("OnnxConversion",),
    "olive-passes-genai": (
        "ModelBuilder",
        "OnnxHqqQuantization",
        "OnnxKQuantQuantization",
        "OnnxGuardedInt4",
        "OnnxGptqQuantization",
    ),
}

#: Input model types of this repository's distributions: type name -> (distribution, extra or None).
REPOSITORY_MODEL_TYPES: dict[str, tuple[str, str | None]] = {
    "HfModel": ("olive-passes-torch", "hf"),
    "PyTorchModel": ("olive-passes-torch", None),
    "GenAIModel": ("olive-passes-genai", None),
}

#: Data container types of this repository's distributions: type name -> (distribution, extra or None).
REPOSITORY_DATA_CONTAINERS: dict[str, tuple[str, str | None]] = {
    "TextDataContainer": ("olive-passes-torch", "hf"),
    "HuggingfaceContainer": ("olive-passes-torch", "hf"),
}

_PYTORCH = "a PyTorch pass (it works on the PyTorch model before conversion)"
_QNN = "a Qualcomm QNN/SNPE SDK pass"
_VITIS = "an AMD Vitis AI pass"
_INC = "an Intel Neural Compressor pass"
_OPTIMUM = "a Hugging Face Optimum pass"
#: Microsoft Olive 0.13's passes that no distribution here provides: name -> what kind of pass it is.
MICROSOFT_OLIVE_ONLY: dict[str, str] = {
    "AppendPrePostProcessingOps": "an onnxruntime-extensions pre/post-processing pass",
    "GraphSurgeries": "a graph surgery pass",
    "ExtractAdapters": "a LoRA adapter extraction pass",
    "IncDynamicQuantization": _INC,
    "IncQuantization": _INC,
    "IncStaticQuantization": _INC,
    "InsertBeamSearch": "a beam-search insertion pass (generative models)",
    "MatMulNBitsToQDQ": "a MatMulNBits-to-QDQ rewrite",
    "MixedPrecisionOverrides": "a QNN mixed-precision pass",
    "MoEExpertsDistributor": "a mixture-of-experts distribution pass",
    "OnnxBnb4Quantization": "a bitsandbytes 4-bit quantization pass",
    "OnnxIODataTypeConverter": "an input/output data type conversion pass",
    "OnnxMatMul4Quantizer": "a 4-bit MatMul quantizer (here: OnnxBlockWiseRtnQuantization in olive-passes-quant)",
    "OptimumConversion": _OPTIMUM,
    "OptimumMerging": _OPTIMUM,
    "OrtMixedPrecision": "a GPU mixed-precision pass",
    "QNNPreprocess": _QNN,
    "VitisAIQuantization": _VITIS,
    "VitisQDQQuantizer": _VITIS,
    "VitisQOpQuantizer": _VITIS,
    "PowerOfTwoMethod": _VITIS,
    "SplitModel": "a model splitting pass",
    "OpenVINOConversion": "an OpenVINO IR conversion pass",
    "OpenVINOQuantization": "an OpenVINO (NNCF) quantization pass",
    "AutoAWQQuantizer": _PYTORCH,
    "GptqQuantizer": _PYTORCH,
    "CaptureSplitInfo": _PYTORCH,
    "MergeAdapterWeights": _PYTORCH,
    "LoftQ": _PYTORCH,
    "LoRA": _PYTORCH,
    "LoHa": _PYTORCH,
    "LoKr": _PYTORCH,
    "PyTorchTensorParallel": _PYTORCH,
    "QLoRA": _PYTORCH,
    "DoRA": _PYTORCH,
    "QuantizationAwareTraining": _PYTORCH,
    "QuaRot": _PYTORCH,
    "SparseGPT": _PYTORCH,
    "SpinQuant": _PYTORCH,
    "SliceGPT": _PYTORCH,
    "TorchTRTConversion": "a Torch-TensorRT conversion pass",
    "QNNConversion": _QNN,
    "QNNModelLibGenerator": _QNN,
    "QNNContextBinaryGenerator": _QNN,
    "SNPEConversion": _QNN,
    "SNPEQuantization": _QNN,
    "SNPEtoONNXConversion": _QNN,
    "NVModelOptQuantization": "an NVIDIA ModelOpt quantization pass",
}

#: Microsoft Olive 0.13's input model types that no distribution here provides.
MICROSOFT_OLIVE_ONLY_MODEL_TYPES: tuple[str, ...] = (
    "DistributedHfModel",
    "DistributedOnnxModel",
    "CompositeModel",
    "CompositePyTorchModel",
    "OpenVINOModel",
    "QNNModel",
    "SNPEModel",
    "TensorFlowModel",
    "DiffusersModel",
)

#: Microsoft Olive 0.13's data container types that no distribution here provides.
MICROSOFT_OLIVE_ONLY_DATA_CONTAINERS: tuple[str, ...] = (
    "RawDataContainer",
    "TransformersDummyDataContainer",
    "TransformersPromptDummyDataContainer",
    "TransformersTokenDummyDataContainer",
)


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
    """The repository distribution that offers pass ``name``, if any."""
    for distribution, passes in REPOSITORY_PASSES.items():
        if name in passes:
            return distribution
    return None


def missing_pass_hint(name: str) -> str | None:
    """What to say about pass ``name`` when no installed distribution offers it (None: nothing known)."""
    distribution = distribution_of_pass(name)
    if distribution is not None:
        return f"it is offered by {distribution}, which is not installed; install it with: {install_line(distribution)}"
    kind = MICROSOFT_OLIVE_ONLY.get(name)
    if kind is not None:
        return f"'{name}' is a Microsoft Olive pass ({kind}) that no distribution here provides"
    return None


def missing_model_type_hint(name: str) -> str | None:
    """What to say about input model type ``name`` when no installed distribution offers it."""
    return _missing_type_hint("model type", name, REPOSITORY_MODEL_TYPES, MICROSOFT_OLIVE_ONLY_MODEL_TYPES)


def missing_data_container_hint(name: str) -> str | None:
    """What to say about data container type ``name`` when no installed distribution offers it."""
    return _missing_type_hint("data container", name, REPOSITORY_DATA_CONTAINERS, MICROSOFT_OLIVE_ONLY_DATA_CONTAINERS)


def _missing_type_hint(
    kind: str, name: str, repository: dict[str, tuple[str, str | None]], olive_only: tuple[str, ...]
) -> str | None:
    if name in repository:
        distribution, extra = repository[name]
        return (
            f"{kind} '{name}' is offered by {distribution}, which is not installed; install it with: "
            f"{install_line(distribution, extra)}"
        )
    if name in olive_only:
        return f"{kind} '{name}' is a Microsoft Olive {kind} that no distribution here provides"
    return None
