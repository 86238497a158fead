"""olive.testing: the pytest plugin and its fixtures, run_pass, assert_pass_contract, make_venv."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import onnx
import onnxruntime
import pytest

from olive.exceptions import OliveError
from olive.model.handler import ONNXModelHandler
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import model_proto_to_olive_model, resolve_onnx_path
from olive.plugins.registry import get_registry
from olive.search.search_parameter import Boolean, Categorical
from olive.testing import assert_pass_contract, make_venv
from olive.testing import sample_distributions as samples
from olive.testing.venv import VenvError


class SetDoc(Pass):
    """Set the graph doc string."""

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "text": PassConfigParam(type_=str, default_value="x", search_defaults=Categorical(["a", "b", "c"])),
            "upper": PassConfigParam(type_=bool, default_value=False, search_defaults=Boolean()),
        }

    @classmethod
    def validate_config(cls, config, accelerator_spec):
        # "c" cannot be upper-cased (a stand-in for a combination a real pass cannot run)
        return not (config.text == "c" and config.upper)

    def _run_for_config(self, model, config, output_model_path):
        proto = model.load_model()
        proto.graph.doc_string = config.text.upper() if config.upper else config.text
        return model_proto_to_olive_model(proto, output_model_path, config)


class WrongSearchType(SetDoc):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return {"text": PassConfigParam(type_=str, default_value="x", search_defaults=Categorical([1, 2]))}


class FailsOnB(SetDoc):
    def _run_for_config(self, model, config, output_model_path):
        if config.text == "b":
            raise ValueError("b is not supported")
        return super()._run_for_config(model, config, output_model_path)


class WritesGarbage(SetDoc):
    def _run_for_config(self, model, config, output_model_path):
        path = Path(resolve_onnx_path(output_model_path))
        path.write_bytes(b"not an onnx model")
        return ONNXModelHandler(path)


class ReturnsPath(SetDoc):
    def _run_for_config(self, model, config, output_model_path):
        return str(model.model_path)


class NeedsValue(SetDoc):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return {"text": PassConfigParam(type_=str, required=True)}

    def _run_for_config(self, model, config, output_model_path):
        return model_proto_to_olive_model(model.load_model(), output_model_path, config)


# ------------------------------------------------------------------------------------------------
# Fixtures (provided by the installed pytest11 plugin)
# ------------------------------------------------------------------------------------------------
def test_tiny_models_load_in_onnxruntime(tiny_mlp, tiny_conv, tiny_bert, tmp_path):
    for handler in (tiny_mlp, tiny_conv, tiny_bert):
        assert isinstance(handler, ONNXModelHandler)
        assert str(handler.model_path).startswith(str(tmp_path))
        onnxruntime.InferenceSession(str(handler.model_path), providers=["CPUExecutionProvider"])
    assert [i.name for i in onnx.load(tiny_bert.model_path).graph.input] == [
        "input_ids",
        "attention_mask",
        "token_type_ids",
    ]


def test_run_pass_fixture_runs_into_a_fresh_folder(run_pass, tiny_mlp, tmp_path):
    first = run_pass(SetDoc, tiny_mlp, {"text": "hello", "upper": True})
    second = run_pass(SetDoc, tiny_mlp, {"text": "again"})
    assert onnx.load(first.model_path).graph.doc_string == "HELLO"
    assert onnx.load(second.model_path).graph.doc_string == "again"
    assert first.model_path != second.model_path
    assert str(first.model_path).startswith(str(tmp_path))


def test_run_pass_checks_the_output_loads(run_pass, tiny_mlp):
    with pytest.raises(OliveError, match="does not load in onnxruntime"):
        run_pass(WritesGarbage, tiny_mlp)


def test_isolated_registry_fixture(isolated_registry):
    assert isolated_registry.entries() == []
    isolated_registry.register(SetDoc)
    assert get_registry().get_pass_class("SetDoc") is SetDoc


def test_fresh_venv_fixture(fresh_venv, tmp_path):
    assert fresh_venv.path.is_relative_to(tmp_path)
    out = fresh_venv.python_run("import sys, olive; print(sys.prefix)").stdout.strip()
    assert out == str(fresh_venv.path)


def test_plugin_is_registered_through_pytest11(pytestconfig):
    plugin = pytestconfig.pluginmanager.get_plugin("olive")
    assert plugin is not None and plugin.__name__ == "olive.testing.plugin"


def test_pass_author_suite_runs_with_only_the_installed_plugin(tmp_path):
    # What a pass author writes in their own repository: no conftest, no imports of fixtures.
    test_file = tmp_path / "test_author.py"
    test_file.write_text(
        textwrap.dedent(
            """
            import onnx
            from olive.passes import Pass, PassConfigParam
            from olive.passes.onnx.common import model_proto_to_olive_model
            from olive.testing import assert_pass_contract

            class Strip(Pass):
                @classmethod
                def _default_config(cls, accelerator_spec):
                    return {"keep": PassConfigParam(type_=bool, default_value=False)}

                def _run_for_config(self, model, config, output_model_path):
                    proto = model.load_model()
                    for node in proto.graph.node:
                        node.doc_string = ""
                    return model_proto_to_olive_model(proto, output_model_path, config)

            def test_strip(run_pass, tiny_conv):
                out = run_pass(Strip, tiny_conv)
                assert all(not n.doc_string for n in onnx.load(out.model_path).graph.node)

            def test_contract(isolated_registry):
                isolated_registry.register(Strip)
                assert assert_pass_contract(Strip)["ran"] == 1
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_kit_imports_are_lazy():
    code = """
    import json, sys
    import olive.testing, olive.testing.plugin
    olive.testing.make_venv
    print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "onnx", "onnxruntime"))))
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_default_scratch_folders_are_removed_at_exit():
    code = """
    import sys
    from olive.testing import assert_pass_contract, run_pass, mlp_model, save_model
    from olive.testing.scratch import scratch_dir
    sys.path.insert(0, {tests!r})
    from test_testing_kit import SetDoc
    model = save_model(mlp_model(), scratch_dir("olive-kit-test-"))
    out = run_pass(SetDoc, model)
    report = assert_pass_contract(SetDoc, max_points=1)
    print(model.model_path, out.model_path, report["outputs"][0].model_path, sep="\\n")
    """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code.format(tests=str(Path(__file__).parent)))],
        capture_output=True,
        text=True,
        check=True,
    )
    paths = [Path(line) for line in result.stdout.splitlines()]
    assert len(paths) == 3
    for path in paths:
        assert not path.exists() and not path.parent.exists(), path


# ------------------------------------------------------------------------------------------------
# assert_pass_contract
# ------------------------------------------------------------------------------------------------
def test_contract_runs_every_point_or_lets_validate_reject_it(tiny_mlp):
    report = assert_pass_contract(SetDoc, model=tiny_mlp)
    # 3 texts x 2 booleans; ("c", True) is rejected by validate_config
    assert (report["points"], report["ran"], report["rejected"]) == (6, 5, 1)
    docs = sorted(onnx.load(out.model_path).graph.doc_string for out in report["outputs"])
    assert docs == ["A", "B", "a", "b", "c"]


def test_contract_max_points_and_default_model():
    report = assert_pass_contract(SetDoc, max_points=2)
    assert report["points"] == 2 and report["ran"] == 2


def test_contract_rejects_search_values_of_the_wrong_type():
    with pytest.raises(AssertionError, match=r"WrongSearchType: invalid config declaration.*\[1, 2\]"):
        assert_pass_contract(WrongSearchType)


def test_contract_names_the_point_that_fails(tiny_mlp):
    with pytest.raises(AssertionError, match=r"FailsOnB: search point \{'text': 'b'.*ValueError: b is not supported"):
        assert_pass_contract(FailsOnB, model=tiny_mlp)


def test_contract_checks_the_output(tiny_mlp):
    with pytest.raises(AssertionError, match="does not load in onnxruntime"):
        assert_pass_contract(WritesGarbage, model=tiny_mlp, max_points=1)
    with pytest.raises(AssertionError, match=r"_run_for_config must return an OliveModelHandler"):
        assert_pass_contract(ReturnsPath, model=tiny_mlp, max_points=1)


def test_contract_required_params_come_from_config(tiny_mlp):
    with pytest.raises(AssertionError, match=r"required params \['text'\]"):
        assert_pass_contract(NeedsValue, model=tiny_mlp)
    assert assert_pass_contract(NeedsValue, model=tiny_mlp, config={"text": "given"})["ran"] == 1


def test_contract_checks_the_registered_name(isolated_registry, tiny_mlp):
    isolated_registry.register(SetDoc, name="SetDocString")
    assert assert_pass_contract(SetDoc, model=tiny_mlp, entry_point_name="SetDocString", max_points=1)["ran"] == 1
    with pytest.raises(AssertionError, match="registered as 'SetDocString' but its entry point is named 'SetDoc'"):
        assert_pass_contract(SetDoc, model=tiny_mlp, entry_point_name="SetDoc", max_points=1)


def test_contract_rejects_non_pass():
    with pytest.raises(AssertionError, match=r"not a subclass of olive\.passes\.Pass"):
        assert_pass_contract(dict)


# ------------------------------------------------------------------------------------------------
# make_venv
# ------------------------------------------------------------------------------------------------
def test_pip_install_failure_carries_pip_output(fresh_venv, tmp_path):
    with pytest.raises(VenvError, match=r"(?s)exited with 1.*does-not-exist"):
        fresh_venv.pip_install("--no-index", str(tmp_path / "does-not-exist"))


def test_isolated_venv_does_not_see_our_packages(tmp_path):
    venv = make_venv(tmp_path / "isolated", system_site_packages=False)
    result = venv.python_run("import olive", check=False)
    assert result.returncode != 0 and "No module named 'olive'" in result.stderr
    # pip still installs into it (from outside), and what it installs is importable there
    venv.pip_install("--no-deps", "--no-index", samples.good_pass_wheel())
    assert venv.python_run("import olive_test_good, sys; print(olive_test_good.__file__)").stdout.startswith(
        str(venv.path)
    )


# --------------------------------------------------------------------------------------------- run_watched
def test_run_watched_lets_a_command_run_while_it_prints_and_returns_its_output() -> None:
    from olive.testing import run_watched

    # Runs about four times longer than the stall limit, printing all along.
    code = (
        "import sys, time\nfor i in range(8):\n"
        "    print(i, flush=True); print('e', file=sys.stderr, flush=True)\n    time.sleep(0.5)"
    )
    done = run_watched([sys.executable, "-c", code], stalled_after=1.5)
    assert done.returncode == 0
    assert done.stdout.split() == [str(i) for i in range(8)] and done.stderr.split() == ["e"] * 8


def test_run_watched_counts_files_written_under_a_watched_folder_as_progress(tmp_path: Path) -> None:
    from olive.testing import run_watched

    code = (
        "import sys, time, pathlib\nfor i in range(10):\n"
        "    pathlib.Path(sys.argv[1], f'{i}.txt').write_text('x'); time.sleep(0.6)\nsys.exit(3)"
    )
    done = run_watched([sys.executable, "-c", code, str(tmp_path)], stalled_after=4.0, watch=[tmp_path])
    assert done.returncode == 3 and len(list(tmp_path.iterdir())) == 10


def test_run_watched_stops_a_silent_command_and_its_children() -> None:
    from olive.testing import StalledProcessError, run_watched

    child = "import time; time.sleep(120)"
    code = (
        f"import subprocess, sys, time\np = subprocess.Popen([sys.executable, '-c', {child!r}])\n"
        "print(p.pid, flush=True); print('started', file=sys.stderr, flush=True)\ntime.sleep(120)"
    )
    started = time.monotonic()
    with pytest.raises(StalledProcessError) as caught:
        run_watched([sys.executable, "-c", code], stalled_after=1.0)
    assert time.monotonic() - started < 60
    error = caught.value
    assert "made no progress for" in str(error) and "started" in str(error) and error.silent_s >= 1.0
    grandchild = int(error.stdout.split()[0])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{grandchild}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{grandchild}").exists() or "Z" in Path(f"/proc/{grandchild}/stat").read_text().split()[2]


def test_the_trained_decoders_cache_follows_olive_test_cache_then_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from olive.testing.decoders import default_cache_dir

    monkeypatch.delenv("OLIVE_TEST_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "olive-testing"
    monkeypatch.setenv("OLIVE_TEST_CACHE", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
