"""The real OpenVINO execution provider from its pip package (``onnxruntime-ep-openvino``): sessions made for its
device with checked options, bad input refused before any work, and a workflow whose search spans the CPU
provider and OpenVINO in two precisions.

Run by the ``ep-openvino`` tox environment; everywhere else the tests skip, saying why.
"""

from __future__ import annotations

import json

import pytest

from olive.exceptions import ModelLoadError, WorkflowConfigError
from olive.execution_providers.adapter import EPUnavailableError
from olive.execution_providers.known import OpenVINOAdapter
from olive.execution_providers.registry import plugin_devices, register
from olive.measure import create_session, describe_session
from olive.testing.models import bert_like_model, mlp_model, random_inputs, save_model, write_npz_dataset
from olive.workflows.run import prepare, run


def _openvino_reason() -> str | None:
    try:
        register(OpenVINOAdapter())
        if not plugin_devices(OpenVINOAdapter()):
            return "the OpenVINO library loaded but offers no device here"
    except EPUnavailableError as exc:
        return exc.reason
    return None


REASON = _openvino_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"OpenVINO execution provider unavailable: {REASON}")

OPENVINO = "OpenVINOExecutionProvider"
PRECISIONS = {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": ["f32", "bf16"]}


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    model = save_model(bert_like_model(), folder / "model")
    write_npz_dataset(folder / "data.npz", model, num_samples=6, sequence_length=16)
    return model, folder / "data.npz"


def test_a_session_runs_on_openvino_for_its_device_with_the_options_spelled_for_it(bert):
    model, _ = bert
    settings = {"execution_provider": OPENVINO, "provider_options": [{"INFERENCE_PRECISION_HINT": "f32"}]}
    session = create_session(model.model_path, settings)
    described = describe_session(session)
    assert described["providers"][0] == OPENVINO
    # Every node went to OpenVINO, and the session says so.
    assert described["nodes_by_provider"][OPENVINO] > 0
    assert described["nodes_not_taken_count"] == 0
    cpu = create_session(model.model_path, {"execution_provider": "CPUExecutionProvider"})
    feeds = random_inputs(model, batch_size=1, sequence_length=16, seed=3)
    import numpy as np

    np.testing.assert_allclose(session.run(None, feeds)[0], cpu.run(None, feeds)[0], atol=1e-3)


def test_options_go_into_load_config_under_the_device():
    adapter = OpenVINOAdapter()
    device = next(d for d in plugin_devices(adapter) if d.ep_name == OPENVINO)
    native = adapter.provider_options({"INFERENCE_PRECISION_HINT": "bf16", "NUM_STREAMS": "1"}, device)
    assert json.loads(native["load_config"]) == {"CPU": {"INFERENCE_PRECISION_HINT": "bf16", "NUM_STREAMS": "1"}}


def test_a_value_the_library_rejects_is_one_line_naming_the_valid_values(tmp_path, capfd):
    model = save_model(mlp_model(), tmp_path / "model")
    settings = {"execution_provider": [[OPENVINO, {"load_config": {"CPU": {"INFERENCE_PRECISION_HINT": "F32"}}}]]}
    with pytest.raises(ModelLoadError) as caught:
        create_session(model.model_path, settings)
    assert "Supported values: bf16, f16, f32" in str(caught.value)
    assert "\n" not in str(caught.value)
    # onnxruntime's own log of the failure is silenced: the error above says it once.
    assert "Wrong value F32" not in capfd.readouterr().err


def test_a_device_it_does_not_offer_lists_those_it_does(tmp_path):
    model = save_model(mlp_model(), tmp_path / "model")
    with pytest.raises(ModelLoadError, match=r"offers no npu device on this machine; devices it offers: .* on cpu"):
        create_session(model.model_path, {"execution_provider": OPENVINO, "device": "npu"})


def _workflow(folder, data, providers, **extra):
    return {
        "input_model": {"type": "ONNXModel", "model_path": str(folder)},
        "systems": {
            "local": {"type": "LocalSystem", "accelerators": [{"device": "cpu", "execution_providers": providers}]}
        },
        "target": "local",
        "data_configs": [
            {
                "name": "d",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": str(data)},
                "dataloader_config": {"batch_size": 1},
            }
        ],
        "evaluators": {
            "e": {
                "metrics": [
                    {
                        "name": "agreement",
                        "type": "agreement",
                        "data_config": "d",
                        "pooling": "mean",
                        "mask_input": "attention_mask",
                        "sub_types": [
                            {"name": "cosine_mean", "priority": 1, "goal": {"type": "threshold", "value": 0.999}},
                            {"name": "cosine_min", "goal": {"type": "threshold", "value": 0.995}},
                        ],
                    }
                ]
            }
        },
        "evaluator": "e",
        "passes": {
            "quantize": {
                "type": "OnnxDynamicQuantization",
                "precision": "uint8",
                "per_channel": True,
                "reduce_range": False,
                "quant_preprocess": False,
            }
        },
        "output_dir": str(folder.parent / "out"),
        "cache_dir": str(folder.parent / "cache"),
        **extra,
    }


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"INFERENCE_PRECISIN_HINT": "f32"}, "did you mean 'INFERENCE_PRECISION_HINT'"),
        ({"INFERENCE_PRECISION_HINT": "F32"}, "one of f32, bf16, f16"),
        ({"load_config": {"CPU": {"INFERENCE_PRECISION_HINT": "F32"}}}, "Supported values: bf16, f16, f32"),
    ],
)
def test_bad_options_are_config_errors_before_any_work(bert, options, expected):
    model, data = bert
    folder = model.model_path.rsplit("/", 1)[0]
    from pathlib import Path

    workflow = _workflow(Path(folder), data, ["CPUExecutionProvider", [OPENVINO, options]])
    with pytest.raises(WorkflowConfigError, match="execution_providers\\[1\\]") as caught:
        prepare(workflow)
    assert expected in str(caught.value)
    assert not (Path(folder).parent / "out").exists()


@pytest.mark.parametrize("asked", ["openvino", "OpenVNIO"])
def test_a_misspelled_openvino_is_a_config_error_naming_it_among_the_installed_providers(bert, asked):
    from pathlib import Path

    model, data = bert
    folder = Path(model.model_path).parent
    with pytest.raises(WorkflowConfigError) as caught:
        prepare(_workflow(folder, data, [asked]))
    message = str(caught.value)
    assert f"{asked} (did you mean '{OPENVINO}'?)" in message
    assert f"installed plugin packages add {OPENVINO}" in message and "CPUExecutionProvider" in message


def test_a_provider_name_in_the_wrong_case_is_a_config_error_with_its_spelling(bert):
    from pathlib import Path

    model, data = bert
    with pytest.raises(WorkflowConfigError) as caught:
        prepare(_workflow(Path(model.model_path).parent, data, ["OpenVinoExecutionProvider"]))
    # Before: the adapter was found, then "offers no cpu device on this machine" while it listed one.
    assert f"provider names are case-sensitive; use '{OPENVINO}'" in str(caught.value)


def test_a_search_spans_the_cpu_provider_and_openvino_in_two_precisions(bert):
    from pathlib import Path

    model, data = bert
    folder = Path(model.model_path).parent
    workflow = _workflow(
        folder,
        data,
        ["CPUExecutionProvider", [OPENVINO, {"INFERENCE_PRECISION_HINT": PRECISIONS}]],
        search_strategy={"execution_order": "joint", "sampler": "sequential"},
    )
    prepared = prepare(workflow)
    assert [t.label for t in prepared.targets] == [
        "cpu-cpu",
        "cpu-openvino[INFERENCE_PRECISION_HINT=f32]",
        "cpu-openvino[INFERENCE_PRECISION_HINT=bf16]",
    ]
    output = run(prepared)
    candidates = {n.model_id: n for n in output.get_output_models()}
    labels = sorted((n.target or {}).get("label") for n in candidates.values())
    # The quantized model on each target, and the input model on each target but the baseline's.
    assert len(candidates) == 5
    assert labels.count("cpu-openvino[INFERENCE_PRECISION_HINT=bf16]") == 2
    # One quantization run serves every target (the pass does not depend on the accelerator).
    runs = [n for n in output.footprint if n.pass_key == "quantize"]
    assert len(runs) == 1
    on_openvino = next(
        n for n in candidates.values() if n.target["label"].endswith("=f32]") and n.target_of == "input_model"
    )
    assert on_openvino.metrics["agreement-cosine_mean"]["value"] > 0.9999
    assert on_openvino.target["nodes_by_provider"][OPENVINO] > 0
    config = json.loads((output.output_dir / "model_config.json").read_text())
    best = output.best
    assert config["target"]["label"] == best.target["label"]
    if best.target["execution_provider"] == OPENVINO:
        assert config["config"]["inference_settings"]["execution_provider"] == OPENVINO
        assert config["target"]["package"] == "onnxruntime-ep-openvino"
        assert any("add_provider_for_devices" in line for line in config["target"]["deploy"])
    # Running again evaluates nothing anew: the evaluations on each target are cached by their settings.
    again = run(prepared)
    assert {n.model_id: n.metrics for n in again.get_output_models()} == {
        n.model_id: n.metrics for n in output.get_output_models()
    }


def test_olive_run_names_every_target_and_labels_rows_by_passes_and_target(bert, tmp_path):
    from pathlib import Path

    from click.testing import CliRunner

    from olive.cli.main import cli

    model, data = bert
    folder = Path(model.model_path).parent
    workflow = _workflow(
        folder,
        data,
        ["CPUExecutionProvider", [OPENVINO, {"INFERENCE_PRECISION_HINT": PRECISIONS}]],
        search_strategy={"execution_order": "joint", "sampler": "sequential"},
        output_dir=str(tmp_path / "out"),
    )
    file = tmp_path / "wf.json"
    file.write_text(json.dumps(workflow))
    env = {"COLUMNS": "200"}
    dry = CliRunner().invoke(cli, ["run", str(file), "--dry-run"], env=env)
    assert dry.exit_code == 0, dry.output
    targets = "cpu-cpu, cpu-openvino[INFERENCE_PRECISION_HINT=f32], cpu-openvino[INFERENCE_PRECISION_HINT=bf16]"
    assert f"targets (3): {targets}" in dry.stdout.splitlines()
    result = CliRunner().invoke(cli, ["run", str(file)], env=env)
    assert result.exit_code == 0, result.output
    assert "None" not in result.stdout, result.stdout
    assert result.stdout.count("on=cpu-openvino[INFERENCE_PRECISION_HINT=bf16]") == 2, result.stdout


def test_the_chosen_model_loads_with_its_recorded_settings(bert):
    from pathlib import Path

    from olive.model.types import model_from_json

    model, data = bert
    folder = Path(model.model_path).parent
    workflow = _workflow(folder, data, [[OPENVINO, {"INFERENCE_PRECISION_HINT": "f32"}]])
    workflow["output_dir"] = str(folder.parent / "out-single")
    output = run(workflow)
    config = json.loads((output.output_dir / "model_config.json").read_text())
    assert config["config"]["inference_settings"]["provider_options"] == [{"INFERENCE_PRECISION_HINT": "f32"}]
    loaded = model_from_json(config)
    session = loaded.prepare_session()
    assert session.get_providers()[0] == OPENVINO
    # The deployment lines run as they are, without Olive.
    namespace: dict = {}
    code = "\n".join(config["target"]["deploy"]).replace('"model.onnx"', repr(str(output.output_dir / "model.onnx")))
    exec(code, namespace)
    assert namespace["session"].get_providers()[0] == OPENVINO
