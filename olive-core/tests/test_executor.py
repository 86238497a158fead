"""Parallel trials on local worker processes: same results as a sequential search, shared cache, crashes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from engine_support import (
    NamesItself,
    base_workflow,
    footprint_content,
    ran_passes,
    search_workflow,
    searched,
    wait_for_runs,
)

import olive
from olive.exceptions import WorkflowConfigError
from olive.plugins.install_hints import install_line

pytestmark = pytest.mark.usefixtures("engine_registry")


def test_process_executor_gives_the_sequential_footprint_and_best(tmp_path: Path, run_log: Path) -> None:
    sequential = olive.run(search_workflow(tmp_path, "seq", None))
    ran_sequential = len(ran_passes(run_log))
    parallel = olive.run(search_workflow(tmp_path, "proc", {"type": "process", "max_workers": 2}))
    assert footprint_content(parallel) == footprint_content(sequential)
    assert parallel.best.model_id == sequential.best.model_id
    assert sum(n.status == "pruned" for n in parallel.footprint) > 0
    assert sum(n.is_candidate for n in parallel.footprint) >= 8
    # Every pass run happened exactly once in the workers too (none redone, none skipped).
    assert len(ran_passes(run_log)) == 2 * ran_sequential
    # The workers, not this process, ran the passes, and the models are in the cache folder.
    assert all(str(tmp_path / "cache-proc") in n.model_path for n in parallel.footprint[1:] if n.status == "ok")
    assert (tmp_path / "out-proc" / "model.onnx").read_bytes() == (tmp_path / "out-seq" / "model.onnx").read_bytes()


def test_limits_pass_by_pass_and_random_match_the_sequential_executor(tmp_path: Path) -> None:
    for name, strategy in {
        "limit": {"max_samples": 5},
        "pbp": {"execution_order": "pass-by-pass"},
        "random": {"sampler": "random", "seed": 3, "max_samples": 4},
    }.items():
        sequential = olive.run(search_workflow(tmp_path, f"{name}-seq", None, **strategy))
        parallel = olive.run(
            search_workflow(tmp_path, f"{name}-proc", {"type": "process", "max_workers": 2}, **strategy)
        )
        assert footprint_content(parallel) == footprint_content(sequential), name
        assert parallel.best.model_id == sequential.best.model_id, name


@pytest.mark.parametrize("executor", [None, {"type": "process", "max_workers": 1, "max_pending": 1}])
def test_a_pass_run_that_failed_is_not_run_again_in_the_search(
    tmp_path: Path, run_log: Path, executor: dict | None
) -> None:
    # Four chains start with the failing AddMatMuls run; one trial at a time, only the first attempts it.
    strategy: dict[str, Any] = {"execution_order": "joint"}
    if executor is not None:
        strategy["executor"] = executor
    workflow = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls", "n": 1, "extra": False, "fail": True}, "scale": {"type": "ScaleOutput"}},
        search_strategy=strategy,
    )
    output = olive.run(workflow)
    assert len(ran_passes(run_log)) == 1
    assert [(n.pass_key, n.status) for n in output.footprint[1:]] == [("add", "failed")]
    assert output.best is None and "AddMatMuls was told to fail" in output.reason


def test_tpe_runs_distinct_points_with_bounded_pending_trials(tmp_path: Path) -> None:
    executor = {"type": "process", "max_workers": 2, "max_pending": 2}
    output = olive.run(search_workflow(tmp_path, "tpe", executor, sampler="tpe", seed=0, max_samples=6))
    chains = [n for n in output.footprint if n.is_candidate]
    assert len(chains) == 6
    assert len({n.model_id for n in chains}) == 6
    assert output.best is not None


def test_concurrent_trials_sharing_a_pass_run_do_it_once(
    tmp_path: Path, run_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both chains start with the same slow AddMatMuls run; two workers reach it at once.
    monkeypatch.setenv("OLIVE_TEST_SLEEP", "slow:1")
    workflow = base_workflow(
        tmp_path,
        passes={
            "add": {"type": "AddMatMuls", "n": 1, "extra": False, "marker": "slow"},
            "scale": {"type": "ScaleOutput"},
        },
        search_strategy={"execution_order": "joint", "executor": {"type": "process", "max_workers": 2}},
    )
    output = olive.run(workflow)
    adds = [config for name, config in ran_passes(run_log) if name == "AddMatMuls"]
    assert len(adds) == 1
    assert len([n for n in output.footprint if n.pass_key == "scale" and n.status == "ok"]) == 4
    assert not list((tmp_path / "cache" / "tmp").iterdir())


def test_a_killed_worker_is_retried_once_then_the_trial_is_recorded_as_failed(tmp_path: Path) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    workflow = base_workflow(
        tmp_path,
        passes={"crash": {"type": "CrashOnce", "flag_dir": str(flags), "marker": searched(None, "once", "always")}},
        search_strategy={"execution_order": "joint", "executor": {"type": "process", "max_workers": 2}},
    )
    workflow["passes"]["crash"]["n"] = searched(0, 1)
    workflow["passes"]["crash"]["extra"] = False
    output = olive.run(workflow)
    by_marker: dict[Any, list] = {}
    for node in output.footprint[1:]:
        marker = node.config.get("marker") if "point" not in node.config else node.config["point"]["crash"]["marker"]
        by_marker.setdefault(marker, []).append(node)
    # Killed once, retried in a new worker: the trial's result is there.
    assert [n.status for n in by_marker["once"]] == ["ok", "ok"]
    # Killed on the retry too: recorded as failed, and the run goes on.
    assert [n.status for n in by_marker["always"]] == ["failed", "failed"]
    assert all("worker process died (signal 9)" in n.error for n in by_marker["always"])
    assert [n.status for n in by_marker[None]] == ["ok", "ok"]
    assert output.best is not None and output.best.config["marker"] in (None, "once")


def test_a_worker_killed_from_outside_mid_trial(tmp_path: Path) -> None:
    """Kill the worker running the slow trial (found through its process) while it runs; the run completes."""
    log = tmp_path / "runs.log"
    config = _parallel_markers(tmp_path, None, "slow", "c", "d")
    script = (
        "import sys, json; sys.path.insert(0, sys.argv[2]); "
        "from engine_support import make_registry; from olive.plugins.registry import use_registry; import olive\n"
        "with use_registry(make_registry()):\n"
        "    out = olive.run(sys.argv[1])\n"
        "print(json.dumps({str((n.config.get('point') or {}).get('add', n.config)['marker']): n.status "
        "for n in out.footprint[1:]}))\n"
    )
    env = {**os.environ, "OLIVE_TEST_RUN_LOG": str(log), "OLIVE_TEST_SLEEP": "slow:30"}
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(config), str(Path(__file__).parent)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The slow run logs after writing its model, then sleeps: its worker is mid-trial.
        wait_for_runs(proc, log, 1, "the slow trial did not start", marker="slow")
        # The run logs the pid of the worker doing it: kill exactly that one, not a worker that merely has
        # a pass run of its own in progress.
        os.kill(_slow_run_pids(log)[-1], signal.SIGKILL)
        # The retry sleeps 30 s again; kill that worker too so the trial is recorded as failed.
        wait_for_runs(proc, log, 2, "the killed trial was not retried", marker="slow")
        os.kill(_slow_run_pids(log)[-1], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    statuses = json.loads(out.strip().splitlines()[-1])
    assert statuses == {"None": "ok", "slow": "failed", "c": "ok", "d": "ok"}


def _parallel_markers(tmp_path: Path, *markers: Any) -> Path:
    """A workflow file searching AddMatMuls over ``markers`` on two worker processes."""
    workflow = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls", "n": 1, "extra": False, "marker": searched(*markers)}},
        search_strategy={"execution_order": "joint", "executor": {"type": "process", "max_workers": 2}},
    )
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(workflow))
    return config


def _sigint_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _slow_run_pids(log: Path) -> list[int]:
    entries = map(json.loads, log.read_text().splitlines())
    return [e["pid"] for e in entries if e["config"]["marker"] == "slow"]


def test_executor_config_errors_name_the_field(tmp_path: Path) -> None:
    for executor, path in [
        ({"type": "threads"}, "search_strategy.executor.type"),
        ({"type": "process", "max_workers": 0}, "search_strategy.executor.max_workers"),
        ({"type": "process", "address": "auto"}, "search_strategy.executor.address"),
        ({"type": "ray", "num_cpus_per_trial": -1}, "search_strategy.executor.num_cpus_per_trial"),
    ]:
        with pytest.raises(WorkflowConfigError, match=path.replace(".", r"\.")):
            olive.run(search_workflow(tmp_path, "bad", executor))
    assert not (tmp_path / "cache-bad" / "runs").exists()


def test_the_ray_executor_without_ray_names_the_extra(tmp_path: Path) -> None:
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(search_workflow(tmp_path, "noray", {"type": "ray"})))
    # A real interpreter in which `import ray` fails, as when the extra is not installed.
    script = (
        "import sys; sys.modules['ray'] = None; sys.path.insert(0, sys.argv.pop(1))\n"
        "from engine_support import make_registry; from olive.plugins.registry import set_registry\n"
        "set_registry(make_registry())\nfrom olive.cli.main import main\nmain()"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(Path(__file__).parent), "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    # The extra, with a line that installs it from where olive-core came from.
    assert install_line("olive-core", "ray") in result.stderr
    assert "Traceback" not in result.stderr


def test_ctrl_c_stops_the_workers_and_keeps_finished_trials(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    config = _parallel_markers(tmp_path, None, "c", "slow", "d")
    script = (
        "import sys; sys.path.insert(0, sys.argv.pop(1))\n"
        "from engine_support import make_registry; from olive.plugins.registry import set_registry\n"
        "set_registry(make_registry())\nfrom olive.cli.main import main\nmain()"
    )
    env = {**os.environ, "OLIVE_TEST_RUN_LOG": str(log), "OLIVE_TEST_SLEEP": "slow:60"}
    # Its own process group, which a terminal's Ctrl-C signals as a whole (the engine and its workers). SIGINT is
    # handled as in a terminal even when this test runs in a background job, whose children inherit it ignored
    # (Python then leaves it ignored, and the run would go on to the end).
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(Path(__file__).parent), "run", "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_sigint_as_in_a_terminal,
    )
    try:
        wait_for_runs(proc, log, 1, "the slow trial did not start", marker="slow")
        workers = _children(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert workers and not any(Path(f"/proc/{pid}").exists() for pid in workers)
    # The trials that finished before Ctrl-C are in the cache; the next run reuses them. A trial can log its
    # run and be stopped before its entry is committed, so the cache, not the log, says what finished.
    records = [json.loads(p.read_text()) for p in (tmp_path / "cache" / "runs").glob("*/*/run.json")]
    finished = [record["config"]["marker"] for record in records]
    assert finished and "slow" not in finished
    assert set(finished) <= {c["marker"] for _, c in ran_passes(log)}
    log.unlink()
    del env["OLIVE_TEST_SLEEP"]
    rerun = subprocess.run(
        [sys.executable, "-c", script, str(Path(__file__).parent), "run", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(str(c["marker"]) for _, c in ran_passes(log)) == sorted(
        str(m) for m in {None, "c", "slow", "d"} - set(finished)
    )


def test_hooks_fire_in_the_engine_in_the_sequential_order(tmp_path: Path) -> None:
    from test_engine_search import _Recorder

    from olive.plugins.manager import new_plugin_manager, use_plugin_manager

    events = {}
    for name, executor in (("seq", None), ("proc", {"type": "process", "max_workers": 2})):
        recorder = _Recorder()
        manager = new_plugin_manager(entry_points=False)
        manager.register(recorder, "recorder")
        with use_plugin_manager(manager):
            olive.run(search_workflow(tmp_path, f"hooks-{name}", executor, max_samples=6))
        events[name] = recorder.events
    assert events["proc"] == events["seq"]
    assert sum(e[0] == "pass_end" for e in events["proc"]) >= 6


def test_a_spawned_worker_runs_a_pass_under_the_identity_the_engine_resolved(
    tmp_path: Path, engine_registry: Any
) -> None:
    # The spawned worker imports the class by module name; its own registry does not offer it under this name.
    engine_registry.register(NamesItself, name="Renamed", distribution="renamed-dist", version="9.1")
    outputs = {}
    for name, executor in (("seq", None), ("spawn", {"type": "process", "max_workers": 1, "start_method": "spawn"})):
        strategy: dict[str, Any] = {"execution_order": "joint"}
        if executor is not None:
            strategy["executor"] = executor
        workflow = base_workflow(
            tmp_path,
            passes={"add": {"type": "Renamed", "n": searched(0, 1), "extra": False}},
            search_strategy=strategy,
            cache_dir=str(tmp_path / f"cache-{name}"),
        )
        outputs[name] = olive.run(workflow)
    assert footprint_content(outputs["spawn"]) == footprint_content(outputs["seq"])
    for node in outputs["spawn"].footprint[1:]:
        assert (node.pass_name, node.pass_distribution, node.pass_version) == ("Renamed", "renamed-dist", "9.1")
        assert node.model_json["config"]["model_attributes"]["identity"] == ["Renamed", "renamed-dist", "9.1"]
