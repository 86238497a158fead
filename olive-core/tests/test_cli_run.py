"""`olive run`, `olive run-pass` and `olive cache` through the click CLI: exit codes, one-line errors."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from engine_support import agreement_metric, base_workflow, count_matmuls, size_metric, with_evaluator, write_mlp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olive.cli.main import cli
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import model_proto_to_olive_model

TESTS_DIR = Path(__file__).parent


pytestmark = pytest.mark.usefixtures("engine_registry")


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_run_produces_the_model_and_exits_0(tmp_path: Path) -> None:
    config = _write(tmp_path / "wf.json", base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 2}}))
    result = _invoke("run", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert count_matmuls(tmp_path / "out" / "model.onnx") == 2 + 2
    assert "Candidates" in result.stdout and "chosen model" in result.stdout


def test_dry_run_prints_space_sizes_and_runs_nothing(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls"}, "scale": {"type": "ScaleOutput"}},
        search_strategy={"execution_order": "joint", "sampler": "random"},
    )
    result = _invoke("run", "--config", str(_write(tmp_path / "wf.json", data)), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "add: 3 point(s)" in result.stdout and "scale: 4 point(s)" in result.stdout
    assert "total search space: 12 point(s)" in result.stdout
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_dry_run_lists_every_target_and_counts_them_in_the_search_size(tmp_path: Path) -> None:
    strategies = {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": ["a", "b"]}
    providers = [["CPUExecutionProvider", {"arena_extend_strategy": strategies}]]
    systems = {"local": {"type": "LocalSystem", "accelerators": [{"device": "cpu", "execution_providers": providers}]}}
    data = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls"}},
        search_strategy={"execution_order": "joint", "sampler": "random"},
        systems=systems,
        target="local",
    )
    result = CliRunner().invoke(
        cli, ["run", str(_write(tmp_path / "wf.json", data)), "--dry-run"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "targets (2): cpu-cpu[arena_extend_strategy=a], cpu-cpu[arena_extend_strategy=b]" in lines
    assert "  add: 3 point(s)" in lines and "  targets: 2" in lines
    assert "total search space: 6 point(s)" in lines
    assert not any(line.startswith("accelerator:") for line in lines)


def test_failing_pass_outside_a_search_exits_1_with_one_line(tmp_path: Path) -> None:
    data = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "fail": True}})
    config = _write(tmp_path / "wf.json", data)
    result = _invoke("run", "--config", str(config))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: pass 'add' (AddMatMuls) failed: RuntimeError: AddMatMuls was told to fail"
    )
    assert "Traceback" not in result.output
    # Nothing half-written: no cache entry, no temp folder left, no model in the output folder.
    assert not list((tmp_path / "cache" / "runs").glob("*/*"))
    assert not list((tmp_path / "cache" / "tmp").iterdir())
    assert not (tmp_path / "out" / "model.onnx").exists()
    verbose = _invoke("run", "--config", str(config), "--verbose")
    assert verbose.exit_code == 1 and "Traceback" in verbose.stderr


def test_run_pass_runs_one_pass(tmp_path: Path) -> None:
    model = write_mlp(tmp_path / "in")
    result = _invoke(
        "run-pass",
        "--pass-name",
        "AddMatMuls",
        "--pass-config",
        '{"n": 1}',
        "-m",
        str(model),
        "-o",
        str(tmp_path / "o"),
    )
    assert result.exit_code == 0, result.output
    assert count_matmuls(tmp_path / "o" / "model.onnx") == 3
    bad = _invoke("run-pass", "--pass-name", "AddMatMuls", "--pass-config", '{"m": 1}', "-m", str(model), "-o", "x")
    assert bad.exit_code == 2 and "unknown param 'm'" in bad.stderr


def test_cache_info_and_clean(tmp_path: Path) -> None:
    config = _write(tmp_path / "wf.json", base_workflow(tmp_path))
    assert _invoke("run", "--config", str(config)).exit_code == 0
    info = _invoke("cache", "info", "--cache-dir", str(tmp_path / "cache"), "--json")
    assert json.loads(info.stdout)["runs_by_pass"] == {"AddMatMuls": 1}
    assert _invoke("cache", "clean", "--cache-dir", str(tmp_path / "cache")).exit_code == 0
    assert not (tmp_path / "cache").exists()
    (tmp_path / "precious").mkdir()
    refused = _invoke("cache", "clean", "--cache-dir", str(tmp_path / "precious"))
    assert refused.exit_code == 1 and (tmp_path / "precious").exists()


# --------------------------------------------------------------------------------------------------
# Bad configs: mutations of a valid workflow never give a traceback; each is exit 2 with the JSON path.
# --------------------------------------------------------------------------------------------------
def _valid_config(root: Path) -> dict:
    import numpy as np

    write_mlp(root / "model")
    np.savez(root / "calib.npz", input=np.zeros((4, 16), dtype=np.float32))
    workflow = {
        "workflow_id": "w",
        "input_model": {"type": "ONNXModel", "config": {"model_path": "model/model.onnx"}},
        "systems": {
            "local": {
                "type": "LocalSystem",
                "accelerators": [{"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}],
            }
        },
        "target": "local",
        "passes": {"add": {"type": "AddMatMuls", "config": {"n": 1}}, "scale": {"type": "ScaleOutput"}},
        "search_strategy": {"execution_order": "joint", "sampler": "sequential", "max_samples": 4, "seed": 0},
        "cache_dir": "cache",
        "output_dir": "out",
    }
    metrics = (size_metric(), agreement_metric(0.9))
    return with_evaluator(workflow, *metrics, data="calib.npz", dataloader_config={"batch_size": 2})


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_paths(item, (*prefix, i)))
    return found


def _dotted(path: tuple) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _mutate(config: dict, path: tuple, op: str, junk: Any, key: str) -> dict:
    config = copy.deepcopy(config)
    parent = config
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if op == "replace":
        parent[last] = junk
    elif op == "delete":
        if isinstance(parent, list):
            parent.pop(last)
        else:
            del parent[last]
    elif op == "add_key":
        target = parent[last]
        if isinstance(target, dict):
            target[key] = junk
        else:
            parent[last] = {key: junk}
    return config


JUNK = st.sampled_from([0, -3, 2.5, "x", "", True, None, [], {}, [1, "a"], {"q": 1}, "nonexistent-name"])
VALID = _valid_config


@pytest.fixture(scope="module")
def valid_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("valid")
    return root, _valid_config(root)


def test_the_base_of_the_mutations_is_valid(valid_root: tuple[Path, dict]) -> None:
    root, config = valid_root
    result = _invoke("run", "--config", str(_write(root / "wf.json", config)), "--dry-run")
    assert result.exit_code == 0, result.output


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), junk=JUNK, key=st.sampled_from(["colour", "n", "metrics", "type", "sampler", "Config"]))
def test_mutated_configs_give_exit_2_and_one_line_with_the_json_path(
    valid_root: tuple[Path, dict], data: Any, junk: Any, key: str
) -> None:
    root, config = valid_root
    path = data.draw(st.sampled_from(_paths(config)), label="path")
    op = data.draw(st.sampled_from(["replace", "delete", "add_key"]), label="op")
    mutated = _mutate(config, path, op, junk, key)
    file = _write(root / "mutated.json", mutated)
    result = _invoke("run", "--config", str(file), "--dry-run")
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
        reported = lines[0].removeprefix("Error: ").split(":", 1)[0].split(" ")[0]
        dotted = _dotted(path)
        top = reported.split(".", 1)[0].split("[", 1)[0]
        # The error names a JSON path in the mutated section, or (a renamed or deleted name) the reference
        # that now dangles.
        assert top in (*config, key), (dotted, lines[0])
        assert top == dotted.split(".", 1)[0].split("[", 1)[0] or "named" in lines[0], (dotted, lines[0])


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"evaluator": "commn"}, "evaluator"),
        ({"passes": {"add": {"type": "AddMatMuls", "data_config": "calibr"}}}, "passes.add.data_config"),
    ],
)
def test_dangling_names_are_exit_2(valid_root: tuple[Path, dict], change: dict, path: str) -> None:
    root, config = valid_root
    result = _invoke("run", "--config", str(_write(root / "dangling.json", {**config, **change})), "--dry-run")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: ") and "did you mean" in result.stderr


def test_invalid_config_in_a_real_subprocess_exits_2(tmp_path: Path) -> None:
    data = base_workflow(tmp_path, search_strategy={"sampler": "tpe", "max_samples": "many"})
    config = _write(tmp_path / "wf.json", data)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from engine_support import make_registry;"
        "from olive.plugins.registry import set_registry; set_registry(make_registry());"
        "from olive.cli.main import main; main(sys.argv[2:])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(TESTS_DIR), "run", "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        'Error: search_strategy.max_samples: expected a whole number of 0 or more, got a string ("many")'
    )


def test_nothing_meeting_the_goals_exits_1_and_says_why(tmp_path: Path) -> None:
    import numpy as np

    np.savez(tmp_path / "calib.npz", input=np.ones((4, 16), dtype=np.float32))
    data = base_workflow(tmp_path, passes={"scale": {"type": "ScaleOutput", "scale": -1.0}})
    data["data_configs"] = [
        {"name": "calib", "type": "NpzDataContainer", "load_dataset_config": {"data_path": str(tmp_path / "calib.npz")}}
    ]
    data["evaluators"] = {
        "e": {
            "metrics": [
                {
                    "name": "agree",
                    "type": "agreement",
                    "data_config": "calib",
                    "sub_types": [{"name": "cosine_mean", "goal": {"type": "threshold", "value": 0.9}}],
                }
            ]
        }
    }
    data["evaluator"] = "e"
    result = _invoke("run", "--config", str(_write(tmp_path / "wf.json", data)))
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: no candidate met the goals") and "agree-cosine_mean = -1 (needs >= 0.9)" in last


def test_unparsable_files_are_exit_2(tmp_path: Path) -> None:
    (tmp_path / "wf.json").write_text('{"input_model": ')
    result = _invoke("run", "--config", str(tmp_path / "wf.json"))
    assert result.exit_code == 2 and result.stderr.startswith(
        f"Error: config file '{tmp_path / 'wf.json'}' is not valid JSON"
    )
    (tmp_path / "wf.yaml").write_text("passes: [unclosed\n")
    result = _invoke("run", "--config", str(tmp_path / "wf.yaml"))
    assert result.exit_code == 2 and "is not valid YAML" in result.stderr
    result = _invoke("run", "--config", str(tmp_path / "missing.json"))
    assert result.exit_code == 2 and "does not exist" in result.stderr


# --------------------------------------------------------------------------------------------------
# Bad files and folders: found before anything runs, exit 2, one line, nothing created.
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("output_dir", "afile", "output_dir: '{root}/afile' is a file, not a folder; point output_dir at a folder"),
        (
            "output_dir",
            "afile/sub",
            "output_dir: '{root}/afile' (in output_dir '{root}/afile/sub') is a file, not a folder; "
            "point output_dir at a folder",
        ),
        ("cache_dir", "afile", "cache_dir: '{root}/afile' is a file, not a folder; point cache_dir at a folder"),
    ],
)
def test_a_file_where_a_folder_belongs_is_exit_2_before_any_pass_runs(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    (tmp_path / "afile").write_text("keep me")
    data = {"cache_dir": "cache", "output_dir": "out", **base_workflow(tmp_path), key: value}
    data["cache_dir"], data["output_dir"] = (
        str(tmp_path / data["cache_dir"]),
        str(tmp_path / data["output_dir"]),
    )
    result = _invoke("run", "--config", str(_write(tmp_path / "wf.json", data)))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == "Error: " + message.format(root=tmp_path)
    assert (tmp_path / "afile").read_text() == "keep me"
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("key", ["cache_dir", "output_dir"])
@pytest.mark.parametrize("place", ["top", "engine"])
def test_a_null_folder_is_exit_2_naming_the_key(tmp_path: Path, key: str, place: str) -> None:
    data = base_workflow(tmp_path)
    if place == "top":
        data[key] = None
    else:
        data.pop(key, None)
        data["engine"] = {key: None}
    result = _invoke("run", "--config", str(_write(tmp_path / "wf.json", data)), "--dry-run")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"Error: {key}: expected a string, got null"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through folder permissions")
def test_a_read_only_cache_dir_is_exit_2_before_any_pass_runs(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o555)
    data = base_workflow(tmp_path)
    data["cache_dir"] = str(tmp_path / "ro" / "cache")
    try:
        result = _invoke("run", "--config", str(_write(tmp_path / "wf.json", data)))
    finally:
        (tmp_path / "ro").chmod(0o755)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"Error: cache_dir: cannot write in '{tmp_path / 'ro'}' (in cache_dir '{tmp_path / 'ro' / 'cache'}'); "
        "point cache_dir at a writable folder"
    )


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"this is not a protobuf", "DecodeError"), (b"", "it holds no graph")],
)
def test_an_input_model_that_is_not_onnx_is_exit_2_and_creates_nothing(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    data = base_workflow(tmp_path)
    Path(data["input_model"]["model_path"]).write_bytes(content)
    result = _invoke("run", "--config", str(_write(tmp_path / "wf.json", data)))
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: input_model: '{data['input_model']['model_path']}' is not a valid ONNX model")
    assert reason in line
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_run_pass_bad_model_and_output_are_exit_2_with_one_line(tmp_path: Path) -> None:
    model = write_mlp(tmp_path / "in")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "bogus.onnx").write_text("not onnx")
    bad_model = _invoke("run-pass", "--pass-name", "AddMatMuls", "-m", str(tmp_path / "bogus.onnx"), "-o", "o")
    assert bad_model.exit_code == 2 and bad_model.stderr.startswith("Error: --model: ")
    under_file = _invoke("run-pass", "--pass-name", "AddMatMuls", "-m", str(model), "-o", str(tmp_path / "afile/o"))
    assert under_file.exit_code == 2
    assert (
        under_file.stderr.strip()
        == f"Error: --output: cannot create the folder '{tmp_path / 'afile/o'}' (Not a directory)"
    )
    missing = _invoke("run-pass", "--pass-name", "AddMatMuls", "--pass-config", "cfg.json", "-m", str(model), "-o", "o")
    assert missing.exit_code == 2 and "'cfg.json' is neither a JSON object nor an existing file" in missing.stderr
    device = _invoke("run-pass", "--pass-name", "AddMatMuls", "-m", str(model), "-o", "o", "--device", "tpu")
    assert device.exit_code == 2 and "'tpu' is not one of 'cpu', 'gpu', 'npu'" in device.stderr
    assert not Path("o").exists()


class _WritesThenFails(Pass):
    """Writes its output model, then raises: what a pass that crashes half-way leaves behind."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {}

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        model_proto_to_olive_model(model.load_model(), output_model_path, {})
        raise RuntimeError("crashed after writing")


def test_a_failing_run_pass_leaves_the_output_folder_as_it_was(tmp_path: Path, engine_registry: Any) -> None:
    engine_registry.register(_WritesThenFails, name="WritesThenFails")
    model = write_mlp(tmp_path / "in")
    fresh = _invoke("run-pass", "--pass-name", "WritesThenFails", "-m", str(model), "-o", str(tmp_path / "new"))
    assert fresh.exit_code == 1 and "crashed after writing" in fresh.stderr
    assert not (tmp_path / "new").exists()
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "notes.txt").write_text("mine")
    into_old = _invoke("run-pass", "--pass-name", "WritesThenFails", "-m", str(model), "-o", str(tmp_path / "old"))
    assert into_old.exit_code == 1
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == ["notes.txt"]


def test_candidates_in_80_columns_show_every_searched_value_whole(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls"}, "scale": {"type": "ScaleOutput"}},
        search_strategy={"execution_order": "joint", "sampler": "sequential", "max_samples": 2},
        evaluators={
            "common": {
                "metrics": [
                    {"name": "model_size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 1}]},
                    {"name": "size_again", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 2}]},
                ]
            }
        },
        evaluator="common",
    )
    result = CliRunner().invoke(
        cli, ["run", "--config", str(_write(tmp_path / "wf.json", data))], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    words = result.stdout.split()
    # A value cut to fit ("trunca…") would be unreadable; each searched value appears whole.
    for value in ("n=0", "extra=False", "scale=1.0", "truncate=False", "truncate=True"):
        assert value in words, result.stdout
    assert not any("…" in word for word in words), result.stdout


def test_an_output_dir_holding_the_input_model_is_exit_2_and_the_model_is_kept(tmp_path: Path) -> None:
    data = base_workflow(tmp_path)
    model = Path(data["input_model"]["model_path"])
    assert model.name == "model.onnx"
    before = model.read_bytes()
    data["output_dir"] = str(model.parent)
    result = _invoke("run", "--config", str(_write(tmp_path / "wf.json", data)))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"Error: output_dir: '{model.parent}' holds the input model as model.onnx, which the best model would "
        "replace; choose another output_dir"
    )
    assert model.read_bytes() == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root deletes through folder permissions")
def test_a_cache_clean_that_fails_part_way_says_so_and_keeps_the_marker(tmp_path: Path) -> None:
    config = _write(tmp_path / "wf.json", base_workflow(tmp_path))
    assert _invoke("run", "--config", str(config)).exit_code == 0
    locked = next((tmp_path / "cache" / "runs").iterdir())
    locked.chmod(0o555)
    try:
        result = _invoke("cache", "clean", "--cache-dir", str(tmp_path / "cache"))
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: cannot delete the cache in '{tmp_path / 'cache'}' (")
    assert result.stderr.strip().endswith("fix its permissions and run `olive cache clean` again")
    assert (tmp_path / "cache" / "olive-cache.json").is_file()
    assert _invoke("cache", "clean", "--cache-dir", str(tmp_path / "cache")).exit_code == 0
    assert not (tmp_path / "cache").exists()


def test_cache_clean_deletes_only_the_cache_from_a_folder_holding_other_files(tmp_path: Path) -> None:
    # cache_dir pointed at a project folder: cleaning the cache must not take the project with it.
    project = tmp_path / "project"
    data = base_workflow(project, cache_dir=str(project), output_dir=str(project / "out"))
    (project / "notes.txt").write_text("mine")
    config = _write(project / "wf.json", data)
    assert _invoke("run", "--config", str(config)).exit_code == 0
    assert (project / "runs").is_dir()
    result = _invoke("cache", "clean", "--cache-dir", str(project))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"removed the cache from {project}; the folder's other files were kept"
    assert sorted(p.name for p in project.iterdir()) == ["input", "notes.txt", "out", "wf.json"]
    # clean_cache in the workflow goes through the same path.
    assert _invoke("run", "--config", str(_write(project / "wf.json", {**data, "clean_cache": True}))).exit_code == 0
    assert (project / "notes.txt").read_text() == "mine" and (project / "input" / "model.onnx").is_file()


def test_the_summary_shows_metrics_that_have_no_priority(tmp_path: Path) -> None:
    # A metric without a priority ranks nothing but was measured: the table shows it beside the objectives.
    from engine_support import write_calibration

    workflow = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1}})
    data = write_calibration(tmp_path / "calib.npz")
    metrics = (size_metric(), agreement_metric(priority=None))
    config = _write(tmp_path / "wf.json", with_evaluator(workflow, *metrics, data=data))
    result = _invoke("run", "--config", str(config))
    assert result.exit_code == 0, result.output
    candidates = result.stdout.split("Candidates", 1)[1].split("pass run(s)", 1)[0]
    assert "cosine_mean" in candidates, result.stdout


def test_the_reference_evaluation_shows_on_stderr_before_the_search_bar(tmp_path: Path) -> None:
    # Measuring the input model comes first and can take a minute on a real model: it has its own line.
    from engine_support import write_calibration

    workflow = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1}})
    workflow["evaluate_input_model"] = True
    data = write_calibration(tmp_path / "calib.npz")
    config = _write(tmp_path / "wf.json", with_evaluator(workflow, size_metric(), agreement_metric(), data=data))
    result = _invoke("run", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert "measuring the reference model" in result.stderr, result.stderr
    assert result.stderr.index("measuring the reference model") < result.stderr.rindex("1/1")
