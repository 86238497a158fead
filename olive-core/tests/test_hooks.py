"""Every hook spec: documented, validated at load time, and delivered to a real registered plugin.

``test_hook_<name>`` exists for every hook in olive.plugins.hookspecs (test_hookspecs_have_tests checks).
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from olive.exceptions import PassConfigError, PluginLoadError
from olive.plugins import hookimpl, hookspecs
from olive.plugins.manager import (
    collect_registrations,
    get_plugin_manager,
    get_plugin_metrics,
    get_plugin_samplers,
    new_plugin_manager,
    use_plugin_manager,
)

HOOK_NAMES = sorted(name for name in dir(hookspecs) if name.startswith("olive_"))


class Recorder:
    """A plugin implementing every hook, recording the arguments it receives."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []

    @hookimpl
    def olive_register_metrics(self, register):
        register("recorded_metric", self.evaluate)

    def evaluate(self, model, metric, data):
        return {"value": 1.0}

    @hookimpl
    def olive_register_samplers(self, register):
        register("recorded_sampler", self.make_sampler)

    def make_sampler(self, search_space, options, seed):
        return ("sampler", search_space, options, seed)

    @hookimpl
    def olive_register_commands(self, cli):
        @click.command("recorded")
        def recorded():
            """Echo from the recorder plugin."""
            click.echo("recorder says hi")

        @click.command("bad-config")
        def bad_config():
            """Raise a config error."""
            raise PassConfigError("pass 'q': param 'x' expects int, got 'a'")

        cli.add_command(recorded)
        cli.add_command(bad_config)

    @hookimpl
    def olive_workflow_start(self, workflow):
        self.calls.append(("olive_workflow_start", {"workflow": workflow}))

    @hookimpl
    def olive_workflow_end(self, workflow, output, error):
        self.calls.append(("olive_workflow_end", {"workflow": workflow, "output": output, "error": error}))

    @hookimpl
    def olive_pass_start(self, pass_key, pass_name, config, input_model):
        self.calls.append(
            (
                "olive_pass_start",
                {"pass_key": pass_key, "pass_name": pass_name, "config": config, "input_model": input_model},
            )
        )

    @hookimpl
    def olive_pass_end(self, pass_key, pass_name, config, input_model, output_model, cached, error, duration_s):
        self.calls.append(("olive_pass_end", dict(locals(), self=None)))

    @hookimpl
    def olive_evaluation_end(self, model_id, model, metrics):
        self.calls.append(("olive_evaluation_end", {"model_id": model_id, "model": model, "metrics": metrics}))


@pytest.fixture
def recorder():
    plugin = Recorder()
    pm = new_plugin_manager(entry_points=False)
    pm.register_checked(plugin, "recorder-dist:recorder")
    with use_plugin_manager(pm):
        yield plugin


# ------------------------------------------------------------------------------------------------
# Documentation policing (as datasette does)
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", HOOK_NAMES)
def test_hookspec_is_documented(name):
    spec = getattr(hookspecs, name)
    doc = inspect.getdoc(spec)
    assert doc, f"{name} has no docstring"
    assert "fires" in doc.lower(), f"{name}'s docstring must say when it fires"
    for param in inspect.signature(spec).parameters:
        assert re.search(rf":param {param}:", doc), f"{name}'s docstring does not document '{param}'"


def test_hookspecs_have_tests():
    sources = "".join(p.read_text() for p in Path(__file__).parent.glob("test_hooks*.py"))
    missing = [name for name in HOOK_NAMES if f"def test_hook_{name}(" not in sources]
    assert not missing, f"hooks without a test_hook_<name>: {missing}"


def test_hooks_are_all_prefixed_and_marked():
    assert HOOK_NAMES == [
        "olive_evaluation_end",
        "olive_pass_end",
        "olive_pass_start",
        "olive_register_commands",
        "olive_register_metrics",
        "olive_register_samplers",
        "olive_workflow_end",
        "olive_workflow_start",
    ]
    pm = new_plugin_manager(entry_points=False)
    assert sorted(h for h in dir(pm.hook) if h.startswith("olive_")) == HOOK_NAMES


# ------------------------------------------------------------------------------------------------
# One test per hook, through the process-wide manager, with a real registered plugin
# ------------------------------------------------------------------------------------------------
def test_hook_olive_register_metrics(recorder):
    metrics = get_plugin_metrics()
    assert metrics == {"recorded_metric": recorder.evaluate}
    registrations = collect_registrations("olive_register_metrics")
    assert registrations["recorded_metric"].plugin == "recorder-dist:recorder"


def test_hook_olive_register_samplers(recorder):
    samplers = get_plugin_samplers()
    assert samplers["recorded_sampler"]("space", {"a": 1}, 7) == ("sampler", "space", {"a": 1}, 7)


def test_hook_olive_register_commands(recorder):
    from olive.cli.main import cli

    runner = CliRunner()
    result = runner.invoke(cli, ["recorded"])
    assert result.exit_code == 0, result.output
    assert result.output == "recorder says hi\n"
    help_text = runner.invoke(cli, ["--help"]).output
    assert "recorded" in help_text and "Echo from the recorder plugin." in help_text


def test_plugin_command_errors_use_olive_exit_codes(recorder):
    from olive.cli.main import cli

    result = CliRunner().invoke(cli, ["bad-config"])
    assert result.exit_code == 2
    assert result.output.strip() == "Error: pass 'q': param 'x' expects int, got 'a'"


def test_plugin_cannot_replace_olive_commands():
    from olive.cli.main import cli

    class Hijack:
        @hookimpl
        def olive_register_commands(self, cli):
            @click.command("passes")
            def passes():
                click.echo("hijacked")

            cli.add_command(passes)

    pm = new_plugin_manager(entry_points=False)
    pm.register_checked(Hijack(), "hijack-dist:hijack")
    with use_plugin_manager(pm):
        help_result = CliRunner().invoke(cli, ["--help"])
        result = CliRunner().invoke(cli, ["passes", "--json"])
    assert "a plugin adds a command 'passes', which is Olive's own; it is ignored" in help_result.stderr
    assert result.exit_code == 0 and "hijacked" not in result.stdout
    assert isinstance(json.loads(result.stdout), list)


def test_plugin_commands_leave_with_their_manager(recorder):
    from olive.cli.main import cli

    with use_plugin_manager(new_plugin_manager(entry_points=False)):
        result = CliRunner().invoke(cli, ["recorded"])
    assert result.exit_code == 2 and "No such command 'recorded'" in result.output


def test_hook_olive_workflow_start(recorder):
    get_plugin_manager().hook.olive_workflow_start(workflow="wf")
    assert recorder.calls == [("olive_workflow_start", {"workflow": "wf"})]


def test_hook_olive_workflow_end(recorder):
    error = RuntimeError("boom")
    get_plugin_manager().hook.olive_workflow_end(workflow="wf", output=None, error=error)
    assert recorder.calls == [("olive_workflow_end", {"workflow": "wf", "output": None, "error": error})]


def test_hook_olive_pass_start(recorder):
    get_plugin_manager().hook.olive_pass_start(pass_key="q", pass_name="Quant", config={"a": 1}, input_model="m")
    assert recorder.calls == [
        ("olive_pass_start", {"pass_key": "q", "pass_name": "Quant", "config": {"a": 1}, "input_model": "m"})
    ]


def test_hook_olive_pass_end(recorder):
    get_plugin_manager().hook.olive_pass_end(
        pass_key="q",
        pass_name="Quant",
        config={},
        input_model="in",
        output_model="out",
        cached=True,
        error=None,
        duration_s=0.5,
    )
    ((name, args),) = recorder.calls
    assert name == "olive_pass_end"
    assert (args["output_model"], args["cached"], args["duration_s"]) == ("out", True, 0.5)


def test_hook_olive_evaluation_end(recorder):
    get_plugin_manager().hook.olive_evaluation_end(model_id="abc", model="m", metrics={"latency-avg": 1.0})
    assert recorder.calls == [
        ("olive_evaluation_end", {"model_id": "abc", "model": "m", "metrics": {"latency-avg": 1.0}})
    ]


# ------------------------------------------------------------------------------------------------
# Validation at registration
# ------------------------------------------------------------------------------------------------
def test_unknown_hook_name_is_rejected_with_a_hint():
    class Typo:
        @hookimpl
        def olive_pass_stat(self, pass_key):
            pass

    pm = new_plugin_manager(entry_points=False)
    plugin = Typo()
    with pytest.raises(PluginLoadError, match=r"typo-dist:typo.*'olive_pass_stat' \(did you mean 'olive_pass_start'"):
        pm.register_checked(plugin, "typo-dist:typo")
    assert not pm.is_registered(plugin)


def test_unmarked_olive_function_is_still_checked():
    class Unmarked:
        def olive_workflow_begin(self, workflow):
            pass

    with pytest.raises(PluginLoadError, match="olive_workflow_begin"):
        new_plugin_manager(entry_points=False).register_checked(Unmarked(), "u")


def test_unknown_argument_is_rejected():
    class BadArgs:
        @hookimpl
        def olive_pass_start(self, pass_key, bogus):
            pass

    with pytest.raises(PluginLoadError, match=r"bad:args.*bogus"):
        new_plugin_manager(entry_points=False).register_checked(BadArgs(), "bad:args")


def test_duplicate_registration_names_both_plugins():
    class A:
        @hookimpl
        def olive_register_metrics(self, register):
            register("same", len)

    pm = new_plugin_manager(entry_points=False)
    pm.register_checked(A(), "dist-a:a")
    pm.register_checked(A(), "dist-b:b")
    with pytest.raises(PluginLoadError, match="'same' is registered by both dist-a:a and dist-b:b"):
        get_plugin_metrics(pm)


def test_raising_register_hook_is_reported_against_its_plugin():
    class Raises:
        @hookimpl
        def olive_register_samplers(self, register):
            raise ValueError("no samplers today")

    pm = new_plugin_manager(entry_points=False)
    pm.register_checked(Raises(), "raises-dist:r")
    with pytest.raises(PluginLoadError, match=r"raises-dist:r.*ValueError: no samplers today"):
        get_plugin_samplers(pm)


# ------------------------------------------------------------------------------------------------
# A real workflow through olive.workflows.run fires the observer hooks with real objects
# ------------------------------------------------------------------------------------------------
def _passes():
    from olive.passes import Pass
    from olive.passes.onnx.common import model_proto_to_olive_model

    class CopyModel(Pass):
        """Write the model unchanged."""

        @classmethod
        def _default_config(cls, accelerator_spec):
            return {}

        def _run_for_config(self, model, config, output_model_path):
            return model_proto_to_olive_model(model.load_model(), output_model_path, config)

    class Explode(CopyModel):
        """Always fails."""

        def _run_for_config(self, model, config, output_model_path):
            raise RuntimeError("exploded")

    return CopyModel, Explode


def _workflow(model, tmp_path, pass_type):
    return {
        "input_model": {"type": "ONNXModel", "model_path": str(model.model_path)},
        "passes": {"copy": {"type": pass_type}},
        "evaluator": {"metrics": [{"name": "size", "type": "size_on_disk"}]},
        "output_dir": str(tmp_path / "out"),
        "cache_dir": str(tmp_path / "cache"),
    }


def test_workflow_run_calls_observer_hooks(recorder, isolated_registry, tiny_mlp, tmp_path):
    from olive.engine.output import WorkflowOutput
    from olive.model.handler import ONNXModelHandler
    from olive.workflows import run
    from olive.workflows.config import WorkflowConfig

    copy_model, _ = _passes()
    isolated_registry.register(copy_model, name="CopyModel")
    output = run(_workflow(tiny_mlp, tmp_path, "CopyModel"))

    names = [name for name, _ in recorder.calls]
    assert names[0] == "olive_workflow_start" and names[-1] == "olive_workflow_end"
    assert names.index("olive_pass_start") < names.index("olive_pass_end")
    calls = dict(recorder.calls)  # one call of each in this workflow, except evaluation_end
    assert isinstance(calls["olive_workflow_start"]["workflow"], WorkflowConfig)
    assert calls["olive_workflow_end"]["output"] is output and isinstance(output, WorkflowOutput)
    assert calls["olive_workflow_end"]["error"] is None
    start, end = calls["olive_pass_start"], calls["olive_pass_end"]
    assert (start["pass_key"], start["pass_name"]) == ("copy", "CopyModel")
    assert isinstance(start["input_model"], ONNXModelHandler)
    assert isinstance(end["output_model"], ONNXModelHandler) and Path(end["output_model"].model_path).is_file()
    assert end["cached"] is False and end["error"] is None and end["duration_s"] >= 0
    evaluations = [args for name, args in recorder.calls if name == "olive_evaluation_end"]
    assert len(evaluations) == 2  # the input model and the pass's output
    assert all("size-bytes" in e["metrics"] for e in evaluations)


def test_workflow_failure_reaches_pass_end_and_workflow_end(recorder, isolated_registry, tiny_mlp, tmp_path):
    from olive.exceptions import OliveError
    from olive.workflows import run

    _, explode = _passes()
    isolated_registry.register(explode, name="Explode")
    with pytest.raises(OliveError, match="exploded"):
        run(_workflow(tiny_mlp, tmp_path, "Explode"))
    calls = dict(recorder.calls)
    assert isinstance(calls["olive_pass_end"]["error"], RuntimeError)
    assert calls["olive_pass_end"]["output_model"] is None
    assert calls["olive_workflow_end"]["output"] is None
    assert isinstance(calls["olive_workflow_end"]["error"], OliveError)
