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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine_support import base_workflow, count_matmuls, make_registry, write_mlp

from olive.cli.main import cli
from olive.plugins.registry import use_registry

TESTS_DIR = Path(__file__).parent


@pytest.fixture(autouse=True)
def _registry():
    with use_registry(make_registry()) as registry:
        yield registry


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
    return {
        "workflow_id": "w",
        "input_model": {"type": "ONNXModel", "config": {"model_path": "model/model.onnx"}},
        "systems": {
            "local": {
                "type": "LocalSystem",
                "accelerators": [{"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}],
            }
        },
        "data_configs": [
            {
                "name": "calib",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": "calib.npz"},
                "dataloader_config": {"batch_size": 2},
            }
        ],
        "evaluators": {
            "common": {
                "metrics": [
                    {"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 1}]},
                    {
                        "name": "agree",
                        "type": "agreement",
                        "data_config": "calib",
                        "sub_types": [
                            {"name": "cosine_mean", "priority": 2, "goal": {"type": "threshold", "value": 0.9}}
                        ],
                    },
                ]
            }
        },
        "evaluator": "common",
        "target": "local",
        "passes": {"add": {"type": "AddMatMuls", "config": {"n": 1}}, "scale": {"type": "ScaleOutput"}},
        "search_strategy": {"execution_order": "joint", "sampler": "sequential", "max_samples": 4, "seed": 0},
        "cache_dir": "cache",
        "output_dir": "out",
    }


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
        "from test_engine_support import make_registry;"
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
    assert proc.stderr.strip() == 'Error: search_strategy.max_samples: expected a whole number, got a string ("many")'


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
