"""Tests of the pass: found through its entry point, true to the Pass contract, correct on a real
model, and usable from a workflow with a search.

Run them against the installed distribution (``pip install -e ".[test]"`` or ``tox``): the entry point
only exists once the distribution is installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from {{ cookiecutter.module_name }} import onnx_pass

PASS_CLASS = onnx_pass.{{ cookiecutter.class_name }}
PASS_NAME = "{{ cookiecutter.class_name }}"
DISTRIBUTION = "{{ cookiecutter.distribution_name }}"


@pytest.fixture
def documented_model(tmp_path):
    """A tiny MLP whose model, graph and nodes all carry doc strings."""
    from olive.testing.models import mlp_model, save_model

    proto = mlp_model(seed=0)
    proto.doc_string = "model doc"
    proto.graph.doc_string = "graph doc"
    for node in proto.graph.node:
        node.doc_string = f"made by {node.name}"
    return save_model(proto, tmp_path / "input")


def test_found_through_entry_point():
    from olive.plugins.registry import get_registry

    registry = get_registry()
    entries = [entry for entry in registry.entries() if entry.name == PASS_NAME]
    assert entries, f"no olive.passes entry point named {PASS_NAME}: is the distribution installed?"
    assert [entry.distribution for entry in entries] == [DISTRIBUTION]
    assert registry.get_pass_class(PASS_NAME) is PASS_CLASS
    assert registry.get_pass_class(f"{DISTRIBUTION}:{PASS_NAME}") is PASS_CLASS


def test_listed_by_olive_passes():
    from importlib.metadata import version

    result = subprocess.run(
        [sys.executable, "-m", "olive.cli.main", "passes", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    listed = [item for item in json.loads(result.stdout) if item["name"] == PASS_NAME]
    assert len(listed) == 1, result.stdout
    assert listed[0]["distribution"] == DISTRIBUTION
    assert listed[0]["version"] == version(DISTRIBUTION)


def test_pass_contract(documented_model):
    from olive.testing import assert_pass_contract

    assert_pass_contract(PASS_CLASS, model=documented_model, entry_point_name=PASS_NAME)


@pytest.mark.parametrize("keep_graph_doc_string", [False, True])
def test_strips_doc_strings_and_keeps_outputs(run_pass, documented_model, keep_graph_doc_string):
    from olive.measure import ReferenceOutputs
    from olive.testing.models import random_inputs

    config = {"keep_graph_doc_string": keep_graph_doc_string}
    output = run_pass(PASS_CLASS, documented_model, config)
    proto = output.load_model()
    assert proto.doc_string == ""
    assert all(node.doc_string == "" for node in proto.graph.node)
    assert proto.graph.doc_string == ("graph doc" if keep_graph_doc_string else "")
    # Outputs compared the way Olive's agreement metric compares them (olive.measure): the input model runs
    # once on the samples, the output model on the same ones; stripping doc strings changes no output value.
    reference = ReferenceOutputs.of_model(documented_model, [random_inputs(documented_model, batch_size=4)])
    scores = reference.score(output)
    assert scores["max_abs_diff"] == 0.0
    assert scores["cosine_min"] == 1.0


def test_workflow_searches_the_param(tmp_path, documented_model):
    import olive.workflows

    config = {
        "input_model": {"type": "ONNXModel", "model_path": str(documented_model.model_path)},
        "systems": {
            "local": {
                "type": "LocalSystem",
                "accelerators": [{"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}],
            }
        },
        "passes": {"strip": {"type": PASS_NAME}},
        "search_strategy": {"execution_order": "joint", "sampler": "sequential", "max_samples": 0},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    output = olive.workflows.run(config)
    runs = [node for node in output.footprint if node.pass_name == PASS_NAME]
    assert sorted(node.config["keep_graph_doc_string"] for node in runs) == [False, True]
    assert all(node.status == "ok" for node in runs)
    import onnx

    for node in runs:
        path = Path(node.model_path)
        graph_doc = onnx.load(str(path / "model.onnx" if path.is_dir() else path)).graph.doc_string
        assert graph_doc == ("graph doc" if node.config["keep_graph_doc_string"] else "")
