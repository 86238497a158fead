"""Trials as Ray tasks on a real local Ray instance (loopback only), compared with a sequential search."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from engine_support import footprint_content, search_workflow, searched, write_mlp

import olive

# Ray treats "cluster mode off" (its macOS/Windows default) as: advertise and bind 127.0.0.1 only. Read at
# import, so it is set first; it keeps the test's Ray instance off every interface but loopback.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray")

TESTS_DIR = Path(__file__).parent


@pytest.fixture(scope="module", autouse=True)
def _ray_instance():
    # Ray workers import the test passes by module name, as they would import an installed plugin.
    path = os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ray.init(
        address=None,
        num_cpus=2,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
        log_to_driver=False,
        configure_logging=False,
    )
    assert ray.nodes()[0]["NodeManagerAddress"] == "127.0.0.1"
    yield
    ray.shutdown()


pytestmark = pytest.mark.usefixtures("engine_registry")


def test_ray_executor_gives_the_sequential_footprint_and_best(tmp_path: Path) -> None:
    sequential = olive.run(search_workflow(tmp_path, "seq", None, max_samples=6))
    parallel = olive.run(search_workflow(tmp_path, "ray", {"type": "ray", "num_cpus_per_trial": 1}, max_samples=6))
    assert footprint_content(parallel) == footprint_content(sequential)
    assert parallel.best.model_id == sequential.best.model_id
    # The passes ran in Ray workers, into this run's cache.
    entries = list((tmp_path / "cache-ray" / "runs").glob("*/*/run.json"))
    assert len(entries) == len({n.model_id for n in parallel.footprint if n.status == "ok"}) - 1
    assert ray.is_initialized()  # the executor leaves a Ray instance it did not start running


def test_a_ray_worker_killed_mid_trial_is_retried_once(tmp_path: Path) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    workflow = search_workflow(tmp_path, "crash", {"type": "ray"})
    workflow["passes"] = {
        "crash": {
            "type": "CrashOnce",
            "n": 1,
            "extra": False,
            "flag_dir": str(flags),
            "marker": searched(None, "once", "always"),
        }
    }
    output = olive.run(workflow)
    statuses: dict[Any, str] = {}
    for node in output.footprint[1:]:
        config = (node.config.get("point") or {}).get("crash", node.config)
        statuses[config["marker"]] = node.status
    assert statuses == {None: "ok", "once": "ok", "always": "failed"}
    failed = next(n for n in output.footprint if n.status == "failed")
    assert "Worker" in failed.error or "died" in failed.error, json.dumps(failed.error)


def test_user_script_objects_and_data_configs_reach_ray_workers(tmp_path: Path) -> None:
    import numpy as np

    folder = tmp_path / "proj"
    folder.mkdir()
    write_mlp(folder / "m")
    np.savez(folder / "calib.npz", input=np.zeros((2, 16), dtype=np.float32))
    (folder / "t.txt").write_text("x")
    # The script is not importable by module name on a worker: its functions travel with the search.
    (folder / "script.py").write_text("def triple(x):\n    return 3 * x\n\ndef double(x):\n    return 2 * x\n")
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(folder / "m" / "model.onnx")},
        "data_configs": [
            {"name": "calib", "type": "NpzDataContainer", "load_dataset_config": {"data_path": "calib.npz"}}
        ],
        "user_script": "script.py",
        "passes": {
            "inspect": [
                {"type": "Inspect", "data_config": "calib", "table": "t.txt", "transform": "triple"},
                {"type": "Inspect", "data_config": "calib", "table": "t.txt", "transform": "double"},
            ]
        },
        "search_strategy": {"execution_order": "joint", "executor": {"type": "ray"}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    (folder / "wf.json").write_text(json.dumps(workflow))
    output = olive.run(folder / "wf.json")
    received = sorted(
        json.loads((Path(n.model_path).parent / "received.json").read_text())["transform"] for n in output.footprint[1:]
    )
    assert received == [4, 6]
    assert all(n.status == "ok" for n in output.footprint)
