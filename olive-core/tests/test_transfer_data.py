"""Data files on their way to Ray nodes that do not see them: packaged once, written once per node, digest-checked."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import attrs
import pytest
from engine_support import search_workflow

from olive.cache.store import CacheStore
from olive.engine.transfer import ShippedCorrupt, ShippedData, data_file_on_node, data_on_node, package_data
from olive.workflows.config import load_workflow_config


def _workflow(tmp_path: Path):
    return load_workflow_config(search_workflow(tmp_path, "data", None))


def test_a_data_file_is_packaged_with_its_sha256(tmp_path: Path) -> None:
    packages, withheld = package_data(_workflow(tmp_path))
    data = (tmp_path / "calib.npz").read_bytes()
    assert [(p.path, p.sha256, p.data) for p in packages] == [
        (str(tmp_path / "calib.npz"), hashlib.sha256(data).hexdigest(), data)
    ]
    assert withheld == {}


def test_an_over_limit_file_is_withheld_saying_why(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    size = (tmp_path / "calib.npz").stat().st_size
    packages, withheld = package_data(workflow, limit=size - 1)
    assert packages == []
    assert list(withheld) == [str(tmp_path / "calib.npz")]
    assert f"over the {size - 1}-byte limit" in withheld[str(tmp_path / "calib.npz")]


def test_a_node_that_cannot_read_the_data_runs_on_its_own_checked_copy(tmp_path: Path) -> None:
    workflow = _workflow(tmp_path)
    original = tmp_path / "calib.npz"
    (package,), _ = package_data(workflow)
    before = workflow.data_configs["calib"].load_dataset()
    original.unlink()  # as on a node that does not see the engine's folders
    store = CacheStore(tmp_path / "node-cache")
    store.ensure()
    fetched: list[str] = []
    context = SimpleNamespace(workflow=workflow)
    local = data_on_node(
        store,
        context,
        ShippedData({package.path: "ref"}, {package.path: package.sha256}),
        lambda ref: fetched.append(ref) or package,
    )
    copy = store.root / "inputs" / "data" / package.sha256 / "calib.npz"
    assert local.workflow.data_configs["calib"].load_dataset_config.params["data_path"] == str(copy)
    assert workflow.data_configs["calib"].load_dataset_config.params["data_path"] == str(original)  # untouched
    assert copy.read_bytes() == package.data
    after = local.workflow.data_configs["calib"].load_dataset()
    assert len(after) == len(before)
    # Once per node: a second context on this node reuses the copy without fetching it again.
    data_on_node(
        store,
        context,
        ShippedData({package.path: "ref"}, {package.path: package.sha256}),
        lambda ref: pytest.fail("fetched twice"),
    )
    assert fetched == ["ref"]


def test_a_tampered_data_file_is_never_written(tmp_path: Path) -> None:
    (package,), _ = package_data(_workflow(tmp_path))
    store = CacheStore(tmp_path / "node-cache")
    store.ensure()
    tampered = attrs.evolve(package, data=package.data[:-1] + bytes([package.data[-1] ^ 1]))
    with pytest.raises(ShippedCorrupt, match="another sha256"):
        data_file_on_node(store, tampered)
    assert not list((store.root / "inputs" / "data").rglob("calib.npz"))
