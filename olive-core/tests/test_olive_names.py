"""Every name Microsoft Olive gives a pass, a model type, a data container or an evaluator is recognised here:
offered (in any case, as Olive's registries match), offered by a distribution of ours that is not installed, or
said in one line to be a Microsoft Olive name that no distribution here provides, with the closest thing here
where there is one, and never a did-you-mean to something whose name merely looks alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from engine_support import AddMatMuls, base_workflow

import olive
from olive.cli.main import cli
from olive.data.config import DataConfig
from olive.data.containers import find_container
from olive.exceptions import UnknownPassError, WorkflowConfigError
from olive.model.types import UnknownModelTypeError, get_model_type, new_model_type_registry, use_model_type_registry
from olive.plugins.install_hints import MICROSOFT_OLIVE_ONLY, REPOSITORY_MODEL_TYPES, REPOSITORY_PASSES
from olive.plugins.registry import PassRegistry
from olive.workflows.config import load_workflow_config

# The pass names of Microsoft Olive's olive/olive_config.json: at 8365802 (the last commit with examples/) and
# at ee6f40f (its newest), with the names of older releases the examples still use.
OLIVE_PASSES = [
    "AddOliveMetadata",
    "AimetQuantization",
    "AppendPrePostProcessingOps",
    "AutoAWQQuantizer",
    "AutoClip",
    "CaptureLayerAnnotations",
    "CaptureSplitInfo",
    "ComposeOnnxModels",
    "ConvertHfToGGUF",
    "DoRA",
    "DynamicToFixedShape",
    "EPContextBinaryGenerator",
    "ExtractAdapters",
    "Gptq",
    "GptqModel",
    "GptqQuantizer",
    "GraphSurgeries",
    "IncDynamicQuantization",
    "IncQuantization",
    "IncStaticQuantization",
    "InputNCHWtoNHWC",
    "InsertBeamSearch",
    "KQuant",
    "LoHa",
    "LoKr",
    "LoRA",
    "LoftQ",
    "MatMulNBitsToQDQ",
    "MergeAdapterWeights",
    "MixedPrecisionOverrides",
    "MoEExpertsDistributor",
    "MobiusBuilder",
    "ModelBuilder",
    "NVModelOptGraphSurgery",
    "NVModelOptQuantization",
    "OnnxBlockWiseRtnQuantization",
    "OnnxBnb4Quantization",
    "OnnxConversion",
    "OnnxDiscrepancyCheck",
    "OnnxDynamicQuantization",
    "OnnxFloatToFloat16",
    "OnnxHqqQuantization",
    "OnnxIODataTypeConverter",
    "OnnxKQuantQuantization",
    "OnnxMatMul4Quantizer",
    "OnnxOpVersionConversion",
    "OnnxPeepholeOptimizer",
    "OnnxQuantization",
    "OnnxQuantizationPreprocess",
    "OnnxScriptFusion",
    "OnnxStaticQuantization",
    "OpenVINOConversion",
    "OpenVINOEncapsulation",
    "OpenVINOIoUpdate",
    "OpenVINOOptimumConversion",
    "OpenVINOQuantization",
    "OpenVINOQuantizationWithAccuracy",
    "OpenVINOWeightCompression",
    "OptimumConversion",
    "OptimumMerging",
    "OrtMixedPrecision",
    "OrtSessionParamsTuning",
    "OrtTransformersOptimization",
    "PowerOfTwoMethod",
    "PyTorchTensorParallel",
    "QLoRA",
    "QNNContextBinaryGenerator",
    "QNNConversion",
    "QNNModelLibGenerator",
    "QNNPreprocess",
    "QairtEncapsulation",
    "QairtGenAIBuilder",
    "QairtMHA2SHA",
    "QairtPipelinePass",
    "QairtPreparation",
    "QuaRot",
    "QuantizationAwareTraining",
    "QuarkQuantization",
    "QuarkQuantizationVitisAI",
    "Rtn",
    "RyzenGenerateModelLLM",
    "SDLoRA",
    "SNPEConversion",
    "SNPEQuantization",
    "SNPEtoONNXConversion",
    "SaveTestModelConfig",
    "SelectiveMixedPrecision",
    "SliceGPT",
    "SparseGPT",
    "SpinQuant",
    "SplitModel",
    "StaticLLM",
    "TorchTRTConversion",
    "VitisAIAddMetaData",
    "VitisAIQuantization",
    "VitisGenerateModelLLM",
    "VitisGenerateModelSD",
    "VitisQDQQuantizer",
    "VitisQOpQuantizer",
]
# Microsoft Olive's model_handler_registry names, its data containers and its evaluator registrations.
OLIVE_MODEL_TYPES = [
    "CompositeModel",
    "DiffusersModel",
    "DistributedHfModel",
    "DistributedOnnxModel",
    "HFModel",
    "ONNXModel",
    "OpenVINOModel",
    "PyTorchModel",
    "QairtModel",
    "QairtPreparedModel",
    "QNNModel",
    "TensorFlowModel",
]
OLIVE_CONTAINERS = [
    "DataContainer",
    "DummyDataContainer",
    "HuggingfaceContainer",
    "ImageDataContainer",
    "RawDataContainer",
    "TransformersDummyDataContainer",
    "TransformersPromptDummyDataContainer",
    "TransformersTokenDummyDataContainer",
]
OLIVE_EVALUATORS = [
    "ONNX",
    "OnnxEvaluator",
    "PyTorch",
    "PyTorchEvaluator",
    "OpenVINO",
    "OpenVINOEvaluator",
    "QNN",
    "QNNEvaluator",
    "LMEvaluator",
    "MTEBEvaluator",
]
OURS = {name for names in REPOSITORY_PASSES.values() for name in names}


def _pass_error(registry: PassRegistry, name: str) -> str:
    with pytest.raises(UnknownPassError) as caught:
        registry.get_pass_class(name)
    return str(caught.value)


@pytest.mark.parametrize("name", OLIVE_PASSES)
def test_every_microsoft_olive_pass_name_is_recognised_in_one_line(isolated_registry: PassRegistry, name: str) -> None:
    for written in (name, name.lower()):
        message = _pass_error(isolated_registry, written)
        assert "\n" not in message and "unknown" not in message and "did you mean" not in message, message
        if name in OURS:
            assert message.startswith(f"pass '{written}' is not installed: it is offered by olive-passes-"), message
        else:
            assert message.startswith(f"pass '{name}' is a Microsoft Olive pass ("), message
            assert "that no distribution here provides" in message


def test_an_openvino_pass_is_never_taken_for_a_pass_that_looks_alike(isolated_registry: PassRegistry) -> None:
    isolated_registry.register(AddMatMuls, name="OnnxConversion")
    message = _pass_error(isolated_registry, "OpenVINOOptimumConversion")
    assert message == (
        "pass 'OpenVINOOptimumConversion' is a Microsoft Olive pass (an OpenVINO pass (it works on OpenVINO IR, not "
        "ONNX)) that no distribution here provides"
    )
    # A typo of an Olive name is matched to that name, said to be Olive's.
    message = _pass_error(isolated_registry, "OpenVINOOptimumConvertion")
    assert "did you mean 'OpenVINOOptimumConversion', a Microsoft Olive pass" in message
    assert "OnnxConversion'" not in message


def test_the_closest_pass_here_is_named_installed_or_with_its_install_line(isolated_registry: PassRegistry) -> None:
    message = _pass_error(isolated_registry, "Rtn")
    assert message.startswith("pass 'Rtn' is a Microsoft Olive pass (a PyTorch pass")
    closest = "the closest here: 'OnnxBlockWiseRtnQuantization' (round-to-nearest int4 on the ONNX model)"
    assert f"{closest}, offered by olive-passes-quant; install it with: " in message
    isolated_registry.register(AddMatMuls, name="OnnxBlockWiseRtnQuantization")
    message = _pass_error(isolated_registry, "rtn")
    assert message.endswith(f"{closest}, installed"), message


def test_the_table_covers_every_olive_pass_none_of_ours_is() -> None:
    assert sorted(set(OLIVE_PASSES) - OURS - set(MICROSOFT_OLIVE_ONLY)) == []
    assert not OURS & set(MICROSOFT_OLIVE_ONLY)


def test_pass_names_are_case_insensitive_in_a_workflow(tmp_path: Path, engine_registry: PassRegistry) -> None:
    workflow = base_workflow(tmp_path, passes={"add": {"type": "addmatmuls"}, "scale": {"type": "SCALEOUTPUT"}})
    output = olive.run(workflow)
    assert [node.pass_name for node in output.footprint if node.pass_name] == ["AddMatMuls", "ScaleOutput"]
    config = tmp_path / "wf.json"
    config.write_text(json.dumps({**workflow, "passes": {"add": {"type": "Local:ADDMATMULS"}}}))
    result = CliRunner().invoke(cli, ["run", str(config), "--dry-run"])
    assert result.exit_code == 0, result.output


@pytest.fixture
def model_types():
    with use_model_type_registry(new_model_type_registry(entry_points=False)) as registry:
        yield registry


@pytest.mark.parametrize("name", OLIVE_MODEL_TYPES)
def test_every_microsoft_olive_model_type_is_recognised(model_types, name: str) -> None:
    for written in (name, name.lower(), name.upper()):
        if name == "ONNXModel":
            assert get_model_type(written).__name__ == "ONNXModelHandler"
            continue
        with pytest.raises(UnknownModelTypeError) as caught:
            get_model_type(written)
        reason = caught.value.reason
        assert "unknown" not in reason and "did you mean" not in reason and "\n" not in reason, reason
        ours = {n.lower(): dist for n, (dist, _) in REPOSITORY_MODEL_TYPES.items()}
        if name.lower() in ours:
            assert f"is offered by {ours[name.lower()]}," in reason, reason
        else:
            assert "is a Microsoft Olive model type" in reason, reason
    with pytest.raises(UnknownModelTypeError, match="the closest here: 'ONNXModel'"):
        get_model_type("distributedonnxmodel")


def _container(kind: str, tmp_path: Path) -> DataConfig:
    data = tmp_path / "data.npz"
    if not data.exists():
        import numpy as np

        np.savez(data, input=np.zeros((2, 16), dtype=np.float32))
    return DataConfig.from_json({"name": "d", "type": kind, "load_dataset_config": {"data_path": str(data)}})


@pytest.mark.parametrize("name", OLIVE_CONTAINERS)
def test_every_microsoft_olive_data_container_is_recognised(tmp_path: Path, name: str) -> None:
    for written in (name, name.lower()):
        if name == "DummyDataContainer":
            load = {"input_names": ["input"], "input_shapes": [[1, 16]]}
            config = DataConfig.from_json({"name": "d", "type": written, "load_dataset_config": load})
            assert config.type == name
            continue
        if name == "DataContainer":
            script = tmp_path / "user_data.py"
            script.write_text("def load(data_dir=None):\n    return []\n")
            load = {"type": "load"}
            data = {"name": "d", "type": written, "user_script": str(script), "load_dataset_config": load}
            assert DataConfig.from_json(data).type == name
            continue
        with pytest.raises(WorkflowConfigError) as caught:
            _container(written, tmp_path)
        message = str(caught.value)
        if find_container(name) is not None:
            # Installed here (olive-passes-torch's containers, where it is installed): the name is found and the
            # npz's data_path is what it does not take, said as such.
            assert f"data_path: unknown key for {name}" in message, message
            continue
        assert "unknown" not in message and "did you mean" not in message and "\n" not in message, message
        assert "is offered by olive-passes-torch" in message or "is a Microsoft Olive data container" in message


def test_container_names_are_case_insensitive(tmp_path: Path) -> None:
    config = _container("npzdatacontainer", tmp_path)
    assert config.type == "NpzDataContainer"
    assert [sorted(inputs) for inputs, _ in config.create_dataloader(batch_size=2)] == [["input"]]
    with pytest.raises(WorkflowConfigError, match="the closest here: 'DummyDataContainer'"):
        _container("transformerstokendummydatacontainer", tmp_path)


@pytest.mark.parametrize("name", OLIVE_EVALUATORS)
def test_every_microsoft_olive_evaluator_name_is_recognised(tmp_path: Path, name: str) -> None:
    size = {"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 1}]}
    for written in (name, name.lower(), name.upper()):
        workflow = base_workflow(tmp_path, evaluators={"e": {"type": written, "metrics": [size]}}, evaluator="e")
        if name in ("ONNX", "OnnxEvaluator"):
            assert load_workflow_config(workflow).evaluator is not None
            continue
        with pytest.raises(WorkflowConfigError) as caught:
            load_workflow_config(workflow)
        message = str(caught.value)
        assert "is Microsoft Olive's evaluator for" in message and "unknown" not in message, message
