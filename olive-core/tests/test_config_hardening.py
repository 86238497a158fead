"""Hostile and careless input to `olive run`: every case seen in fuzzing is exit 2 with one line naming the JSON
path (or the option) and the reason, before anything is created; never a traceback, a hang or a silent choice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from engine_support import (
    agreement_metric,
    base_workflow,
    searched,
    size_metric,
    with_evaluator,
    write_calibration,
    write_mlp,
)

from olive.cli.main import cli
from olive.config_errors import check_document, load_json, load_yaml
from olive.exceptions import PassParamError, WorkflowConfigError
from olive.measure.sessions import ENUM_MEMBERS, SESSION_OPTIONS, check_inference_settings
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import model_proto_to_olive_model
from olive.plugins.registry import PassRegistry
from olive.workflows.config import load_workflow_config, read_config_file

TESTS_DIR = Path(__file__).parent
pytestmark = pytest.mark.usefixtures("engine_registry")


def _workflow(tmp_path: Path) -> dict:
    data = write_calibration(tmp_path / "calib.npz")
    return with_evaluator(
        base_workflow(tmp_path), size_metric(), agreement_metric(), data=data, dataloader_config={"batch_size": 2}
    )


def _dry_run(tmp_path: Path, workflow: dict | None = None, text: str | None = None, name: str = "wf.json") -> Any:
    config = tmp_path / name
    config.write_text(text if text is not None else json.dumps(workflow))
    result = CliRunner().invoke(cli, ["run", str(config), "--dry-run"], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def _error(result: Any) -> str:
    """The one line of an exit 2."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0].removeprefix("Error: ")


def _nothing_created(tmp_path: Path) -> None:
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------- 7: paths


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("m" * 256 + ".onnx", "a name in it is longer than 255 bytes"),
        ("dir/" + "é" * 128, "a name in it is longer than 255 bytes"),  # 256 bytes in UTF-8
        ("a\0b.onnx", "it holds a NUL character"),
        ("loop/model.onnx", "it leads into a symlink loop"),
        ("loop", "it leads into a symlink loop"),
    ],
)
@pytest.mark.parametrize(
    "field",
    [
        ("input_model", "model_path"),
        ("cache_dir",),
        ("output_dir",),
        ("data_configs", 0, "load_dataset_config", "data_path"),
        ("user_script",),
    ],
)
def test_paths_no_file_system_can_take_are_exit_2_naming_the_path_and_why(
    tmp_path: Path, field: tuple, value: str, reason: str
) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    workflow = _workflow(tmp_path)
    parent = workflow
    for part in field[:-1]:
        parent = parent[part]
    parent[field[-1]] = value
    message = _error(_dry_run(tmp_path, workflow))
    path = ".".join(str(p) for p in field).replace(".0.", "[0].")
    assert message.startswith(f"{path}: '") and f"cannot be a path: {reason}" in message, message
    assert "\0" not in message  # shown escaped: the line stays one readable line
    if "\0" in value:
        assert "'a\\x00b.onnx'" in message, message
    _nothing_created(tmp_path)


def test_a_lone_surrogate_anywhere_is_exit_2(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    workflow["input_model"]["model_path"] = "model\udc80.onnx"
    assert _error(_dry_run(tmp_path, text=json.dumps(workflow))) == (
        r"input_model.model_path: the text holds a lone surrogate (\udc80), which is not valid text"
    )
    workflow = _workflow(tmp_path)
    workflow["passes"]["add\ud800"] = {"type": "AddMatMuls"}
    assert "a key holds a lone surrogate (\\ud800)" in _error(_dry_run(tmp_path, text=json.dumps(workflow)))


def test_path_options_are_checked_like_workflow_paths(tmp_path: Path) -> None:
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(_workflow(tmp_path)))
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "afile").write_text("keep")
    for option, value, expected in [
        ("--output-dir", str(tmp_path / "loop"), "it leads into a symlink loop"),
        ("--cache-dir", "c" * 300, "a name in it is longer than 255 bytes"),
        ("--output-dir", str(tmp_path / "afile"), "is a file; give a folder"),
    ]:
        result = CliRunner().invoke(cli, ["run", str(config), option, value], catch_exceptions=False)
        message = _error(result)
        assert message.startswith(f"{option}: ") and expected in message, message
    model = write_mlp(tmp_path / "m")
    for args, expected in [
        (["-m", str(tmp_path / "loop"), "-o", str(tmp_path / "o")], "--model: "),
        (["-m", str(model), "-o", "o" * 300], "--output: "),
        (["-m", str(model), "-o", str(tmp_path / "o"), "--pass-config", "x" * 300], "--pass-config: "),
    ]:
        result = CliRunner().invoke(cli, ["run-pass", "--pass-name", "AddMatMuls", *args], catch_exceptions=False)
        assert _error(result).startswith(expected), result.stderr
    for config_file in (tmp_path / "loop", tmp_path / "loop" / "wf.json", tmp_path / ("w" * 300)):
        result = CliRunner().invoke(cli, ["run", str(config_file)], catch_exceptions=False)
        assert _error(result).startswith("config file '") and "cannot be a path" in result.stderr
    for command in ("info", "clean"):
        result = CliRunner().invoke(cli, ["cache", command, "--cache-dir", str(tmp_path / "loop")])
        assert (
            _error(result)
            == f"--cache-dir: '{tmp_path / 'loop'}' cannot be a path: it leads into a symlink loop; fix the path"
        )
    assert (tmp_path / "afile").read_text() == "keep"


# ------------------------------------------------------------------------------------------- 8: session options


@pytest.mark.parametrize(
    ("settings", "where", "expected"),
    [
        ({"session_options": {"intra_op_num_threads": "x"}}, ".session_options.intra_op_num_threads", "'x' is not"),
        ({"session_options": {"intra_op_num_threads": 10**6}}, ".session_options.intra_op_num_threads", "from 0 to"),
        ({"session_options": {"intra_op_num_threads": 2.5}}, ".session_options.intra_op_num_threads", "whole number"),
        ({"session_options": {"execution_mode": [1]}}, ".session_options.execution_mode", "unknown ExecutionMode"),
        ({"session_options": {"extra_session_config": "x"}}, ".session_options.extra_session_config", "a dict"),
        ({"session_options": {"enable_profiling": 1}}, ".session_options.enable_profiling", "true or false"),
        ({"session_options": {"intra_op_threads": 1}}, ".session_options", "did you mean 'intra_op_num_threads'"),
        ({"session_options": "x"}, ".session_options", "expected a dict"),
        ({"provider_options": "x"}, "", "provider_options needs one dict per execution provider"),
        ({"execution_provider": ["CPUExecutionProvider"], "provider_options": ["x"]}, "", "one dict per"),
        ({"execution_provider": 3}, ".execution_provider", "a provider name or a list"),
        ({"execution_provider": [[1, 2]]}, "", "neither a provider name"),
        ({"tuning_op_result": "x"}, ".tuning_op_result", "a list of tuning results"),
        ({"io_bind": "yes"}, ".io_bind", "true or false"),
        (
            {"session_options": {"optimized_model_filepath": "x.onnx"}},
            ".session_options.optimized_model_filepath",
            "writes only into",
        ),
        ({"session_options": {"enable_profiling": True}}, ".session_options.enable_profiling", "profile file"),
    ],
)
@pytest.mark.parametrize("place", ["input_model", "metric"])
def test_inference_settings_are_checked_when_the_workflow_is_read(
    tmp_path: Path, settings: dict, where: str, expected: str, place: str
) -> None:
    workflow = _workflow(tmp_path)
    if place == "input_model":
        workflow["input_model"]["inference_settings"] = settings
        path = "input_model.inference_settings"
    else:
        workflow["evaluators"]["common"]["metrics"][0]["user_config"] = {"inference_settings": settings}
        path = "evaluators.common.metrics[0].user_config.inference_settings"
    message = _error(_dry_run(tmp_path, workflow))
    assert message.startswith(f"{path}{where}: ") and expected in message, message


def test_checking_inference_settings_imports_no_onnxruntime(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    workflow["input_model"]["inference_settings"] = {
        "execution_provider": ["CPUExecutionProvider"],
        "provider_options": [{}],
        "session_options": {
            "intra_op_num_threads": 2,
            "graph_optimization_level": "ORT_ENABLE_ALL",
            "execution_mode": 1,
        },
    }
    workflow["evaluators"]["common"]["metrics"][0]["user_config"] = {"inference_settings": {"onnx": {}}}
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(workflow))
    code = (
        "import sys; from olive.workflows.config import load_workflow_config;"
        f"load_workflow_config({str(config)!r}); print('onnxruntime' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "False", proc.stderr


def test_the_session_option_tables_match_onnxruntime() -> None:
    import onnxruntime as ort

    options = ort.SessionOptions()
    settable = {n for n in dir(ort.SessionOptions) if isinstance(getattr(ort.SessionOptions, n, None), property)}
    enums = {"execution_mode", "execution_order", "graph_optimization_level"}
    assert set(SESSION_OPTIONS) == settable - enums
    for name, (kind, _, _) in SESSION_OPTIONS.items():
        assert type(getattr(options, name)) is kind, name
    for enum_name, members in ENUM_MEMBERS.items():
        assert {k: int(v) for k, v in getattr(ort, enum_name).__members__.items()} == members
    # every bound is one onnxruntime takes
    for name, (kind, low, high) in SESSION_OPTIONS.items():
        if kind is int:
            setattr(options, name, low)
            setattr(options, name, high)
    check_inference_settings({"session_options": {"intra_op_num_threads": 4096, "log_severity_level": -1}})


# ------------------------------------------------------------------------------------------- 9: numbers

_METRIC = ("evaluators", "common", "metrics", 0)


@pytest.mark.parametrize(
    ("where", "value", "expected"),
    [
        ((*_METRIC, "user_config", "repeat_test_num"), 10**30, "fits in 64 bits"),
        ((*_METRIC, "user_config", "repeat_test_num"), 10**7, "from 1 to 1000000"),
        ((*_METRIC, "user_config", "warmup_num"), 10**9, "from 0 to 100000"),
        ((*_METRIC, "user_config", "sleep_num"), float("nan"), "expected a finite number, got nan"),
        ((*_METRIC, "user_config", "sleep_num"), float("inf"), "expected a finite number, got inf"),
        ((*_METRIC, "user_config", "sleep_num"), 1e30, "from 0 to 60"),
        ((*_METRIC, "user_config", "batch_size"), 0, "from 1 to"),
        ((*_METRIC, "user_config", "input_shapes"), [[10**5, 10**5]], "is more than"),
        (
            ("evaluators", "common", "metrics", 1, "sub_types", 0, "goal"),
            {"type": "threshold", "value": float("nan")},
            "finite",
        ),
        (
            ("evaluators", "common", "metrics", 1, "sub_types", 0, "goal"),
            {"type": "threshold", "value": float("-inf")},
            "finite",
        ),
        (("search_strategy",), {"max_time": float("nan")}, "finite"),
        (("search_strategy",), {"seed": -1}, "from 0 to 4294967295"),
        (("search_strategy",), {"sampler": "tpe", "sampler_config": {"max_repeats": 10**9}}, "from 1 to 1000"),
        (("search_strategy",), {"executor": {"type": "process", "max_workers": 10**6}}, "from 1 to 1024"),
        (("log_severity_level",), 9, "from 0 to 4"),
        (("data_configs", 0, "dataloader_config", "batch_size"), 10**9, "from 1 to 1000000"),
        (("passes", "add", "n"), 2**70, "fits in 64 bits"),
    ],
)
def test_every_number_is_range_checked_at_config_time(tmp_path: Path, where: tuple, value: Any, expected: str) -> None:
    workflow = _workflow(tmp_path)
    workflow["evaluators"]["common"]["metrics"][0]["user_config"] = {}
    parent = workflow
    for part in where[:-1]:
        parent = parent[part]
    parent[where[-1]] = value
    message = _error(_dry_run(tmp_path, workflow))
    assert expected in message, message
    _nothing_created(tmp_path)


def test_dummy_data_shapes_and_samples_are_bounded(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    workflow["data_configs"] = [
        {
            "name": "calib",
            "type": "DummyDataContainer",
            "load_dataset_config": {"input_shapes": [[1, 2**20]], "max_samples": 1000},
        }
    ]
    assert "over 1000 samples is more than" in _error(_dry_run(tmp_path, workflow))


# ------------------------------------------------------------------------------------------- 10: duplicate keys


def test_duplicate_json_keys_are_exit_2_with_the_path_of_the_duplicate(tmp_path: Path) -> None:
    text = json.dumps(_workflow(tmp_path))[:-1] + ', "passes": {"x": {"type": "AddMatMuls"}}}'
    assert _error(_dry_run(tmp_path, text=text)).startswith("passes: given twice in one object")
    nested = json.dumps(_workflow(tmp_path)).replace('"AddMatMuls"', '"AddMatMuls", "n": 1, "n": 2')
    assert _error(_dry_run(tmp_path, text=nested)).startswith("passes.add.n: given twice")


def test_duplicate_yaml_keys_are_exit_2_but_merge_keys_may_be_overridden(tmp_path: Path) -> None:
    model = write_mlp(tmp_path / "input")
    head = f"input_model: {{type: ONNXModel, model_path: {model}}}\ncache_dir: c\noutput_dir: o\n"
    text = head + "passes:\n  add: {type: AddMatMuls}\n  add: {type: ScaleOutput}\n"
    assert _error(_dry_run(tmp_path, text=text, name="wf.yaml")).startswith("passes.add: given twice")
    merged = head + "passes:\n  add:\n    <<: {type: AddMatMuls, n: 1}\n    n: 2\n"
    assert _dry_run(tmp_path, text=merged, name="wf.yaml").exit_code == 0
    assert load_workflow_config(tmp_path / "wf.yaml").passes["add"][0].params == {"n": 2}


def test_document_rules_apply_at_any_depth() -> None:
    with pytest.raises(WorkflowConfigError, match=r"^a\[0\].b: given twice"):
        check_document(load_json('{"a": [{"b": 1, "b": 2}]}'))
    with pytest.raises(WorkflowConfigError, match=r"^a: key 1 is not a string"):
        check_document(load_yaml("a: {1: x}"))
    with pytest.raises(WorkflowConfigError, match="nested more than 64 levels"):
        check_document(load_json("[" * 100 + "]" * 100))
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    with pytest.raises(WorkflowConfigError, match="more than 200000 values"):
        check_document(load_yaml(bomb))


def test_a_config_file_that_is_not_utf8_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "wf.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(WorkflowConfigError, match="is not UTF-8 text"):
        read_config_file(tmp_path / "wf.json")


# ------------------------------------------------------------------------------------------- 11: unknown keys


@pytest.mark.parametrize(
    ("where", "key", "expected"),
    [
        (("data_configs", 0, "dataloader_config"), "batchsize", "did you mean 'batch_size'"),
        (("data_configs", 0, "dataloader_config"), "shuffle", "valid keys here: batch_size, drop_last"),
        (
            ("evaluators", "common", "metrics", 0, "sub_types", 0, "metric_config"),
            "warmup",
            "did you mean 'warmup_num'",
        ),
        (("evaluators", "common", "metrics", 1, "user_config"), "repeat_tests", "did you mean 'repeat_test_num'"),
    ],
)
def test_unknown_keys_at_any_depth_are_exit_2_with_a_did_you_mean(
    tmp_path: Path, where: tuple, key: str, expected: str
) -> None:
    workflow = _workflow(tmp_path)
    parent = workflow
    for part in where:
        parent = parent.setdefault(part, {}) if isinstance(parent, dict) else parent[part]
    parent[key] = 1
    message = _error(_dry_run(tmp_path, workflow))
    assert key in message.split(":", 1)[0] and expected in message, message


def test_metric_backend_is_checked(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    workflow["evaluators"]["common"]["metrics"][0]["backend"] = "torch"
    assert "unknown backend 'torch'" in _error(_dry_run(tmp_path, workflow))
    workflow["evaluators"]["common"]["metrics"][0]["backend"] = "torch_metrics"  # Microsoft Olive's default
    assert _dry_run(tmp_path, workflow).exit_code == 0


# ------------------------------------------------------------------------------------------- 12: one line


def _olive(*args: str) -> subprocess.CompletedProcess:
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from engine_support import make_registry;"
        "from olive.plugins.registry import set_registry; set_registry(make_registry());"
        "from olive.cli.main import main; main(sys.argv[2:])"
    )
    return subprocess.run(
        [sys.executable, "-c", script, str(TESTS_DIR), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=120,
    )


def test_exit_2_is_one_line_even_with_deprecation_notes_and_usage_errors(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    old_style = {**workflow, "engine": {"clean_cache": False}, "search_strategy": {"search_algorithm": "random"}}
    config = tmp_path / "wf.json"
    config.write_text(json.dumps({**old_style, "passes": 3}))
    for args in (
        ["run", str(config)],
        ["run", "--config", str(tmp_path)],
        ["run", str(config), "--bogus"],
        ["run", str(config), "--output-dir", str(config)],
        ["rnu"],
    ):
        proc = _olive(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("Error: "), (args, proc.stderr)
    # A valid old-style workflow still shows its notes.
    config.write_text(json.dumps(old_style))
    proc = _olive("run", str(config), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "'engine' section is deprecated" in proc.stderr and "search_algorithm" in proc.stderr


# ------------------------------------------------------------------------------------------- 13: reasons


class Blocky(Pass):
    """Copies the model; ``block`` must be a power of two >= 16 (as MatMulNBits' block_size)."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {"block": PassConfigParam(type_=int, default_value=32)}

    @classmethod
    def _check_config(cls, config: Any, accelerator_spec: Any) -> None:
        if config.block < 16 or config.block & (config.block - 1):
            raise PassParamError(f"param 'block' is {config.block}; use a power of two >= 16", params="block")

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        return model_proto_to_olive_model(model.load_model(), output_model_path)


@pytest.fixture
def blocky(engine_registry: PassRegistry) -> None:
    engine_registry.register(Blocky, name="Blocky")


@pytest.mark.usefixtures("blocky")
def test_pruning_and_rejection_name_the_param_and_the_reason(tmp_path: Path) -> None:
    workflow = base_workflow(tmp_path, passes={"b": {"type": "Blocky", "block": -16}})
    assert _error(_dry_run(tmp_path, workflow)) == ("passes.b (Blocky): param 'block' is -16; use a power of two >= 16")
    searched_workflow = base_workflow(
        tmp_path, passes={"b": {"type": "Blocky", "block": searched(32, -16, 8)}}, search_strategy={"max_samples": 0}
    )
    config = tmp_path / "search.json"
    config.write_text(json.dumps(searched_workflow))
    result = CliRunner().invoke(cli, ["run", str(config)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    nodes = json.loads((tmp_path / "out" / "footprint.json").read_text())["nodes"]
    reasons = sorted(n["error"] for n in nodes if n["status"] == "pruned")
    assert reasons == [
        "pass 'b' (Blocky): param 'block' is -16; use a power of two >= 16",
        "pass 'b' (Blocky): param 'block' is 8; use a power of two >= 16",
    ]


def test_a_folder_where_a_file_belongs_is_named_as_such(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    (tmp_path / "data.npz").mkdir()
    workflow["data_configs"][0]["load_dataset_config"]["data_path"] = str(tmp_path / "data.npz")
    assert _error(_dry_run(tmp_path, workflow)).endswith("is a folder; give the file itself")
    workflow = _workflow(tmp_path)
    workflow["passes"]["add"]["data_config"] = "data.npz"
    assert (
        _error(_dry_run(tmp_path, workflow)) == "passes.add.data_config: 'data.npz' is a folder; give the file itself"
    )


# ------------------------------------------------------------------------------------------- found by fuzzing


@pytest.mark.parametrize(
    ("parameter", "expected"),
    [
        ({"type": {"colour": ""}, "support": ["a"]}, "unknown search parameter type {'colour': ''}"),
        ({"type": ["Categorical"], "support": ["a"]}, "unknown search parameter type ['Categorical']"),
        ({"type": "Categorical", "support": ["a"], "suport": ["b"]}, "unknown field 'suport'"),
        ({"type": "Conditional", "parents": 3, "support": []}, "parents must be a param name or a list"),
        ({"type": "Conditional", "parents": ["n"], "support": {"a": 1}}, "support must be a list"),
        ({"type": "Conditional", "parents": ["n"], "support": [3]}, 'support entries are {"key"'),
        (
            {"type": "Conditional", "parents": ["n"], "support": [{"key": [[0]], "value": ["a"]}]},
            "holds a list or an object",
        ),
        ({"type": "ConditionalDefault", "parents": ["n"], "support": [{"key": [{}], "value": "a"}]}, "holds a list"),
    ],
)
def test_malformed_search_parameters_are_exit_2_naming_the_param(
    tmp_path: Path, parameter: dict, expected: str
) -> None:
    workflow = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls", "marker": {"olive_parameter_type": "SearchParameter", **parameter}}},
        search_strategy={"execution_order": "joint"},
    )
    message = _error(_dry_run(tmp_path, workflow))
    assert message.startswith("passes.add (AddMatMuls): param 'marker': ") and expected in message, message


@pytest.mark.parametrize(
    ("name", "reason"),
    [("x" * 300, "longer than 255 bytes"), ("/etc/passwd", "absolute path"), ("../model.onnx", "folder separator")],
)
def test_onnx_file_name_is_a_file_name_in_the_model_folder(tmp_path: Path, name: str, reason: str) -> None:
    workflow = base_workflow(tmp_path)
    workflow["input_model"] = {"type": "ONNXModel", "model_path": str(tmp_path / "input"), "onnx_file_name": name}
    message = _error(_dry_run(tmp_path, workflow))
    assert message.startswith("input_model: onnx_file_name '") and reason in message, message


def test_params_a_user_script_component_does_not_take_are_exit_2(tmp_path: Path) -> None:
    (tmp_path / "data.py").write_text(
        "import numpy as np\n"
        "def load(data_dir, rows=4):\n"
        "    return [({'input': np.zeros(16, np.float32)}, 0) for _ in range(rows)]\n"
        "def any_params(data_dir, **kwargs):\n"
        "    return load(data_dir)\n"
    )
    workflow = _workflow(tmp_path)
    workflow["data_configs"] = [
        {"name": "calib", "user_script": "data.py", "load_dataset_config": {"type": "load", "params": {"row": 2}}}
    ]
    message = _error(_dry_run(tmp_path, workflow))
    assert message.startswith("data_configs[0].load_dataset_config.row: unknown param of load (did you mean 'rows'?)")
    workflow["data_configs"][0]["load_dataset_config"] = {"type": "any_params", "params": {"row": 2}}
    assert _dry_run(tmp_path, workflow).exit_code == 0, "a function taking **kwargs takes any param"
