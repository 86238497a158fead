"""Hook plugins installed with pip: loaded from the ``olive.plugins`` group, validated per distribution,
and called by a real workflow run."""

from __future__ import annotations

import json
import textwrap

import pytest

from olive.plugins import hookspecs
from olive.testing import sample_distributions as samples
from olive.testing.venv import Venv, make_venv

CLEAN_ENV = {"OLIVE_LOAD_PLUGINS": None, "OLIVE_DISABLE_PLUGINS": None, "OLIVE_STRICT_PLUGINS": None}


@pytest.fixture(scope="module")
def hooks_venv(tmp_path_factory) -> Venv:
    venv = make_venv(tmp_path_factory.mktemp("hooks") / "venv")
    venv.pip_install(
        "--no-deps", "--no-index", samples.good_pass_wheel(), samples.hooks_wheel(), samples.bad_hooks_wheel()
    )
    return venv


def olive(venv: Venv, *args: str, check: bool = True, **env: str | None):
    return venv.run([venv.python, "-m", "olive.cli.main", *args], env={**CLEAN_ENV, **env}, check=check)


def test_plugins_listing_reports_each_distribution(hooks_venv):
    plugins = {p["name"]: p for p in json.loads(olive(hooks_venv, "plugins", "--json").stdout)}
    good = plugins["olive-test-hooks"]
    assert good["version"] == "0.4" and good["status"] == "ok" and good["errors"] == []
    assert good["hooks"] == sorted(name for name in dir(hookspecs) if name.startswith("olive_"))  # every hook
    bad = plugins["olive-test-bad-hooks"]
    assert bad["status"] == "failed" and bad["version"] == "0.5"
    errors = " ".join(bad["errors"])
    assert "'olive_pass_stat' (did you mean 'olive_pass_start'?)" in errors
    assert "bogus_argument" in errors
    assert plugins["olive-test-good"]["passes"] == ["Annotate", "Shared"]


def test_plugins_listing_names_the_metric_types_and_samplers_a_plugin_registers(hooks_venv):
    # Plugin metrics are first-class: the listing shows them as workflows name them, in JSON and in the table.
    plugins = {p["name"]: p for p in json.loads(olive(hooks_venv, "plugins", "--json").stdout)}
    assert plugins["olive-test-hooks"]["metrics"] == ["answer"]
    assert plugins["olive-test-hooks"]["samplers"] == ["first"]
    assert plugins["olive-test-good"]["metrics"] == [] and plugins["olive-test-good"]["samplers"] == []
    table = olive(hooks_venv, "plugins", COLUMNS="300").stdout
    assert "metric answer" in table and "sampler first" in table


def test_requirements_rebuild_the_environment(hooks_venv):
    lines = olive(hooks_venv, "plugins", "--requirements").stdout.splitlines()
    for requirement in ("olive-test-bad-hooks==0.5", "olive-test-good==1.0.0", "olive-test-hooks==0.4"):
        assert requirement in lines


def test_broken_hook_plugin_warns_but_olive_works(hooks_venv):
    result = olive(hooks_venv, "hello", "Ada")
    assert result.stdout == "hello Ada from olive-test-hooks\n"
    assert "olive-test-bad-hooks==0.5" in result.stderr and "continuing without it" in result.stderr
    help_text = olive(hooks_venv, "--help").stdout
    assert "hello" in help_text and "Say hello (from olive-test-hooks)." in help_text


def test_strict_mode_makes_a_broken_hook_plugin_fatal(hooks_venv):
    result = olive(hooks_venv, "--help", check=False, OLIVE_STRICT_PLUGINS="1")
    assert result.returncode == 1
    assert result.stderr.startswith("Error: cannot load plugin olive-test-bad-hooks==0.5")
    assert "Traceback" not in result.stderr


def test_blocklist_skips_a_hook_plugin(hooks_venv):
    result = olive(hooks_venv, "plugins", "--json", OLIVE_DISABLE_PLUGINS="olive-test-bad-hooks")
    assert result.stderr == ""
    plugins = {p["name"]: p for p in json.loads(result.stdout)}
    assert plugins["olive-test-bad-hooks"]["status"] == "blocked"
    hello = olive(hooks_venv, "hello", check=False, OLIVE_LOAD_PLUGINS="olive-test-good")
    assert hello.returncode == 2 and "No such command 'hello'" in hello.stderr


def test_registered_metrics_and_samplers_are_tagged_with_their_plugin(hooks_venv):
    code = """
    import json
    from olive.plugins.manager import collect_registrations
    print(json.dumps({hook: {n: r.plugin for n, r in collect_registrations(hook).items()}
                      for hook in ("olive_register_metrics", "olive_register_samplers")}))
    """
    out = hooks_venv.python_run(textwrap.dedent(code), env=CLEAN_ENV).stdout
    assert json.loads(out) == {
        "olive_register_metrics": {"answer": "olive-test-hooks:olive-test-hooks"},
        "olive_register_samplers": {"first": "olive-test-hooks:olive-test-hooks"},
    }


def test_workflow_run_fires_the_observer_hooks(hooks_venv, tmp_path):
    # A real workflow through olive.workflows.run: installed pass, installed hook plugin, twice (the second
    # run is served from the cache).
    log = tmp_path / "hooks.jsonl"
    code = f"""
    from olive.testing.models import mlp_model, save_model
    from olive.workflows import run
    model = save_model(mlp_model(), {str(tmp_path / "in")!r})
    config = {{
        "input_model": {{"type": "ONNXModel", "model_path": model.model_path}},
        "passes": {{"annotate": {{"type": "Annotate", "note": "hooked"}}}},
        "evaluator": {{"metrics": [{{"name": "size", "type": "size_on_disk"}}]}},
        "output_dir": {str(tmp_path / "out")!r},
        "cache_dir": {str(tmp_path / "cache")!r},
    }}
    run(config)
    run(config)
    """
    hooks_venv.python_run(
        textwrap.dedent(code), env={**CLEAN_ENV, "OLIVE_TEST_HOOKS_LOG": str(log), "OLIVE_DISABLE_PLUGINS": "x"}
    )
    events = [json.loads(line) for line in log.read_text().splitlines()]
    runs = [[], []]
    index = 0
    for event in events:
        runs[index].append(event)
        if event["event"] == "workflow_end":
            index += 1
    for number, run_events in enumerate(runs):
        names = [e["event"] for e in run_events]
        assert names[0] == "workflow_start" and names[-1] == "workflow_end", names
        assert run_events[-1]["ok"] is True
        start = names.index("pass_start")
        end = names.index("pass_end")
        assert start < end
        assert run_events[start] == {"event": "pass_start", "pass_key": "annotate", "pass_name": "Annotate"}
        assert run_events[end]["cached"] is (number == 1) and run_events[end]["failed"] is False
        assert "evaluation_end" in names
