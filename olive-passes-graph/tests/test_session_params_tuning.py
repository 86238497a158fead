from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import files_under

from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.model.types import model_from_json
from olive.testing import write_npz_dataset
from olive_passes_graph.session_params_tuning import OrtSessionParamsTuning

FAST = {"warmup_num": 1, "repeat_test_num": 3}


def test_picks_fastest_settings_and_attaches_them(tiny_bert, run_pass, tmp_path):
    data = write_npz_dataset(tmp_path / "data.npz", tiny_bert, num_samples=4)
    config = {
        **FAST,
        "data_config": {
            "name": "bench",
            "type": "NpzDataContainer",
            "load_dataset_config": {"data_path": str(data)},
            "dataloader_config": {"batch_size": 2},
        },
        "intra_thread_num_list": [1, 2],
        "opt_level_list": ["ORT_ENABLE_BASIC", 99],
    }
    result = run_pass(OrtSessionParamsTuning, tiny_bert, config)

    table = result.model_attributes["session_params_tuning"]["table"]
    assert len(table) == 4  # 2 thread counts x 2 levels
    assert {(r["intra_op_num_threads"], r["graph_optimization_level"]) for r in table} == {
        (1, "ORT_ENABLE_BASIC"),
        (2, "ORT_ENABLE_BASIC"),
        (1, "ORT_ENABLE_ALL"),
        (2, "ORT_ENABLE_ALL"),
    }
    best = min(table, key=lambda r: r["latency_ms_p50"])
    assert result.inference_settings == {
        "execution_provider": ["CPUExecutionProvider"],
        "session_options": {
            "execution_mode": "ORT_SEQUENTIAL",
            "graph_optimization_level": best["graph_optimization_level"],
            "intra_op_num_threads": best["intra_op_num_threads"],
            "inter_op_num_threads": 0,
        },
    }
    # Same model, new settings; a session built from the handler uses them.
    assert Path(result.model_path).read_bytes() == Path(tiny_bert.model_path).read_bytes()
    assert Path(result.model_path).parent != Path(tiny_bert.model_path).parent
    options = result.prepare_session().get_session_options()
    assert options.intra_op_num_threads == best["intra_op_num_threads"]
    assert options.graph_optimization_level.name == best["graph_optimization_level"]
    # The settings survive the model's JSON round trip (how the engine hands models to the evaluator).

    assert model_from_json(result.to_json()).inference_settings == result.inference_settings


def test_npz_path_and_generated_inputs(tiny_mlp, run_pass, tmp_path):
    data = write_npz_dataset(tmp_path / "d.npz", tiny_mlp, num_samples=2)
    by_path = run_pass(OrtSessionParamsTuning, tiny_mlp, {**FAST, "data_config": str(data), "intra_thread_num_list": 1})
    generated = run_pass(OrtSessionParamsTuning, tiny_mlp, {**FAST, "intra_thread_num_list": [1]})
    for result in (by_path, generated):
        assert result.inference_settings["session_options"]["intra_op_num_threads"] == 1


def test_parallel_mode_and_io_binding(tiny_mlp, run_pass):
    config = {
        **FAST,
        "execution_mode_list": ["ORT_PARALLEL", 0],
        "intra_thread_num_list": [1],
        "inter_thread_num_list": [1, 2],
        "io_bind": True,
    }
    result = run_pass(OrtSessionParamsTuning, tiny_mlp, config)
    rows = result.model_attributes["session_params_tuning"]["table"]
    combos = {(r["execution_mode"], r["inter_op_num_threads"], r["io_bind"]) for r in rows}
    # inter-op threads only matter in parallel mode, so sequential is timed once per io_bind value.
    assert combos == {
        ("ORT_PARALLEL", 1, False),
        ("ORT_PARALLEL", 2, False),
        ("ORT_PARALLEL", 1, True),
        ("ORT_PARALLEL", 2, True),
        ("ORT_SEQUENTIAL", 1, False),
        ("ORT_SEQUENTIAL", 1, True),
    }
    assert all(r["latency_ms_p50"] > 0 for r in rows)


def test_providers_the_install_lacks_are_skipped(tiny_mlp, run_pass):
    config = {**FAST, "providers_list": ["CUDAExecutionProvider", "CPUExecutionProvider"], "intra_thread_num_list": 1}
    result = run_pass(OrtSessionParamsTuning, tiny_mlp, config)
    assert {r["execution_provider"] for r in result.model_attributes["session_params_tuning"]["table"]} == {
        "CPUExecutionProvider"
    }


def test_no_usable_provider_is_a_config_error(tiny_mlp, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match="none of the providers to tune"):
        OrtSessionParamsTuning(DEFAULT_CPU_ACCELERATOR, {"providers_list": "CUDAExecutionProvider"}).run(tiny_mlp, out)
    assert files_under(out) == []


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"opt_level_list": [5]}, "opt_level_list"),
        ({"execution_mode_list": ["fast"]}, "execution_mode_list"),
        ({"intra_thread_num_list": [-1]}, "negative thread counts"),
        ({"repeat_test_num": 0}, "repeat_test_num"),
    ],
)
def test_bad_lists_are_config_errors(config, message):
    with pytest.raises(PassConfigError, match=message):
        OrtSessionParamsTuning.generate_config(DEFAULT_CPU_ACCELERATOR, config)


def test_data_that_does_not_fit_the_model_fails_before_writing(tiny_bert, tiny_mlp, tmp_path):
    data = write_npz_dataset(tmp_path / "mlp.npz", tiny_mlp, num_samples=2)
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match=r"data_config 'mlp' does not provide input\(s\) 'input_ids'"):
        OrtSessionParamsTuning(DEFAULT_CPU_ACCELERATOR, {**FAST, "data_config": str(data)}).run(tiny_bert, out)
    assert files_under(out) == []


def test_default_config_does_not_import_onnxruntime():
    code = (
        "import sys\n"
        "from olive.hardware import DEFAULT_CPU_ACCELERATOR\n"
        "from olive_passes_graph.session_params_tuning import OrtSessionParamsTuning\n"
        "OrtSessionParamsTuning.default_config(DEFAULT_CPU_ACCELERATOR)\n"
        "OrtSessionParamsTuning.generate_config(DEFAULT_CPU_ACCELERATOR, {'intra_thread_num_list': [1, 2]})\n"
        "assert 'onnxruntime' not in sys.modules and 'numpy' not in sys.modules, 'heavy import'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
