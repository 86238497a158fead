"""Inputs on their way to Ray nodes that do not see them (data files and folders, user scripts): packaged once,
written once per node, digest-checked, and named by the node's copy wherever the search named them."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import attrs
import pytest
from engine_support import search_workflow

from olive.cache.store import CacheStore, hash_path
from olive.engine.transfer import (
    ShippedCorrupt,
    ShippedData,
    input_on_node,
    inputs_on_node,
    package_inputs,
    unreadable_inputs,
)
from olive.workflows.config import load_workflow_config


@attrs.frozen
class _Context:
    """What :func:`inputs_on_node` reads of a trial context, and another holder of a path."""

    workflow: Any
    also: list[Any] = attrs.Factory(list)


def _workflow(tmp_path: Path, **extra):
    return load_workflow_config({**search_workflow(tmp_path, "data", None), **extra})


def _node(tmp_path: Path) -> CacheStore:
    store = CacheStore(tmp_path / "node-cache")
    store.ensure()
    return store


def _shipped(packages) -> ShippedData:
    return ShippedData({p.path: p.path for p in packages}, {p.path: p.sha256 for p in packages})


def test_a_data_file_is_packaged_with_its_sha256(tmp_path: Path) -> None:
    packages, withheld = package_inputs(_workflow(tmp_path))
    data = (tmp_path / "calib.npz").read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert [(p.path, p.sha256, p.files, p.folder) for p in packages] == [
        (str(tmp_path / "calib.npz"), digest, {"calib.npz": data}, False)
    ]
    assert withheld == {}


def test_an_over_limit_file_is_withheld_saying_why(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    size = (tmp_path / "calib.npz").stat().st_size
    packages, withheld = package_inputs(workflow, limit=size - 1)
    assert packages == []
    assert list(withheld) == [str(tmp_path / "calib.npz")]
    assert f"over the {size - 1}-byte limit" in withheld[str(tmp_path / "calib.npz")]


def test_a_node_that_cannot_read_the_data_runs_on_its_own_checked_copy(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    original = tmp_path / "calib.npz"
    (package,), _ = package_inputs(workflow)
    before = workflow.data_configs["calib"].load_dataset()
    key_before = workflow.data_configs["calib"].content_hash()
    original.unlink()  # as on a node that does not see the engine's folders
    store = _node(tmp_path)
    fetched: list[str] = []
    context = _Context(workflow)
    local = inputs_on_node(store, context, _shipped([package]), lambda ref: fetched.append(ref) or package)
    copy = store.root / "inputs" / "data" / package.sha256 / "calib.npz"
    assert local.workflow.data_configs["calib"].load_dataset_config.params["data_path"] == str(copy)
    assert workflow.data_configs["calib"].load_dataset_config.params["data_path"] == str(original)  # untouched
    assert copy.read_bytes() == package.files["calib.npz"]
    after = local.workflow.data_configs["calib"].load_dataset()
    assert len(after) == len(before)
    # The node's copy keys its runs and evaluations as the engine's file does.
    assert local.workflow.data_configs["calib"].content_hash() == key_before
    # Once per node: a second context on this node reuses the copy without fetching it again.
    inputs_on_node(store, context, _shipped([package]), lambda ref: pytest.fail("fetched twice"))
    assert fetched == [str(original)]


def test_a_data_folder_and_the_scripts_travel_and_are_renamed_everywhere(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "helpers").mkdir(parents=True)
    (project / "helpers" / "shapes.py").write_text("N = 16\n")
    (project / "metrics.py").write_text("def score(model, data):\n    return 1.0\n")
    folder = tmp_path / "samples"
    (folder / "part").mkdir(parents=True)
    (folder / "part" / "a.bin").write_bytes(b"\x00" * 64)
    workflow = _workflow(tmp_path, user_script=str(project / "metrics.py"), script_dir=str(project / "helpers"))
    dummy = {"input_names": ["input"], "input_shapes": [[1, 16]], "data_dir": str(folder)}
    workflow = attrs.evolve(
        workflow,
        data_configs={
            **workflow.data_configs,
            "dummy": type(workflow.data_configs["calib"]).from_json(
                {"name": "dummy", "type": "DummyDataContainer", "load_dataset_config": dummy}
            ),
        },
    )
    packages, withheld = package_inputs(workflow)
    assert withheld == {}
    by_path = {p.path: p for p in packages}
    assert by_path[str(folder)].folder and set(by_path[str(folder)].files) == {"part/a.bin"}
    assert by_path[str(folder)].sha256 == hash_path(folder)
    assert by_path[str(project / "metrics.py")].sha256 == hash_path(project / "metrics.py")
    keys_before = {name: data.content_hash() for name, data in workflow.data_configs.items()}

    shutil.rmtree(project)
    shutil.rmtree(folder)
    assert {what for _, what in unreadable_inputs(workflow)} == {
        "user_script",
        "script_dir",
        "data config 'dummy' load_dataset_config.data_dir",
    }
    store = _node(tmp_path)
    context = _Context(workflow, [{"named": project / "metrics.py"}])
    local = inputs_on_node(store, context, _shipped(packages), lambda ref: by_path[ref])
    assert unreadable_inputs(local.workflow) == []
    assert local.workflow.user_script.is_relative_to(store.root / "inputs" / "data")
    assert local.workflow.user_script.read_text().startswith("def score")
    assert (local.workflow.script_dir / "shapes.py").read_text() == "N = 16\n"
    copied = Path(local.workflow.data_configs["dummy"].load_dataset_config.params["data_dir"])
    assert (copied / "part" / "a.bin").read_bytes() == b"\x00" * 64
    # Every holder of a path names the copy, in the form it held it (a Path stays a Path).
    assert local.also == [{"named": local.workflow.user_script}]
    assert {name: data.content_hash() for name, data in local.workflow.data_configs.items()} == keys_before
    assert workflow.user_script == project / "metrics.py"  # the engine's context is untouched


def test_a_tampered_input_is_never_written(tmp_path: Path) -> None:
    (package,), _ = package_inputs(_workflow(tmp_path))
    store = _node(tmp_path)
    data = package.files["calib.npz"]
    tampered = attrs.evolve(package, files={"calib.npz": data[:-1] + bytes([data[-1] ^ 1])})
    with pytest.raises(ShippedCorrupt, match="another sha256"):
        input_on_node(store, tampered)
    # The same bytes with a digest to match: the whole no longer has the sha256 it left with.
    swapped = attrs.evolve(tampered, digests={"calib.npz": hashlib.sha256(tampered.files["calib.npz"]).hexdigest()})
    with pytest.raises(ShippedCorrupt, match="other files"):
        input_on_node(store, swapped)
    assert not list((store.root / "inputs" / "data").rglob("calib.npz"))
