"""The cache: reuse across runs, what invalidates an entry, atomic writes, kills and concurrent runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from engine_support import base_workflow, ran_passes, wait_for_runs, write_mlp

import olive
from olive.cache.store import CacheStore, hash_model
from olive.model.handler import ONNXModelHandler

TESTS_DIR = Path(__file__).parent

pytestmark = pytest.mark.usefixtures("engine_registry")


def _two_pass_workflow(tmp_path: Path, scale: float = 2.0, **extra) -> dict:
    return base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls", "n": 1}, "scale": {"type": "ScaleOutput", "scale": scale}},
        **extra,
    )


def test_a_second_identical_run_does_no_pass_work_and_gives_the_same_model(tmp_path: Path, run_log: Path) -> None:
    data = _two_pass_workflow(tmp_path, search_strategy={"execution_order": "joint"})
    data["passes"]["add"] = {"type": "AddMatMuls"}
    first = olive.run(data)
    first_model = (tmp_path / "out" / "model.onnx").read_bytes()
    # AddMatMuls: 3 points, each followed by ScaleOutput with truncate searched (scale is pinned): 3 + 6
    assert len(ran_passes(run_log)) == 9
    second = olive.run(data)
    assert len(ran_passes(run_log)) == 9
    runs = [n for n in second.footprint if n.pass_key]
    assert len(runs) == 9 and all(n.cached and n.timings["run"] == 0.0 for n in runs)
    assert second.best.model_id == first.best.model_id
    assert (tmp_path / "out" / "model.onnx").read_bytes() == first_model
    history = (tmp_path / "out" / "run_history.txt").read_text()
    assert history.count("\tyes\t") == 9


def test_a_changed_pass_config_reruns_only_that_pass_and_what_follows(tmp_path: Path, run_log: Path) -> None:
    olive.run(_two_pass_workflow(tmp_path, scale=2.0))
    assert [name for name, _ in ran_passes(run_log)] == ["AddMatMuls", "ScaleOutput"]
    output = olive.run(_two_pass_workflow(tmp_path, scale=3.0))
    assert [name for name, _ in ran_passes(run_log)] == ["AddMatMuls", "ScaleOutput", "ScaleOutput"]
    assert [n.cached for n in output.footprint[1:]] == [True, False]
    changed_first = _two_pass_workflow(tmp_path, scale=3.0)
    changed_first["passes"]["add"]["n"] = 2
    olive.run(changed_first)
    assert [name for name, _ in ran_passes(run_log)][3:] == ["AddMatMuls", "ScaleOutput"]


def test_the_key_follows_the_input_model_bytes_not_its_path(tmp_path: Path, run_log: Path) -> None:
    olive.run(_two_pass_workflow(tmp_path))
    assert len(ran_passes(run_log)) == 2
    # Same bytes in another place: reused.
    copy = write_mlp(tmp_path / "elsewhere")
    data = _two_pass_workflow(tmp_path)
    data["input_model"]["model_path"] = str(copy)
    olive.run(data)
    assert len(ran_passes(run_log)) == 2
    # Different bytes under the original path: rerun.
    from olive.testing.models import mlp_model, save_model

    data = _two_pass_workflow(tmp_path)  # (writes the seed-0 model again)
    save_model(mlp_model(seed=1), tmp_path / "input")
    olive.run(data)
    assert len(ran_passes(run_log)) == 4


def test_the_user_script_is_keyed_by_content(tmp_path: Path, run_log: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("VALUE = 1\n")
    olive.run(_two_pass_workflow(tmp_path, user_script=str(script)))
    olive.run(_two_pass_workflow(tmp_path, user_script=str(script)))
    assert len(ran_passes(run_log)) == 2
    script.write_text("VALUE = 2\n")
    olive.run(_two_pass_workflow(tmp_path, user_script=str(script)))
    assert len(ran_passes(run_log)) == 4


def test_external_data_is_part_of_the_model_hash(tmp_path: Path) -> None:
    import onnx

    from olive.testing.models import mlp_model

    folder = tmp_path / "m"
    folder.mkdir()
    onnx.save_model(
        mlp_model(), str(folder / "model.onnx"), save_as_external_data=True, location="w.bin", size_threshold=0
    )
    before = hash_model(ONNXModelHandler(str(folder / "model.onnx")))
    data = bytearray((folder / "w.bin").read_bytes())
    data[0] ^= 0xFF
    (folder / "w.bin").write_bytes(bytes(data))
    os.utime(folder / "w.bin", ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert hash_model(ONNXModelHandler(str(folder / "model.onnx"))) != before


def test_a_failed_run_leaves_nothing_in_the_cache(tmp_path: Path) -> None:
    store = CacheStore(tmp_path / "c")
    with pytest.raises(RuntimeError), store.new_run("ab" * 32) as tmp:
        (tmp / "run.json").write_text("{}")
        raise RuntimeError("pass blew up")
    assert store.get_run("ab" * 32) is None
    assert not list((tmp_path / "c" / "tmp").iterdir())


def _subprocess_run(config: Path, env: dict[str, str]) -> subprocess.Popen:
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from engine_support import make_registry;"
        "from olive.plugins.registry import set_registry; set_registry(make_registry());"
        "from olive.cli.main import main; main(sys.argv[2:])"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, str(TESTS_DIR), "run", "--config", str(config)],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigkill_mid_run_then_rerun_reuses_finished_pass_runs(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"first": {"type": "AddMatMuls", "n": 1}, "slow": {"type": "AddMatMuls", "n": 1, "marker": "slow"}},
    )
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(data))
    log = tmp_path / "runs.log"
    proc = _subprocess_run(config, {"OLIVE_TEST_RUN_LOG": str(log), "OLIVE_TEST_SLEEP": "slow:60"})
    try:
        # The slow pass logs (after writing its model, before sleeping): the first pass is finished by then.
        wait_for_runs(proc, log, 2, "the run did not reach the slow pass")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    store = CacheStore(tmp_path / "cache")
    entries = list((tmp_path / "cache" / "runs").glob("*/*"))
    assert len(entries) == 1 and store.get_run(entries[0].name)["config"]["marker"] is None
    assert len(list((tmp_path / "cache" / "tmp").iterdir())) == 1  # the killed run's half-written folder

    rerun = _subprocess_run(config, {"OLIVE_TEST_RUN_LOG": str(log)})
    _, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err
    assert [c["marker"] for _, c in ran_passes(log)] == [None, "slow", "slow"]
    assert not list((tmp_path / "cache" / "tmp").iterdir())
    assert len(list((tmp_path / "cache" / "runs").glob("*/*"))) == 2


def test_two_concurrent_runs_share_one_cache_safely(tmp_path: Path) -> None:
    data = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1, "marker": "slow"}})
    procs = []
    for i in range(2):
        config = tmp_path / f"wf{i}.json"
        config.write_text(json.dumps({**data, "output_dir": str(tmp_path / f"out{i}")}))
        procs.append(_subprocess_run(config, {"OLIVE_TEST_SLEEP": "slow:1"}))
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    entries = list((tmp_path / "cache" / "runs").glob("*/*"))
    assert len(entries) == 1
    assert (tmp_path / "out0" / "model.onnx").read_bytes() == (tmp_path / "out1" / "model.onnx").read_bytes()
    assert not list((tmp_path / "cache" / "tmp").iterdir())


def test_a_run_another_process_is_doing_is_waited_for_and_reused(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    data = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1, "marker": "slow"}})
    first_config, second_config = tmp_path / "wf0.json", tmp_path / "wf1.json"
    first_config.write_text(json.dumps({**data, "output_dir": str(tmp_path / "out0")}))
    second_config.write_text(json.dumps({**data, "output_dir": str(tmp_path / "out1")}))
    env = {"OLIVE_TEST_SLEEP": "slow:2", "OLIVE_TEST_RUN_LOG": str(log)}
    first = _subprocess_run(first_config, env)
    wait_for_runs(first, log, 1, "the first run did not reach the pass")  # inside the pass, holding its lock
    second = _subprocess_run(second_config, env)
    for proc in (first, second):
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert len(ran_passes(log)) == 1  # the second waited for the first's entry instead of redoing the run
    assert (tmp_path / "out0" / "model.onnx").read_bytes() == (tmp_path / "out1" / "model.onnx").read_bytes()


def _flocks(path: Path) -> dict[int, str]:
    """``pid -> "holds" | "waits"`` for the flock locks on ``path``, as the kernel lists them in /proc/locks."""
    inode = f":{path.stat().st_ino} "
    found: dict[int, str] = {}
    for line in Path("/proc/locks").read_text().splitlines():
        if " FLOCK " in line and inode in line:
            fields = line.split()
            waiting = fields[1] == "->"
            found[int(fields[5 if waiting else 4])] = "waits" if waiting else "holds"
    return found


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads the kernel's lock table (Linux)")
def test_locks_exclude_across_processes_and_shared_holders_coexist(tmp_path: Path) -> None:
    store = CacheStore(tmp_path / "cache")
    events = tmp_path / "events"
    # Each holder keeps the lock until the test creates its release file, however slowly the processes start on
    # a loaded machine; a fixed hold time would let the first reader leave before the second one got in.
    holder = (
        "import sys, time; from pathlib import Path; from olive.cache.store import CacheStore\n"
        "store, events = CacheStore(sys.argv[1]), Path(sys.argv[2])\n"
        "shared, name = sys.argv[3] == 'shared', sys.argv[4]\n"
        "with events.open('a') as f: f.write(name + '-waiting\\n')\n"
        "with store.lock('host-x', shared=shared):\n"
        "    with events.open('a') as f: f.write(name + '-in\\n')\n"
        "    while not (events.parent / f'release-{name}').exists(): time.sleep(0.01)\n"
        "    with events.open('a') as f: f.write(name + '-out\\n')\n"
    )

    def start(mode: str, name: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", holder, str(store.root), str(events), mode, name])

    def wait_until(done: Any, what: str) -> None:
        deadline = time.monotonic() + 60
        while not done():
            assert time.monotonic() < deadline, f"{what}; events: {events.read_text() if events.exists() else ''}"
            time.sleep(0.02)

    def wait_for(line: str) -> None:
        wait_until(lambda: events.exists() and line in events.read_text().split(), f"no {line}")

    def release(name: str) -> None:
        (tmp_path / f"release-{name}").touch()

    lock_file = store.root / "locks" / "host-x.lock"
    r1 = start("shared", "r1")
    wait_for("r1-in")
    r2 = start("shared", "r2")
    wait_for("r2-in")  # a second shared holder gets in while the first holds it
    assert _flocks(lock_file) == {r1.pid: "holds", r2.pid: "holds"}
    w = start("exclusive", "w")
    # The kernel lists the writer as waiting for the lock: it is blocked, not merely slow to get in.
    wait_until(lambda: _flocks(lock_file).get(w.pid) == "waits", "the writer never waited for the lock")
    assert "w-in" not in events.read_text().split()
    release("r1")
    wait_for("r1-out")
    # r2 still holds it shared, so the writer waits on after r1 left.
    wait_until(lambda: _flocks(lock_file) == {r2.pid: "holds", w.pid: "waits"}, "r1 did not leave the lock")
    assert "w-in" not in events.read_text().split()
    release("r2")
    release("w")
    for proc in (r1, r2, w):
        assert proc.wait(timeout=60) == 0
    lines = events.read_text().split()
    # The exclusive holder got in only after both shared holders left.
    assert lines.index("w-in") > max(lines.index("r1-out"), lines.index("r2-out"))
    assert lines[-1] == "w-out"


def test_the_accelerator_is_in_the_key_only_of_passes_that_depend_on_it(tmp_path: Path, run_log: Path) -> None:
    def run(device: str) -> None:
        data = base_workflow(
            tmp_path,
            passes={"agnostic": {"type": "AddMatMuls", "n": 1}, "aware": {"type": "PerDevice", "n": 1}},
            systems={"sys": {"accelerators": [{"device": device, "execution_providers": ["CPUExecutionProvider"]}]}},
            target="sys",
        )
        olive.run(data)

    run("cpu")
    run("gpu")
    assert [name for name, _ in ran_passes(run_log)] == ["AddMatMuls", "PerDevice", "PerDevice"]


def test_files_a_config_names_are_keyed_by_content(tmp_path: Path, run_log: Path) -> None:
    import numpy as np

    np.savez(tmp_path / "calib.npz", input=np.zeros((2, 16), dtype=np.float32))
    (tmp_path / "table.txt").write_text("a")
    (tmp_path / "script.py").write_text("def f(x):\n    return x\n")
    data = base_workflow(
        tmp_path,
        data_configs=[{"name": "calib", "type": "NpzDataContainer", "load_dataset_config": {"data_path": "calib.npz"}}],
        user_script=str(tmp_path / "script.py"),
        passes={
            "inspect": {
                "type": "Inspect",
                "data_config": "calib",
                "table": str(tmp_path / "table.txt"),
                "transform": "f",
            }
        },
    )
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(data))
    olive.run(config)
    olive.run(config)
    assert len(ran_passes(run_log)) == 1
    np.savez(tmp_path / "calib.npz", input=np.ones((2, 16), dtype=np.float32))
    olive.run(config)
    assert len(ran_passes(run_log)) == 2
    (tmp_path / "table.txt").write_text("b")
    olive.run(config)
    assert len(ran_passes(run_log)) == 3


def test_a_cache_that_cannot_be_written_is_one_error_naming_the_folder(tmp_path: Path) -> None:
    from olive.exceptions import CacheError

    store = CacheStore(tmp_path / "c")
    store.ensure()
    # A file where the cache needs a folder fails the same way a read-only disk does, even for root.
    for sub in ("locks", "tmp", "evals"):
        (tmp_path / "c" / sub).rmdir()
        (tmp_path / "c" / sub).write_text("in the way")
    attempts = {
        "lock": lambda: store.lock("x").__enter__(),
        "new_run": lambda: store.new_run("ab" * 32).__enter__(),
        "put_eval": lambda: store.put_eval("cd" * 32, {}),
    }
    for name, attempt in attempts.items():
        with pytest.raises(CacheError) as info:
            attempt()
        message = str(info.value)
        assert message.startswith(f"cannot write in the cache folder '{tmp_path / 'c'}' ("), (name, message)
        assert message.endswith("; point cache_dir (or --cache-dir) at a writable folder"), (name, message)
