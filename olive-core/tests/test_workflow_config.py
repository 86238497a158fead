"""Workflow config loading: JSON/YAML, paths, deprecated forms, and one clear error per mistake."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from engine_support import base_workflow, write_mlp

from olive.exceptions import PassConfigError, WorkflowConfigError
from olive.workflows.config import load_workflow_config
from olive.workflows.run import prepare

pytestmark = pytest.mark.usefixtures("engine_registry")


def test_json_and_yaml_relative_paths_resolve_against_config_folder(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    write_mlp(folder / "models")
    data = {
        "input_model": {"type": "ONNXModel", "config": {"model_path": "models/model.onnx"}},
        "passes": {"add": {"type": "AddMatMuls", "config": {"n": 1}}},
        "cache_dir": "c",
    }
    (folder / "wf.json").write_text(json.dumps(data))
    import yaml

    (folder / "wf.yaml").write_text(yaml.safe_dump(data))
    for name in ("wf.json", "wf.yaml"):
        config = load_workflow_config(folder / name)
        assert config.input_model.config["model_path"] == str(folder / "models" / "model.onnx")
        assert config.cache_dir == folder / "c"
        assert config.output_dir == folder / "output"
        assert config.passes["add"][0].params == {"n": 1}
        assert config.search_strategy is None


def test_engine_section_is_accepted_with_a_deprecation_warning(tmp_path: Path, caplog) -> None:
    data = base_workflow(tmp_path)
    data["engine"] = {"cache_dir": data.pop("cache_dir"), "search_strategy": {"search_algorithm": "exhaustive"}}
    with caplog.at_level(logging.WARNING, logger="olive"):
        config = load_workflow_config(data)
    assert config.cache_dir == tmp_path / "cache"
    assert config.search_strategy.sampler == "sequential"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'engine' section is deprecated" in w for w in warnings)
    assert sum("search_algorithm" in w for w in warnings) == 1


def test_old_search_algorithm_maps_to_sampler_and_max_samples(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path, search_strategy={"search_algorithm": "random", "search_algorithm_config": {"num_samples": 2}}
    )
    strategy = load_workflow_config(data).search_strategy
    assert (strategy.sampler, strategy.max_samples) == ("random", 2)


def _error(data: dict) -> str:
    with pytest.raises(WorkflowConfigError) as info:
        prepare(data)
    return str(info.value)


def test_unknown_keys_name_their_path_and_the_closest_key(tmp_path: Path) -> None:
    data = base_workflow(tmp_path, serach_strategy={})
    assert _error(data).startswith("serach_strategy: unknown key (did you mean 'search_strategy'?)")
    data = base_workflow(tmp_path, search_strategy={"execution_order": "joint", "max_sample": 3})
    assert _error(data).startswith("search_strategy.max_sample: unknown key (did you mean 'max_samples'?)")
    data = base_workflow(tmp_path, search_strategy={"sampler": "tpe", "execution_order": "joint-ish"})
    assert "search_strategy.execution_order: unknown value 'joint-ish'" in _error(data)


def test_dangling_references_are_config_errors(tmp_path: Path) -> None:
    data = base_workflow(tmp_path, evaluator="common")
    assert _error(data).startswith("evaluator: no evaluator named 'common'")
    data = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "data_config": "calib"}})
    assert _error(data).startswith("passes.add.data_config: no data config named 'calib'")
    data = base_workflow(tmp_path, target="local")
    assert _error(data).startswith("target: no system named 'local'")
    data = base_workflow(tmp_path, passes={"add": {"type": "AddMatMul"}})
    message = _error(data)
    assert message.startswith("passes.add.type:") and "AddMatMuls" in message


def test_pass_param_errors_name_the_pass_key_and_all_come_before_any_run(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"first": {"type": "AddMatMuls", "n": "x"}, "second": {"type": "ScaleOutput", "config": {"scale": "x"}}},
    )
    with pytest.raises(PassConfigError) as info:
        prepare(data)
    message = str(info.value)
    # (An unknown param is ignored with a warning, as in Microsoft Olive: test_olive_workflow_files.py.)
    assert "passes.first" in message and "param 'n' expects int" in message
    assert "passes.second" in message and "param 'scale' expects" in message
    assert not (tmp_path / "cache").exists()


def test_missing_input_model_file_names_the_path(tmp_path: Path) -> None:
    data = base_workflow(tmp_path)
    data["input_model"]["model_path"] = str(tmp_path / "nope.onnx")
    assert _error(data).startswith("input_model.model_path: ")


def test_unavailable_execution_providers_are_dropped_with_one_warning(tmp_path: Path, caplog) -> None:
    systems = {
        "local": {
            "type": "LocalSystem",
            "accelerators": [
                {"device": "cpu", "execution_providers": ["DmlExecutionProvider", "CPUExecutionProvider"]}
            ],
        }
    }
    with caplog.at_level(logging.WARNING):
        prepared = prepare(base_workflow(tmp_path, systems=systems, target="local"))
    assert prepared.execution_providers == ["CPUExecutionProvider"]
    assert sum("DmlExecutionProvider" in r.getMessage() for r in caplog.records) == 1


def test_search_space_sizes_of_a_dry_run(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={
            "add": {"type": "AddMatMuls"},
            "scale": [{"type": "ScaleOutput"}, {"type": "ScaleOutput", "scale": 2.0}],
        },
        search_strategy={"execution_order": "joint"},
    )
    prepared = prepare(data)
    # AddMatMuls: n in {0,1,2} with extra valid only for n<=1 -> 3 points; ScaleOutput: 4 + 2 alternatives.
    assert prepared.search_space_sizes() == {"add": 3, "scale": 6}
    assert prepared.total_size() == 18
    assert not (tmp_path / "cache").exists()


def test_data_config_names_paths_and_user_script_objects_are_resolved(tmp_path: Path) -> None:
    import numpy as np

    import olive

    folder = tmp_path / "proj"
    write_mlp(folder / "m")
    np.savez(folder / "calib.npz", input=np.zeros((2, 16), dtype=np.float32))
    (folder / "tables").mkdir()
    (folder / "tables" / "t.txt").write_text("x")
    (folder / "script.py").write_text("def triple(x):\n    return 3 * x\n")
    data = {
        "input_model": {"type": "ONNXModel", "model_path": "m/model.onnx"},
        "data_configs": [
            {"name": "calib", "type": "NpzDataContainer", "load_dataset_config": {"data_path": "calib.npz"}}
        ],
        "user_script": "script.py",
        "passes": {
            "inspect": {"type": "Inspect", "data_config": "calib", "table": "tables/t.txt", "transform": "triple"}
        },
    }
    (folder / "wf.json").write_text(json.dumps(data))
    output = olive.run(folder / "wf.json")
    received = json.loads((Path(output.best.model_path).parent / "received.json").read_text())
    assert received == {
        "data_config": "DataConfig",
        "data_config_name": "calib",
        "table": str(folder / "tables" / "t.txt"),
        "transform": 6,
    }
    bad = {**data, "passes": {"inspect": {**data["passes"]["inspect"], "transform": "quadruple"}}}
    (folder / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(WorkflowConfigError, match=r"^passes.inspect.transform: 'quadruple' is not defined in user_scr"):
        prepare(folder / "bad.json")


def test_a_search_space_left_without_valid_points_is_a_config_error(tmp_path: Path) -> None:
    # extra is only searchable for n in {0, 1}; pinning n=2 leaves it no valid value.
    data = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 2}}, search_strategy=True)
    with pytest.raises(
        PassConfigError, match=r"^passes.add \(AddMatMuls\): its search space has no valid point: param"
    ):
        prepare(data)
    data["passes"]["add"]["extra"] = True
    assert prepare(data).search_space_sizes() == {"add": 1}


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        (
            {"sampler": "tpe", "sampler_config": {"n_startup": 3}},
            "search_strategy.sampler_config.n_startup: unknown option of the tpe sampler (did you mean "
            "'n_startup_trials'?); valid keys here: n_startup_trials, multivariate, group, max_repeats",
        ),
        (
            {"sampler": "tpe", "sampler_config": {"n_startup_trials": "3"}},
            "search_strategy.sampler_config.n_startup_trials: "
            'expected a whole number from 0 to 10000, got a string ("3")',
        ),
        (
            {"sampler_config": {"seed": 3}},
            "search_strategy.sampler_config.seed: unknown option of the sequential sampler; it takes none",
        ),
    ],
)
def test_options_a_builtin_sampler_does_not_read_are_config_errors(
    tmp_path: Path, strategy: dict, message: str
) -> None:
    # A misspelt option used to be dropped without a word, so the search ran with the defaults.
    with pytest.raises(WorkflowConfigError) as info:
        load_workflow_config(base_workflow(tmp_path, search_strategy=strategy))
    assert str(info.value) == message
    config = load_workflow_config(
        base_workflow(tmp_path, search_strategy={"sampler": "tpe", "sampler_config": {"n_startup_trials": 3}})
    )
    assert config.search_strategy.sampler_config == {"n_startup_trials": 3}


def test_an_empty_config_file_says_it_is_empty(tmp_path: Path) -> None:
    for name in ("wf.json", "wf.yaml"):
        (tmp_path / name).write_text("\n")
        with pytest.raises(WorkflowConfigError) as info:
            load_workflow_config(tmp_path / name)
        assert str(info.value) == (
            f"config file '{tmp_path / name}' is empty; write a workflow into it (`olive quickstart` writes an example)"
        )
