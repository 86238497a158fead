"""Past one machine, for real: two Ray nodes that share nothing but Ray, and a remote cache on a loopback S3 server.

Pass work is counted in the run log every real pass run appends to (cache hits never do), each line naming the
Ray node that ran it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import BUCKET, CREDENTIALS, Cluster, S3Server
from engine_support import footprint_content, ran_passes, search_workflow, searched

import olive

pytestmark = pytest.mark.usefixtures("cluster_registry")


@pytest.fixture
def cluster_registry(cluster: Cluster):
    from cluster_support import make_cluster_registry

    from olive.plugins.registry import use_registry

    cluster.run_log.write_text("")
    with use_registry(make_cluster_registry()) as registry:
        yield registry


def _workflow(tmp_path: Path, cluster: Cluster, name: str, executor: dict | None, **extra: Any) -> dict:
    workflow = search_workflow(tmp_path, name, executor)
    # Every engine cache sits in the folder the second node sees as an empty tmpfs.
    workflow["cache_dir"] = str(cluster.caches / f"{tmp_path.name}-{name}")
    workflow.update(extra)
    return workflow


def _ray(cluster: Cluster) -> dict:
    return {"type": "ray", "address": cluster.address, "num_cpus_per_trial": 1}


def _remote(s3: S3Server, prefix: str) -> str:
    return f"s3://{BUCKET}/{prefix}"


def _runs(cache: Path) -> set[str]:
    return {p.parent.name for p in cache.glob("runs/*/*/run.json")}


def test_two_nodes_sharing_nothing_give_the_process_footprint(tmp_path: Path, cluster: Cluster) -> None:
    from olive.engine import executors

    # The data too lies in the folder the second node sees as an empty tmpfs: it reaches that node through Ray.
    hidden = cluster.caches / f"{tmp_path.name}-data"
    hidden.mkdir()
    process = olive.run(_workflow(hidden, cluster, "process", {"type": "process", "max_workers": 2}))
    cluster.run_log.write_text("")
    on_ray = olive.run(_workflow(hidden, cluster, "ray", _ray(cluster)))
    assert not [n.error for n in on_ray.footprint if n.status == "failed"]
    assert footprint_content(on_ray) == footprint_content(process)
    assert on_ray.best.model_id == process.best.model_id
    nodes = {json.loads(line).get("node") for line in cluster.run_log.read_text().splitlines()}
    assert "node2" in nodes, nodes  # some trials ran on the node that cannot see the engine's cache or the data...
    # ...and every model they made landed in the engine's cache, checked, as if run here.
    made = {n.model_id for n in on_ray.footprint if n.status == "ok"} - {on_ray.footprint[0].model_id}
    assert len(_runs(cluster.caches / f"{hidden.name}-ray")) == len(made)
    # The data file went into Ray's object store once for the whole search, not once per trial.
    assert executors.RAY_TRANSFER["data_out"] == (hidden / "calib.npz").stat().st_size


def test_a_second_machine_is_served_from_the_remote_cache(tmp_path: Path, cluster: Cluster, s3: S3Server) -> None:
    remote = _remote(s3, f"{tmp_path.name}/shared")
    first = olive.run(_workflow(tmp_path, cluster, "machine-a", _ray(cluster), remote_cache=remote))
    assert ran_passes(cluster.run_log)
    cluster.run_log.write_text("")
    # Another machine: a fresh local cache, the same bucket.
    second = olive.run(_workflow(tmp_path, cluster, "machine-b", None, remote_cache=remote))
    assert ran_passes(cluster.run_log) == []  # no pass work at all
    assert footprint_content(second) == footprint_content(first)
    ok = [n for n in second.footprint[1:] if n.status == "ok"]
    assert ok and all(n.cached for n in ok)
    evaluated = [n for n in ok if "evaluate" in n.timings]
    assert evaluated and all(n.timings["evaluation_cached"] == 1.0 for n in evaluated)
    assert len(_runs(cluster.caches / f"{tmp_path.name}-machine-b")) == len(
        _runs(cluster.caches / f"{tmp_path.name}-machine-a")
    )
    # Credentials never reach what the runs write: outputs, local caches.
    places = [tmp_path / "out-machine-b", cluster.caches / f"{tmp_path.name}-machine-b"]
    written = b"".join(p.read_bytes() for place in places for p in place.rglob("*") if p.is_file())
    assert CREDENTIALS["AWS_SECRET_ACCESS_KEY"].encode() not in written
    assert CREDENTIALS["AWS_ACCESS_KEY_ID"].encode() not in written


def test_a_corrupted_remote_object_is_recomputed(
    tmp_path: Path, cluster: Cluster, s3: S3Server, caplog: pytest.LogCaptureFixture
) -> None:
    prefix = f"{tmp_path.name}/corrupt"
    remote = _remote(s3, prefix)
    first = olive.run(_workflow(tmp_path, cluster, "a", None, remote_cache=remote))
    client = s3.client()
    blobs = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/blobs/")["Contents"]]
    victim = sorted(blobs)[0]
    body = bytearray(client.get_object(Bucket=BUCKET, Key=victim)["Body"].read())
    body[len(body) // 2] ^= 0xFF  # same size, other bytes: only the digest tells
    client.put_object(Bucket=BUCKET, Key=victim, Body=bytes(body))
    cluster.run_log.write_text("")
    with caplog.at_level(logging.WARNING):
        second = olive.run(_workflow(tmp_path, cluster, "b", None, remote_cache=remote))
    assert footprint_content(second) == footprint_content(first)
    assert 1 <= len(ran_passes(cluster.run_log)) < len([n for n in first.footprint if n.status == "ok"])
    assert any("remote cache object" in r.getMessage() and "is corrupt" in r.getMessage() for r in caplog.records)
    # The recomputed run replaced the bad object: a third machine gets it sound, with no pass work.
    cluster.run_log.write_text("")
    third = olive.run(_workflow(tmp_path, cluster, "c", None, remote_cache=remote))
    assert footprint_content(third) == footprint_content(first)
    assert ran_passes(cluster.run_log) == []


@pytest.mark.parametrize("executor", [None, {"type": "process", "max_workers": 2}], ids=["sequential", "process"])
def test_storage_stopped_mid_run_finishes_from_local_work(
    tmp_path: Path,
    cluster: Cluster,
    s3: S3Server,
    executor: dict | None,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    remote = _remote(s3, f"{tmp_path.name}/outage")
    reference = olive.run(_workflow(tmp_path, cluster, "reference", None))
    cluster.run_log.write_text("")

    def stop_after_two_runs() -> None:
        deadline = time.monotonic() + 120
        while len(ran_passes(cluster.run_log)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        s3.stop()

    stopper = threading.Thread(target=stop_after_two_runs)
    stopper.start()
    try:
        with caplog.at_level(logging.WARNING):
            output = olive.run(_workflow(tmp_path, cluster, "outage", executor, remote_cache=remote))
    finally:
        stopper.join()
        s3.start()  # the bucket is gone with moto's memory; later tests make their own prefixes
        s3.client().create_bucket(Bucket=BUCKET)
    assert footprint_content(output) == footprint_content(reference)
    unreachable = [r for r in caplog.records if "is unreachable" in r.getMessage()]
    assert len(unreachable) == 1, [r.getMessage() for r in unreachable]
    assert CREDENTIALS["AWS_SECRET_ACCESS_KEY"] not in unreachable[0].getMessage()
    # One warning for the run: worker processes that found the storage gone tell the engine instead of warning.
    assert capfd.readouterr().err.count("is unreachable") <= 1
    # Nothing lost: every model of the run is in the local cache.
    made = {n.model_id for n in output.footprint if n.status == "ok"} - {output.footprint[0].model_id}
    assert len(_runs(cluster.caches / f"{tmp_path.name}-outage")) == len(made)


def test_a_data_file_too_large_to_ship_fails_naming_it(
    tmp_path: Path, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from olive.engine import transfer

    # The data lies in the folder the second node sees as an empty tmpfs, and is over the limit of what is shipped:
    # only the head's workers can read it.
    hidden = cluster.caches / f"{tmp_path.name}-data"
    hidden.mkdir()
    workflow = _workflow(hidden, cluster, "unreadable", _ray(cluster))
    data = hidden / "calib.npz"
    monkeypatch.setattr(transfer, "DATA_LIMIT", data.stat().st_size - 1)
    output = olive.run(workflow)
    failed = [n for n in output.footprint if n.status == "failed"]
    nodes = [json.loads(line).get("node") for line in cluster.run_log.read_text().splitlines()]
    assert failed, f"every trial ran on the head node; the second node was never asked (runs on: {nodes})"
    errors = [n.error for n in failed]
    assert all(str(data) in e and "cannot read" in e and "over the" in e for e in errors), errors


def test_cache_info_and_clean_work_on_the_remote(tmp_path: Path, cluster: Cluster, s3: S3Server) -> None:
    from click.testing import CliRunner

    from olive.cli.main import cli

    remote = _remote(s3, f"{tmp_path.name}/cli")
    olive.run(_workflow(tmp_path, cluster, "cli", None, remote_cache=remote))
    client = s3.client()
    client.put_object(Bucket=BUCKET, Key=f"{tmp_path.name}/cli/notes.txt", Body=b"the team's own file")
    info = CliRunner().invoke(cli, ["cache", "info", "--remote", remote, "--json"])
    assert info.exit_code == 0, info.output
    listed = json.loads(info.output)
    assert listed["is_olive_cache"] and listed["runs"] > 0 and listed["evaluations"] > 0 and listed["blobs"] > 0
    clean = CliRunner().invoke(cli, ["cache", "clean", "--remote", remote])
    assert clean.exit_code == 0, clean.output
    left = [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=f"{tmp_path.name}/cli/").get("Contents", [])]
    assert left == [f"{tmp_path.name}/cli/notes.txt"]  # only what the cache wrote went
    again = CliRunner().invoke(cli, ["cache", "clean", "--remote", remote])
    assert again.exit_code == 1 and "not an Olive remote cache" in again.output


# Last: the second node it kills is started again, but Ray takes a while to forget the old one.
def test_a_worker_node_killed_mid_trial_is_retried(tmp_path: Path, cluster: Cluster) -> None:
    slow = {"type": "SlowOnNode2", "marker": searched(None, "prune-me", "b"), "flag_dir": str(cluster.flags)}
    reference_workflow = _workflow(tmp_path, cluster, "reference", None)
    reference_workflow["passes"]["add"] = slow
    reference = olive.run(reference_workflow)
    workflow = _workflow(tmp_path, cluster, "killed", _ray(cluster))
    workflow["passes"]["add"] = slow

    def kill_node2_once_busy() -> None:
        flag = cluster.flags / "node2-busy"
        deadline = time.monotonic() + 120
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.stop_node2()

    killer = threading.Thread(target=kill_node2_once_busy)
    killer.start()
    try:
        output = olive.run(workflow)
    finally:
        killer.join()
        cluster.start_node2()
    assert (cluster.flags / "node2-busy").exists()
    assert footprint_content(output) == footprint_content(reference)
    cluster.wait_nodes(2)
