"""Data reaches the cache keys by content: the same workflow with its model and data at another path (another
machine, a colleague's clone, a Ray node's copy) reuses every pass run and evaluation; edited data misses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from engine_support import (
    agreement_metric,
    base_workflow,
    footprint_content,
    ran_passes,
    size_metric,
    with_evaluator,
    write_calibration,
)

import olive
from olive.data.config import DataConfig

pytestmark = pytest.mark.usefixtures("engine_registry")


def _workflow(folder: Path, cache: Path) -> dict[str, Any]:
    """A pass that fits on ``calib`` and an evaluator that judges on it, everything read from ``folder``."""
    write_calibration(folder / "calib.npz", rows=32)
    workflow = base_workflow(folder, passes={"fit": {"type": "FitOnData", "data_config": "calib"}})
    workflow["cache_dir"] = str(cache)
    return with_evaluator(workflow, size_metric(), agreement_metric(), data=folder / "calib.npz")


def _moved(workflow: dict[str, Any], old: Path, new: Path) -> dict[str, Any]:
    """``workflow`` reading its model and data under ``new`` instead of ``old``; its cache stays where it was."""
    cache = workflow["cache_dir"]
    moved = json.loads(json.dumps(workflow).replace(str(old), str(new)))
    moved["cache_dir"] = cache
    return moved


def _cached_evaluations(output: Any) -> list[float]:
    return [n.timings["evaluation_cached"] for n in output.footprint if "evaluate" in n.timings]


def test_the_same_data_at_another_path_is_served_from_the_cache(tmp_path: Path, run_log: Path) -> None:
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    alice.mkdir()
    workflow = _workflow(alice, tmp_path / "cache")
    first = olive.run(workflow)
    assert [name for name, _ in ran_passes(run_log)] == ["FitOnData"]
    assert _cached_evaluations(first) and not any(_cached_evaluations(first))

    shutil.copytree(alice, bob)
    shutil.rmtree(alice)  # nothing of the first folder is read again
    run_log.write_text("")
    second = olive.run(_moved(workflow, alice, bob))
    assert ran_passes(run_log) == []
    evaluations = _cached_evaluations(second)
    assert evaluations and all(cached == 1.0 for cached in evaluations)
    assert footprint_content(second).keys() == footprint_content(first).keys()

    # Other samples in that file: the pass fits again and every model is measured again.
    write_calibration(bob / "calib.npz", rows=40)
    third = olive.run(_moved(workflow, alice, bob))
    assert [name for name, _ in ran_passes(run_log)] == ["FitOnData"]
    evaluations = _cached_evaluations(third)
    assert evaluations and not any(evaluations)


def _npz(path: Path, **extra: Any) -> DataConfig:
    load = {"data_path": str(path), **extra}
    return DataConfig.from_json({"name": "calib", "type": "NpzDataContainer", "load_dataset_config": load})


def test_a_data_config_is_hashed_by_its_file_s_content_and_its_other_params(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "calib.npz", tmp_path / "b" / "other-name.npz"
    a.parent.mkdir()
    b.parent.mkdir()
    write_calibration(a)
    shutil.copy2(a, b)
    assert _npz(a).content_hash() == _npz(b).content_hash()
    assert _npz(a).content_hash() != _npz(a, max_samples=4).content_hash()
    assert _npz(a).content_hash() != _npz(a).for_role("judge").content_hash()
    write_calibration(b, rows=6)
    assert _npz(a).content_hash() != _npz(b).content_hash()


def test_a_data_folder_is_hashed_by_the_files_in_it(tmp_path: Path) -> None:
    def folder_config(folder: Path) -> DataConfig:
        load = {"data_dir": str(folder), "input_names": ["input"], "input_shapes": [[1, 16]]}
        return DataConfig.from_json({"name": "d", "type": "DummyDataContainer", "load_dataset_config": load})

    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "x.bin").write_bytes(b"abc")
    assert folder_config(one).content_hash() == folder_config(two).content_hash()
    (two / "sub" / "x.bin").write_bytes(b"abd")
    assert folder_config(one).content_hash() != folder_config(two).content_hash()
    (two / "sub" / "x.bin").write_bytes(b"abc")
    (two / "sub" / "y.bin").write_bytes(b"")
    assert folder_config(one).content_hash() != folder_config(two).content_hash()


def test_a_user_script_counts_by_content(tmp_path: Path) -> None:
    def scripted(script: Path) -> DataConfig:
        return DataConfig.from_json(
            {"name": "s", "type": "DataContainer", "user_script": str(script), "load_dataset_config": {"type": "f"}}
        )

    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f(data_dir=None):\n    return []\n")
    shutil.copy2(a, b)
    assert scripted(a).content_hash() == scripted(b).content_hash()
    b.write_text("def f(data_dir=None):\n    return [1]\n")
    assert scripted(a).content_hash() != scripted(b).content_hash()
