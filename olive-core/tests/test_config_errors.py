"""olive.config_errors and olive.paths.resolve_user_path: one form for config errors, one rule for paths."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from engine_support import base_workflow

from olive.config_errors import (
    check_keys,
    choice,
    config_error,
    describe_value,
    expect,
    json_path,
    number,
    param_in_range,
    user_path,
    whole_number,
)
from olive.data.config import DataConfig
from olive.evaluator.metric import parse_metric
from olive.exceptions import PassParamError, WorkflowConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.passes import ParamCategory, Pass, PassConfigParam
from olive.paths import resolve_user_path
from olive.workflows.config import load_workflow_config


def _message(call) -> WorkflowConfigError:
    with pytest.raises(WorkflowConfigError) as info:
        call()
    return info.value


def test_errors_are_owned_by_the_json_path():
    error = config_error("passes.quant.type", "missing; name the pass")
    assert (error.owner, error.reason, str(error)) == (
        "passes.quant.type",
        "missing; name the pass",
        "passes.quant.type: missing; name the pass",
    )
    assert str(config_error("", "the top level must be an object")) == "config: the top level must be an object"
    assert json_path("", "passes") == "passes" and json_path("passes", "q") == "passes.q"
    assert json_path("data_configs", 2) == "data_configs[2]"


def test_expect_names_the_type_and_shows_the_value():
    assert expect({"a": 1}, dict, "x", "an object") == {"a": 1}
    assert str(_message(lambda: expect([1, 2], dict, "input_model", "an object"))) == (
        "input_model: expected an object, got a list ([1, 2])"
    )
    # A bool is not a number, unless bool is asked for.
    assert (
        str(_message(lambda: expect(True, int, "seed", "an integer")))
        == "seed: expected an integer, got a boolean (true)"
    )
    assert expect(True, (bool, int), "flag", "true or false") is True
    assert describe_value(None) == "null"


def test_unknown_keys_get_the_closest_key_and_the_valid_ones():
    message = str(_message(lambda: check_keys({"nmae": 1}, ("name", "type"), "data_configs[0]")))
    assert message == "data_configs[0].nmae: unknown key (did you mean 'name'?); valid keys here: name, type"
    message = str(_message(lambda: check_keys({"x": 1}, (), "sampler_config", "option of the random sampler")))
    assert message == "sampler_config.x: unknown option of the random sampler; it takes none"
    assert str(_message(lambda: check_keys({3: 1}, ("a",), "engine"))) == "engine: key 3 is not a string"


def test_choices():
    assert choice("tpe", ("random", "tpe"), "search_strategy.sampler") == "tpe"
    assert str(_message(lambda: choice("rnadom", ("random", "tpe"), "s.sampler", "sampler"))) == (
        "s.sampler: unknown sampler 'rnadom' (did you mean 'random'?); use one of random, tpe"
    )
    assert str(_message(lambda: choice(3, ("random", "tpe"), "s.sampler"))) == (
        "s.sampler: expected one of random, tpe, got a number (3)"
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: whole_number("3", "p", minimum=0), 'p: expected a whole number of 0 or more, got a string ("3")'),
        (lambda: whole_number(-1, "p", minimum=0), "p: expected a whole number of 0 or more, got -1"),
        (lambda: whole_number(11, "p", minimum=1, maximum=10), "p: expected a whole number from 1 to 10, got 11"),
        (lambda: whole_number(2.0, "p"), "p: expected a whole number, got a number (2.0)"),
        (lambda: whole_number(False, "p"), "p: expected a whole number, got a boolean (false)"),
        (lambda: number(0, "p", above=0), "p: expected a number above 0, got 0"),
        (lambda: number(1.5, "p", minimum=-1, maximum=1), "p: expected a number from -1 to 1, got 1.5"),
        (lambda: number(2, "p", above=0, maximum=1), "p: expected a number above 0 and at most 1, got 2"),
        (lambda: number(7, "p", maximum=5), "p: expected a number of 5 or less, got 7"),
        (lambda: number(math.inf, "p", minimum=0), "p: expected a finite number of 0 or more, got inf"),
        (lambda: number(math.nan, "p"), "p: expected a finite number, got nan"),
        (lambda: number(None, "p"), "p: expected a number, got null"),
    ],
)
def test_numbers_are_range_checked(call, message):
    assert str(_message(call)) == message


def test_numbers_in_range_come_back():
    assert whole_number(0, "p", minimum=0) == 0 and isinstance(whole_number(3, "p"), int)
    assert number(1, "p", above=0) == 1.0 and isinstance(number(1, "p"), float)


def test_one_rule_for_user_paths(tmp_path, monkeypatch):
    base = tmp_path / "project"
    base.mkdir()
    assert resolve_user_path("data/calib.npz", base) == base / "data" / "calib.npz"
    assert resolve_user_path("../shared/m.onnx", base) == tmp_path / "shared" / "m.onnx"
    assert resolve_user_path(str(tmp_path / "abs.onnx"), base) == tmp_path / "abs.onnx"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_user_path("~/m.onnx", base) == tmp_path / "m.onnx"
    monkeypatch.chdir(base)
    assert resolve_user_path("m.onnx") == base / "m.onnx"
    # Symlinks are kept: a model reached through a link finds its external data beside the link.
    (tmp_path / "real").mkdir()
    (base / "link").symlink_to(tmp_path / "real")
    assert resolve_user_path("link/m.onnx", base) == base / "link" / "m.onnx"


def test_user_paths_that_must_exist(tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"")
    assert user_path("m.onnx", "input_model.model_path", tmp_path, must_exist=True) == tmp_path / "m.onnx"
    message = str(_message(lambda: user_path("nope.onnx", "input_model.model_path", tmp_path, must_exist=True)))
    assert message == (
        f"input_model.model_path: 'nope.onnx' does not exist (looked at {tmp_path / 'nope.onnx'}); fix the path "
        "(relative paths start at the workflow file's folder)"
    )
    missing = str(tmp_path / "gone.npz")
    assert str(_message(lambda: user_path(missing, "d.data_path", None, must_exist=True))) == (
        f"d.data_path: '{missing}' does not exist; fix the path"
    )
    assert "is a folder; give the file itself" in str(
        _message(lambda: user_path(".", "user_script", tmp_path, must_exist=True, kind="file"))
    )
    assert "is a file; give a folder" in str(
        _message(lambda: user_path("m.onnx", "script_dir", tmp_path, must_exist=True, kind="folder"))
    )
    # Never made to exist when not asked to.
    assert user_path("later.onnx", "output", tmp_path) == tmp_path / "later.onnx"


def test_param_in_range_names_the_param():
    param_in_range({"n": None}, "n", minimum=1)
    param_in_range({"n": "OLIVE_IGNORED_PARAM_VALUE"}, "n", minimum=1)
    with pytest.raises(PassParamError) as info:
        param_in_range({"heads": -2}, "heads", minimum=0, note="0 infers it")
    assert str(info.value) == "param 'heads' expects a whole number of 0 or more (0 infers it), got -2"
    assert info.value.params == ("heads",)
    with pytest.raises(PassParamError, match=r"param 'rate' expects a number above 0 and at most 1, got 1.5"):
        param_in_range({"rate": 1.5}, "rate", above=0, maximum=1)


class _Paths(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "table": PassConfigParam(type_=str | Path, category=ParamCategory.PATH),
            "data_dir": PassConfigParam(type_=str | None, category=ParamCategory.DATA),
        }

    def _run_for_config(self, model, config, output_model_path):
        return model


def test_workflow_metric_data_and_pass_paths_follow_the_one_rule(tmp_path, monkeypatch):
    folder = tmp_path / "proj"
    (folder / "m").mkdir(parents=True)
    (folder / "m" / "model.onnx").write_bytes(b"")
    (folder / "d.npz").write_bytes(b"")
    data = {"name": "calib", "type": "NpzDataContainer", "load_dataset_config": {"data_path": "d.npz"}}
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(tmp_path))
    config = load_workflow_config(
        {
            "input_model": {"type": "ONNXModel", "model_path": "m/model.onnx"},
            "data_configs": [data],
            "passes": {"p": {"type": "X"}},
            "cache_dir": "~/cache",
        }
    )
    assert config.input_model.config["model_path"] == str(folder / "m" / "model.onnx")
    assert config.cache_dir == tmp_path / "cache"
    assert config.data_configs["calib"].load_dataset_config.params["data_path"] == str(folder / "d.npz")
    metric = parse_metric({"name": "l", "type": "latency", "data_config": data}, "m", set(), base_dir=folder)
    assert metric.inline_data_config.load_dataset_config.params["data_path"] == str(folder / "d.npz")
    assert DataConfig.from_json(data, base_dir=folder).load_dataset_config.params["data_path"] == str(folder / "d.npz")
    # A pass used directly resolves its PATH and DATA params the same way, from the current folder.
    resolved = _Paths.generate_config(DEFAULT_CPU_ACCELERATOR, {"table": "t/../t.txt", "data_dir": "~/data"})
    assert (resolved.table, resolved.data_dir) == (str(folder / "t.txt"), str(tmp_path / "data"))
    given = Path("t.txt")
    assert _Paths.generate_config(DEFAULT_CPU_ACCELERATOR, {"table": given}).table == folder / "t.txt"


def _with_script_at(workflow: dict, where: str, name: str, value: str) -> dict:
    size = {"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes"}]}
    if where == "top level":
        workflow[name] = value
    elif where == "pass":
        workflow["passes"]["add"][name] = value
    elif where == "evaluator":
        workflow["evaluators"] = {"e": {"metrics": [size], name: value}}
    elif where == "metric":
        workflow["evaluators"] = {"e": {"metrics": [{**size, "user_config": {name: value}}]}}
    else:
        workflow["data_configs"] = [{"name": "d", "type": "NpzDataContainer", name: value}]
    return workflow


SCRIPT_PLACES = {
    "top level": "",
    "pass": "passes.add.",
    "evaluator": "evaluators.e.",
    "metric": "evaluators.e.metrics[0].user_config.",
    "data config": "data_configs[0].",
}


@pytest.mark.parametrize("where", SCRIPT_PLACES)
def test_user_script_and_script_dir_are_a_file_and_a_folder_wherever_given(tmp_path: Path, where: str) -> None:
    # One rule for every place a workflow names its scripts: a folder given as the script (or a file as its
    # folder) is one error before anything runs, not an import failure halfway through a search.
    (tmp_path / "scripts").mkdir()
    (tmp_path / "script.py").write_text("")
    for name, value, words in (
        ("user_script", "scripts", "is a folder; give the file itself"),
        ("script_dir", "script.py", "is a file; give a folder"),
    ):
        workflow = _with_script_at(base_workflow(tmp_path), where, name, str(tmp_path / value))
        message = str(_message(lambda workflow=workflow: load_workflow_config(workflow)))
        assert message.startswith(f"{SCRIPT_PLACES[where]}{name}: ") and message.endswith(words), message
