"""Cache keys name files by content: the same workflow with its model and data at another path (another machine,
a colleague's clone) reuses every pass run and evaluation; an edited data file is measured again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from engine_support import footprint_content, ran_passes, search_workflow, write_calibration

import olive
from olive.data.config import DataConfig
from olive.engine.keys import data_digest, eval_key, run_key
from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR
from olive.passes.olive_pass import Pass
from olive.plugins.identity import PassIdentity

pytestmark = pytest.mark.usefixtures("engine_registry")


def _moved(workflow: dict, old: Path, new: Path, name: str) -> dict:
    """``workflow`` reading its model and data under ``new`` instead of ``old``; its cache stays where it was."""
    cache = workflow["cache_dir"]
    text = json.dumps(workflow).replace(str(old), str(new))
    moved = json.loads(text)
    moved["cache_dir"] = cache
    moved["output_dir"] = str(new / f"out-{name}")
    return moved


def _evaluations(output: Any) -> list[float]:
    return [n.timings["evaluation_cached"] for n in output.footprint if "evaluate" in n.timings]


def test_the_same_data_at_another_path_is_served_from_the_cache(tmp_path: Path, run_log: Path) -> None:
    first_dir, second_dir = tmp_path / "alice", tmp_path / "bob"
    first_dir.mkdir()
    workflow = search_workflow(first_dir, "a", None)
    workflow["cache_dir"] = str(tmp_path / "cache")
    first = olive.run(workflow)
    assert ran_passes(run_log) and _evaluations(first) and not any(_evaluations(first))

    second_dir.mkdir()
    shutil.copytree(first_dir / "input", second_dir / "input")
    shutil.copy2(first_dir / "calib.npz", second_dir / "calib.npz")
    shutil.rmtree(first_dir)  # nothing of the first folder is read again
    run_log.write_text("")
    second = olive.run(_moved(workflow, first_dir, second_dir, "b"))
    assert ran_passes(run_log) == []
    evaluations = _evaluations(second)
    assert evaluations and all(cached == 1.0 for cached in evaluations)
    assert footprint_content(second) == footprint_content(first)

    # Another data file at that path: every model is measured again, no pass runs again.
    write_calibration(second_dir / "calib.npz", rows=6)
    third = olive.run(_moved(workflow, first_dir, second_dir, "c"))
    assert ran_passes(run_log) == []
    evaluations = _evaluations(third)
    assert evaluations and not any(evaluations)


def _data(path: Path, **extra: Any) -> DataConfig:
    load = {"data_path": str(path), **extra}
    return DataConfig.from_json({"name": "calib", "type": "NpzDataContainer", "load_dataset_config": load})


def test_a_data_config_is_keyed_by_its_files_content_and_its_other_params(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "calib.npz", tmp_path / "b" / "other-name.npz"
    a.parent.mkdir()
    b.parent.mkdir()
    write_calibration(a)
    shutil.copy2(a, b)
    assert data_digest(_data(a)) == data_digest(_data(b))
    assert data_digest(_data(a)) != data_digest(_data(a, max_samples=4))
    assert data_digest(_data(a)) != data_digest(_data(a).for_role("judge"))
    assert str(tmp_path) not in json.dumps(data_digest(_data(a)))
    write_calibration(b, rows=6)
    assert data_digest(_data(a)) != data_digest(_data(b))


def test_a_data_folder_is_keyed_by_its_files(tmp_path: Path) -> None:
    def folder_config(folder: Path) -> DataConfig:
        return DataConfig.from_json(
            {
                "name": "d",
                "type": "DummyDataContainer",
                "load_dataset_config": {
                    "data_dir": str(folder),
                    "input_names": ["input"],
                    "input_shapes": [[1, 16]],
                },
            }
        )

    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "x.bin").write_bytes(b"abc")
    assert data_digest(folder_config(one)) == data_digest(folder_config(two))
    (two / "sub" / "x.bin").write_bytes(b"abd")
    assert data_digest(folder_config(one)) != data_digest(folder_config(two))
    (two / "sub" / "x.bin").write_bytes(b"abc")
    (two / "sub" / "y.bin").write_bytes(b"")
    assert data_digest(folder_config(one)) != data_digest(folder_config(two))


class _Reads(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return {}

    def _run_for_config(self, model, config, output_model_path):
        return model


def test_run_keys_name_files_by_content_and_keep_their_form_without_files(tmp_path: Path) -> None:
    identity = PassIdentity("X", "local", "0")
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("table")
    b.write_text("table")

    def key(config: dict) -> str:
        return run_key("0" * 64, {}, _Reads, identity, config, DEFAULT_CPU_ACCELERATOR, None)

    assert key({"table": str(a)}) == key({"table": str(b)})
    b.write_text("other")
    assert key({"table": str(a)}) != key({"table": str(b)})
    # A path that names nothing stays a path.
    assert key({"table": str(tmp_path / "missing-1")}) != key({"table": str(tmp_path / "missing-2")})
    # A config without files has the key it always had (format 1): no cached run is lost to this change.
    from olive.engine.keys import digest

    old = digest(
        {
            "format": 1,
            "input_model": "0" * 64,
            "input_settings": {},
            "pass": "X",
            "distribution": "local",
            "distribution_version": "0",
            "pass_version": _Reads._version,
            "config": {"n": 1},
            "files": {},
            "accelerator": None,
            "user_script": None,
        }
    )
    assert key({"n": 1}) == old


def test_evaluation_keys_name_a_metric_s_files_by_content(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f(): pass\n")
    b.write_text("def f(): pass\n")
    assert eval_key("0" * 64, {}, {"metrics": [{"user_script": str(a)}]}) == eval_key(
        "0" * 64, {}, {"metrics": [{"user_script": str(b)}]}
    )
    b.write_text("def f(): return 1\n")
    assert eval_key("0" * 64, {}, {"metrics": [{"user_script": str(a)}]}) != eval_key(
        "0" * 64, {}, {"metrics": [{"user_script": str(b)}]}
    )
