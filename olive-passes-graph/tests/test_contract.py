"""Every pass keeps the Pass contract and is found through its entry point, in-process and after pip install."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from olive.testing import assert_pass_contract
from olive_passes_graph.add_metadata import AddOliveMetadata
from olive_passes_graph.compose import ComposeOnnxModels
from olive_passes_graph.dynamic_to_fixed_shape import DynamicToFixedShape
from olive_passes_graph.graph_optimization import OrtGraphOptimization
from olive_passes_graph.graph_surgeries import GraphSurgeries
from olive_passes_graph.io_datatype_converter import OnnxIODataTypeConverter
from olive_passes_graph.opset_conversion import OnnxOpVersionConversion
from olive_passes_graph.peephole import OnnxPeepholeOptimizer
from olive_passes_graph.session_params_tuning import OrtSessionParamsTuning
from olive_passes_graph.split import CaptureSplitInfo, SplitModel
from olive_passes_graph.transformer_optimization import OrtTransformersOptimization

PROJECT = Path(__file__).resolve().parents[1]
PASSES = {
    "OnnxPeepholeOptimizer": OnnxPeepholeOptimizer,
    "OrtTransformersOptimization": OrtTransformersOptimization,
    "OrtGraphOptimization": OrtGraphOptimization,
    "DynamicToFixedShape": DynamicToFixedShape,
    "OnnxOpVersionConversion": OnnxOpVersionConversion,
    "OrtSessionParamsTuning": OrtSessionParamsTuning,
    "AddOliveMetadata": AddOliveMetadata,
    "GraphSurgeries": GraphSurgeries,
    "CaptureSplitInfo": CaptureSplitInfo,
    "SplitModel": SplitModel,
    "ComposeOnnxModels": ComposeOnnxModels,
    "OnnxIODataTypeConverter": OnnxIODataTypeConverter,
}
# Config each pass needs to have something to do (required params, or one of two exclusive forms).
CONFIGS = {
    "OrtTransformersOptimization": {"model_type": "bert"},
    "DynamicToFixedShape": {"dim_param": ["batch"], "dim_value": [2]},
    "OrtSessionParamsTuning": {"intra_thread_num_list": [1], "warmup_num": 1, "repeat_test_num": 2},
    "AddOliveMetadata": {"graph_name": "tiny"},
    "GraphSurgeries": {"surgeries": [{"surgeon": "MatMulAddToGemm"}]},
    "CaptureSplitInfo": {"num_splits": 2},
    "SplitModel": {"split_assignments": "encoder.layer.0=0;encoder.layer.1=1"},
}
# Passes that take a layered model (tiny_bert) instead of tiny_mlp.
ON_BERT = {"OrtTransformersOptimization", "CaptureSplitInfo", "SplitModel", "ComposeOnnxModels"}


@pytest.mark.parametrize("name", sorted(PASSES))
def test_pass_contract(name, tiny_bert, tiny_mlp, run_pass):
    model = tiny_bert if name in ON_BERT else tiny_mlp
    if name == "ComposeOnnxModels":
        model = run_pass(SplitModel, tiny_bert, CONFIGS["SplitModel"])
    report = assert_pass_contract(PASSES[name], model=model, entry_point_name=name, config=CONFIGS.get(name))
    assert report["ran"] >= 1


def test_searched_params_cover_every_level(tiny_bert):
    report = assert_pass_contract(OrtGraphOptimization, model=tiny_bert)
    assert report["ran"] == 3  # basic, extended, all
    report = assert_pass_contract(OrtTransformersOptimization, model=tiny_bert, config={"model_type": "bert"})
    assert report["ran"] == 4  # opt_level 0, 1, 2, 99


def test_registry_finds_every_pass_by_entry_point():
    from olive.plugins.registry import PassRegistry

    registry = PassRegistry()
    ours = {e.name: e for e in registry.entries() if e.distribution == "olive-passes-graph"}
    assert set(ours) == set(PASSES)
    for name, cls in PASSES.items():
        loaded = registry.get_pass_class(name)
        assert loaded is cls
        assert loaded.distribution() == "olive-passes-graph"


def test_found_after_pip_install_into_fresh_venv(fresh_venv, tmp_path):
    from olive.testing import build_wheel

    wheel = build_wheel(PROJECT, tmp_path / "wheels")
    fresh_venv.pip_install("--no-deps", "--no-index", str(wheel))
    code = """
import json, importlib.metadata as md
from olive.plugins.registry import PassRegistry
registry = PassRegistry()
found = {}
for entry in registry.entries():
    if entry.distribution == "olive-passes-graph":
        cls = registry.get_pass_class(entry.name)
        import sys
        found[entry.name] = {"module_file": sys.modules[cls.__module__].__file__, "pass_name": cls.pass_name(),
                              "distribution": cls.distribution()}
print(json.dumps(found))
"""
    out = fresh_venv.python_run(code).stdout.strip().splitlines()[-1]
    found = json.loads(out)
    assert set(found) == set(PASSES)
    for name, info in found.items():
        assert info["pass_name"] == name
        assert info["distribution"] == "olive-passes-graph"
        # The class came from the wheel installed into the venv, not from this checkout.
        assert Path(info["module_file"]).is_relative_to(fresh_venv.path), info["module_file"]


def test_listing_imports_no_pass_module():
    # Entry-point metadata alone lists the passes; none of their modules (nor onnxruntime) is imported.
    code = (
        "import sys\nfrom olive.plugins.registry import PassRegistry\n"
        "names = [e.name for e in PassRegistry().entries() if e.distribution == 'olive-passes-graph']\n"
        f"assert len(names) == {len(PASSES)}, names\n"
        "bad = [m for m in sys.modules if m.startswith('olive_passes_graph.') or m == 'onnxruntime']\n"
        "assert not bad, bad\n"
    )
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True)
