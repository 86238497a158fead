"""A cache entry is data from disk: checked before reuse, and never delivered when it is not what its run made.

Each test damages a real entry of a real run the way a user, a sync tool or a bad disk would, runs again through
the CLI, and checks that the damaged entry was recomputed (the pass ran again, a warning named the entry) and
that the delivered model and metrics are the real ones.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from engine_support import (
    agreement_metric,
    base_workflow,
    ran_passes,
    size_metric,
    with_evaluator,
    write_calibration,
    write_mlp,
)
from onnx import numpy_helper

from olive.cache.store import RUN_RECORD, CacheStore, entry_files, hash_model
from olive.cli.main import cli
from olive.engine.trial import model_from_record
from olive.model.handler import ONNXModelHandler

pytestmark = pytest.mark.usefixtures("engine_registry")


def _workflow(tmp_path: Path) -> Path:
    data = write_calibration(tmp_path / "calib.npz")
    workflow = with_evaluator(
        base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1}}),
        size_metric(),
        agreement_metric(),
        data=data,
    )
    path = tmp_path / "wf.json"
    path.write_text(json.dumps(workflow))
    return path


def _run(config: Path) -> Any:
    result = CliRunner().invoke(cli, ["run", str(config)], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def _entry(tmp_path: Path) -> Path:
    (entry,) = (tmp_path / "cache" / "runs").glob("*/*")
    return entry


def _record(entry: Path) -> dict:
    return json.loads((entry / RUN_RECORD).read_text())


def _write_record(entry: Path, record: dict) -> None:
    (entry / RUN_RECORD).write_text(json.dumps(record))


def _first_run(tmp_path: Path, run_log: Path) -> tuple[Path, bytes, dict]:
    config = _workflow(tmp_path)
    assert _run(config).exit_code == 0
    assert len(ran_passes(run_log)) == 1
    return (
        config,
        (tmp_path / "out" / "model.onnx").read_bytes(),
        json.loads((tmp_path / "out" / "metrics.json").read_text()),
    )


def _assert_recomputed(tmp_path: Path, run_log: Path, result: Any, model: bytes, metrics: dict) -> None:
    assert result.exit_code == 0, result.output
    assert "is corrupt" in result.stderr and str(tmp_path / "cache") in " ".join(result.stderr.split()).replace(" ", "")
    assert len(ran_passes(run_log)) == 2, "the pass ran again"
    assert (tmp_path / "out" / "model.onnx").read_bytes() == model
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["best"] == metrics["best"]


def test_a_cached_model_replaced_by_a_valid_one_with_zeroed_weights_is_recomputed_never_delivered(
    tmp_path: Path, run_log: Path
) -> None:
    config, model, metrics = _first_run(tmp_path, run_log)
    cached = _entry(tmp_path) / "output" / "model.onnx"
    proto = onnx.load(str(cached))
    for init in proto.graph.initializer:
        init.CopyFrom(numpy_helper.from_array(np.zeros_like(numpy_helper.to_array(init)), init.name))
    onnx.save(proto, str(cached))
    onnx.checker.check_model(str(cached))  # a valid model, only the wrong one

    result = _run(config)
    _assert_recomputed(tmp_path, run_log, result, model, metrics)
    assert metrics["best"]["agree-cosine_mean"]["value"] > 0.999
    # The new entry is whole and reused without running again.
    assert _run(config).exit_code == 0 and len(ran_passes(run_log)) == 2


def test_a_model_path_leading_out_of_the_entry_is_never_copied_to_the_output(tmp_path: Path, run_log: Path) -> None:
    config, model, metrics = _first_run(tmp_path, run_log)
    secret = tmp_path / "secret.onnx"
    # The secret is a valid model with other weights, in the spot the record points at.
    proto = onnx.load(str(_entry(tmp_path) / "output" / "model.onnx"))
    proto.graph.initializer[0].CopyFrom(
        numpy_helper.from_array(
            np.full_like(numpy_helper.to_array(proto.graph.initializer[0]), 7.0), proto.graph.initializer[0].name
        )
    )
    onnx.save(proto, str(secret))
    secret_bytes = secret.read_bytes()
    entry = _entry(tmp_path)
    record = _record(entry)
    record["model"]["config"]["model_path_rel"] = os.path.relpath(secret, entry)
    _write_record(entry, record)

    result = _run(config)
    _assert_recomputed(tmp_path, run_log, result, model, metrics)
    assert "not inside the entry" in " ".join(result.stderr.split())
    assert secret.read_bytes() == secret_bytes, "the outside file is left alone"


def test_an_absolute_model_path_to_another_model_fails_the_hash_check(tmp_path: Path, run_log: Path) -> None:
    config, model, metrics = _first_run(tmp_path, run_log)
    other = tmp_path / "input" / "model.onnx"  # a real model, but not the one the run made
    entry = _entry(tmp_path)
    record = _record(entry)
    record["model"]["config"].pop("model_path_rel")
    record["model"]["config"]["model_path"] = str(other)
    _write_record(entry, record)
    _assert_recomputed(tmp_path, run_log, _run(config), model, metrics)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda entry: (entry / RUN_RECORD).write_text("garbage{"), id="unparsable"),
        pytest.param(lambda entry: (entry / RUN_RECORD).write_text("[]"), id="a-list"),
        pytest.param(lambda entry: (entry / RUN_RECORD).unlink(), id="missing"),
        pytest.param(lambda entry: _edit(entry, output_hash="0" * 63), id="bad-hash"),
        pytest.param(lambda entry: _edit(entry, key="f" * 64), id="another-runs-record"),
        pytest.param(lambda entry: _edit(entry, model={"type": "ONNXModel", "config": "x"}), id="ill-typed-model"),
        pytest.param(lambda entry: _edit(entry, model={"type": "Nope", "config": {}}), id="no-model-path"),
        pytest.param(
            lambda entry: _edit(entry, model={**_record(entry)["model"], "type": "Nope"}), id="unknown-model-type"
        ),
        pytest.param(lambda entry: _edit(entry, files={"../x": [1, 2]}), id="file-list-leaves-entry"),
        pytest.param(lambda entry: _edit(entry, files="x"), id="ill-typed-file-list"),
        pytest.param(lambda entry: (entry / "output" / "model.onnx").unlink(), id="model-missing"),
        pytest.param(lambda entry: (entry / "output" / "model.onnx").write_bytes(b"not onnx"), id="model-not-onnx"),
    ],
)
def test_a_corrupt_run_entry_is_warned_about_removed_and_recomputed(tmp_path: Path, run_log: Path, damage: Any) -> None:
    config, model, metrics = _first_run(tmp_path, run_log)
    damage(_entry(tmp_path))
    _assert_recomputed(tmp_path, run_log, _run(config), model, metrics)
    assert "vanished" not in _run(config).output


def _edit(entry: Path, **changes: Any) -> None:
    _write_record(entry, {**_record(entry), **changes})


@pytest.mark.parametrize(
    "stored",
    [[], "x", {"result": []}, {"result": {"size-bytes": {"value": "big"}}}, {"result": {}}, {"result": {}, "where": 3}],
)
def test_a_corrupt_evaluation_entry_is_measured_again(tmp_path: Path, run_log: Path, stored: Any) -> None:
    config, _, metrics = _first_run(tmp_path, run_log)
    for entry in (tmp_path / "cache" / "evals").glob("*/*.json"):
        entry.write_text(json.dumps(stored))
    result = _run(config)
    assert result.exit_code == 0, result.output
    assert "is corrupt" in result.stderr and "measured again" in " ".join(result.stderr.split())
    assert len(ran_passes(run_log)) == 1, "the pass run itself was fine and is reused"
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["best"] == metrics["best"]


def test_a_copied_cache_with_new_modification_times_is_reused_after_its_hashes_check_out(
    tmp_path: Path, run_log: Path
) -> None:
    config, model, _ = _first_run(tmp_path, run_log)
    # copyfile keeps no times: every size/mtime fast check fails, and the content hash decides.
    shutil.copytree(tmp_path / "cache", tmp_path / "copy", copy_function=shutil.copyfile)
    result = CliRunner().invoke(cli, ["run", str(config), "--cache-dir", str(tmp_path / "copy")])
    assert result.exit_code == 0, result.output
    assert "corrupt" not in result.output
    assert len(ran_passes(run_log)) == 1
    assert (tmp_path / "out" / "model.onnx").read_bytes() == model


def test_an_entry_folder_that_is_a_symlink_is_unlinked_and_what_it_points_at_is_kept(
    tmp_path: Path, run_log: Path
) -> None:
    config, model, metrics = _first_run(tmp_path, run_log)
    entry = _entry(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(entry, elsewhere)
    entry.symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*"))
    _assert_recomputed(tmp_path, run_log, _run(config), model, metrics)
    assert sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*")) == before
    assert not _entry(tmp_path).is_symlink()


def test_get_run_repairs_only_when_asked_and_hashes_only_when_the_files_changed(tmp_path: Path) -> None:
    store = CacheStore(tmp_path / "c")
    key = "ab" * 32
    with store.new_run(key) as tmp:
        model = write_mlp(tmp / "output")
        record = {
            "key": key,
            "output_hash": hash_model(ONNXModelHandler(str(model))),
            "model": {"type": "ONNXModel", "config": {"model_path": None, "model_path_rel": "output/model.onnx"}},
            "config": {},
            "files": entry_files(tmp),
        }
        (tmp / RUN_RECORD).write_text(json.dumps(record))
    cached = store.run_dir(key) / "output" / "model.onnx"
    assert store.get_run(key)["entry_dir"] == str(store.run_dir(key)), "unchanged files pass the fast check"
    os.utime(cached, ns=(10**18, 10**18))
    assert store.get_run(key) is None, "changed files are not trusted without a content check"
    assert store.get_run(key, model_from_record)["key"] == key, "the same content passes the content check"
    data = bytearray(cached.read_bytes())
    data[-1] ^= 0x01
    cached.write_bytes(bytes(data))
    assert store.get_run(key, model_from_record) is None
    assert store.run_dir(key).exists(), "a reader without the lock leaves the entry alone"
    assert store.get_run(key, model_from_record, repair=True) is None
    assert not store.run_dir(key).exists()
    assert not list((tmp_path / "c" / "tmp").iterdir()), "nothing left behind"
