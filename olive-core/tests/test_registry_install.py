"""Discovery through real installs: plugin distributions are built once per session, installed with pip
into a fresh virtual environment, and used from a separate interpreter, as a user would."""

from __future__ import annotations

import json
import textwrap

import pytest

from olive.testing import sample_distributions as samples
from olive.testing.venv import Venv, make_venv

# Each test sets the policy it needs; the outer environment's (e.g. strict mode in CI) must not leak in.
CLEAN_ENV = {"OLIVE_LOAD_PLUGINS": None, "OLIVE_DISABLE_PLUGINS": None, "OLIVE_STRICT_PLUGINS": None}


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory) -> Venv:
    """good + other (clashing name) + the three kinds of broken distribution; the tests only read it."""
    venv = make_venv(tmp_path_factory.mktemp("registry") / "venv")
    wheels = [
        samples.good_pass_wheel(),
        samples.other_pass_wheel(),
        samples.broken_import_wheel(),
        samples.not_a_pass_wheel(),
        samples.bad_config_wheel(),
    ]
    venv.pip_install("--no-deps", "--no-index", *wheels)
    return venv


def run_py(venv: Venv, code: str, check: bool = True, **env: str | None):
    result = venv.python_run(textwrap.dedent(code), env={**CLEAN_ENV, **env}, check=check)
    return result


def listing(venv: Venv, **env: str | None) -> dict[str, dict]:
    out = run_py(
        venv,
        """
        import json, sys
        from olive.plugins.registry import get_registry
        entries = get_registry().entries()
        loaded = [m for m in sys.modules if m.startswith("olive_test")]
        print(json.dumps({"entries": [e.to_json() for e in entries], "loaded": loaded}))
        """,
        **env,
    ).stdout
    data = json.loads(out)
    assert data["loaded"] == [], "listing imported pass modules"
    return {f"{e['distribution']}:{e['name']}": e for e in data["entries"]}


LOAD_ALL = """
import json
from olive.exceptions import OliveError
from olive.plugins.registry import get_registry
result = {}
for name in ["Annotate", "Shared", "olive-test-good:Shared", "olive-test-other:Shared",
             "BrokenImport", "NotAPass", "BadConfig", "Annotat"]:
    try:
        cls = get_registry().get_pass_class(name)
        result[name] = {"ok": f"{cls.__module__}:{cls.__qualname__}", "pass_name": cls.pass_name(),
                        "dist": cls.distribution(), "version": cls.distribution_version()}
    except OliveError as exc:
        result[name] = {"error": type(exc).__name__, "message": str(exc),
                        "cause": type(exc.__cause__).__name__ if exc.__cause__ else None}
result["__entries__"] = {e.qualified_name: [e.status, e.error, e.summary] for e in get_registry().entries()}
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def loaded(plugin_venv) -> dict:
    return json.loads(run_py(plugin_venv, LOAD_ALL).stdout)


def test_listing_shows_every_pass_from_metadata_only(plugin_venv):
    entries = listing(plugin_venv)
    expected = {
        "olive-test-good:Annotate": "1.0.0",
        "olive-test-good:Shared": "1.0.0",
        "olive-test-other:Shared": "2.1",
        "olive-test-broken-import:BrokenImport": "0.1",
        "olive-test-not-a-pass:NotAPass": "0.2",
        "olive-test-bad-config:BadConfig": "0.3",
    }
    for key, version in expected.items():
        assert entries[key]["version"] == version
        assert entries[key]["status"] == "not loaded"
        assert entries[key]["summary"] is None
    assert entries["olive-test-good:Annotate"]["entry_point"] == "olive_test_good.passes:Annotate"


def test_good_pass_loads_with_identity(loaded):
    assert loaded["Annotate"] == {
        "ok": "olive_test_good.passes:Annotate",
        "pass_name": "Annotate",
        "dist": "olive-test-good",
        "version": "1.0.0",
    }
    status, error, summary = loaded["__entries__"]["olive-test-good:Annotate"]
    assert (status, error, summary) == ("ok", None, "Write a note into the model's doc string.")


@pytest.mark.parametrize(
    ("name", "dist", "cause", "detail"),
    [
        ("BrokenImport", "olive-test-broken-import==0.1", "ModuleNotFoundError", "olive_missing_dependency_xyz"),
        ("NotAPass", "olive-test-not-a-pass==0.2", "TypeError", "not a subclass of olive.passes.Pass"),
        ("BadConfig", "olive-test-bad-config==0.3", "RuntimeError", "config table missing"),
    ],
)
def test_broken_distributions_are_reported_and_isolated(loaded, name, dist, cause, detail):
    error = loaded[name]
    assert error["error"] == "PluginLoadError"
    assert error["cause"] == cause
    assert dist in error["message"] and detail in error["message"]
    assert f"entry point {name} = " in error["message"]
    status, message, _ = loaded["__entries__"][f"{dist.split('==')[0]}:{name}"]
    assert status == "failed" and detail in message
    # ...while the good distribution still works in the same process
    assert "ok" in loaded["Annotate"]


def test_two_distributions_one_name_is_ambiguous_until_qualified(loaded):
    error = loaded["Shared"]
    assert error["error"] == "AmbiguousPassError"
    assert "olive-test-good==1.0.0" in error["message"] and "olive-test-other==2.1" in error["message"]
    assert loaded["olive-test-good:Shared"]["ok"] == "olive_test_good.passes:Shared"
    assert loaded["olive-test-other:Shared"]["ok"] == "olive_test_other:Shared"


def test_unknown_name_suggests(loaded):
    assert loaded["Annotat"]["error"] == "UnknownPassError"
    assert "did you mean 'Annotate'" in loaded["Annotat"]["message"]


def test_good_pass_runs_on_a_tiny_model_next_to_broken_ones(plugin_venv, tmp_path):
    out = run_py(
        plugin_venv,
        f"""
        import onnx
        from olive.plugins.registry import get_registry
        from olive.testing.models import mlp_model, save_model
        from olive.testing.runner import run_pass
        registry = get_registry()
        for broken in ("BrokenImport", "NotAPass", "BadConfig"):
            try:
                registry.get_pass_class(broken)
            except Exception:
                pass
        cls = registry.get_pass_class("Annotate")
        model = save_model(mlp_model(), {str(tmp_path / "in")!r})
        result = run_pass(cls, model, {{"note": "from the venv"}}, output_dir={str(tmp_path / "out")!r})
        print(onnx.load(result.model_path).doc_string)
        print(result.model_path)
        """,
    ).stdout.splitlines()
    assert out[0] == "from the venv"
    assert out[1].startswith(str(tmp_path / "out"))


def test_blocklist(plugin_venv):
    entries = listing(plugin_venv, OLIVE_DISABLE_PLUGINS="olive-test-other, OLIVE_TEST_BROKEN_IMPORT")
    assert entries["olive-test-other:Shared"]["status"] == "blocked"
    assert "OLIVE_DISABLE_PLUGINS" in entries["olive-test-other:Shared"]["error"]
    assert entries["olive-test-broken-import:BrokenImport"]["status"] == "blocked"
    # with the clashing distribution disabled the bare name resolves
    out = run_py(
        plugin_venv,
        """
        from olive.plugins.registry import get_registry
        print(get_registry().get_pass_class("Shared").__module__)
        """,
        OLIVE_DISABLE_PLUGINS="olive-test-other",
    ).stdout.strip()
    assert out == "olive_test_good.passes"


def test_allowlist(plugin_venv):
    entries = listing(plugin_venv, OLIVE_LOAD_PLUGINS="olive-test-good")
    statuses = {key: e["status"] for key, e in entries.items() if key.startswith("olive-test")}
    assert statuses.pop("olive-test-good:Annotate") == "not loaded"
    assert statuses.pop("olive-test-good:Shared") == "not loaded"
    assert set(statuses.values()) == {"blocked"}
    result = run_py(
        plugin_venv,
        """
        from olive.plugins.registry import get_registry
        get_registry().get_pass_class("BadConfig")
        """,
        check=False,
        OLIVE_LOAD_PLUGINS="olive-test-good",
    )
    assert result.returncode != 0 and "not in OLIVE_LOAD_PLUGINS" in result.stderr


def test_empty_allowlist_loads_nothing(plugin_venv):
    entries = listing(plugin_venv, OLIVE_LOAD_PLUGINS="")
    assert {e["status"] for e in entries.values()} == {"blocked"}


def test_strict_mode_fails_even_for_a_good_pass(plugin_venv):
    result = run_py(
        plugin_venv,
        """
        from olive.plugins.registry import get_registry
        get_registry().get_pass_class("Annotate")
        """,
        check=False,
        OLIVE_STRICT_PLUGINS="1",
    )
    assert result.returncode != 0
    assert "PluginLoadError" in result.stderr and "OLIVE_STRICT_PLUGINS" in result.stderr
    for dist in ("olive-test-broken-import==0.1", "olive-test-not-a-pass==0.2", "olive-test-bad-config==0.3"):
        assert dist in result.stderr
    # strict mode with the broken ones disabled is fine
    ok = run_py(
        plugin_venv,
        """
        from olive.plugins.registry import get_registry
        print(get_registry().get_pass_class("Annotate").__name__)
        """,
        OLIVE_STRICT_PLUGINS="1",
        OLIVE_LOAD_PLUGINS="olive-test-good",
    )
    assert ok.stdout.strip() == "Annotate"


def test_same_distribution_twice_on_sys_path_is_not_a_conflict(plugin_venv):
    # The venv's site-packages a second time, through PYTHONPATH: every distribution is seen twice.
    out = run_py(
        plugin_venv,
        """
        import json
        from olive.plugins.registry import get_registry
        names = [e.qualified_name for e in get_registry().entries() if e.distribution.startswith("olive-test")]
        print(json.dumps([names, get_registry().get_pass_class("Annotate").__name__]))
        """,
        PYTHONPATH=str(plugin_venv.site_packages),
    ).stdout
    names, loaded = json.loads(out)
    assert len(names) == len(set(names)) == 6
    assert loaded == "Annotate"
