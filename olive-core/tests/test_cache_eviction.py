"""The cache's size limit: least recently used entries go, whole, after a run that wrote new ones; entries a
running workflow holds stay; nothing the cache did not create is touched; ``olive cache info|prune``."""

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
from click.testing import CliRunner
from engine_support import base_workflow, ran_passes, wait_for_runs

import olive
from olive.cache.eviction import entries_size, prune, scan
from olive.cache.holds import read_held, record_path
from olive.cache.size import DEFAULT_MAX_SIZE, MAX_SIZE_ENV, SIZE_FORMS, SizeLimit, parse_size
from olive.cache.store import CacheStore
from olive.cli.main import cli

TESTS_DIR = Path(__file__).parent

pytestmark = pytest.mark.usefixtures("engine_registry", "_default_limit")


@pytest.fixture
def _default_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    # A limit set where the tests run would change what they expect.
    monkeypatch.delenv(MAX_SIZE_ENV, raising=False)


def _workflow(tmp_path: Path, marker: str, **extra: Any) -> dict:
    """Two pass runs whose entries are as big as those of any other marker's (the marker changes only keys; each
    marker scales by its own factor, so that the second run's key differs too)."""
    scale = 2.0 + sum(map(ord, marker)) % 97
    return base_workflow(
        tmp_path,
        passes={
            "add": {"type": "AddMatMuls", "n": 1, "marker": marker},
            "scale": {"type": "ScaleOutput", "scale": scale},
        },
        output_dir=str(tmp_path / f"out-{marker}"),
        **extra,
    )


def _invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def _olive_process(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """``olive ARGS`` in a process of its own, offering the test passes."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from engine_support import make_registry;"
        "from olive.plugins.registry import set_registry; set_registry(make_registry());"
        "from olive.cli.main import main; main(sys.argv[2:])"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, str(TESTS_DIR), *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """``relative path -> (size, mtime_ns)`` of every file and link under ``folder``."""
    found = {}
    for path in folder.rglob("*"):
        info = path.lstat()
        if not path.is_dir() or path.is_symlink():
            found[path.relative_to(folder).as_posix()] = (info.st_size, info.st_mtime_ns)
    return found


def _keys(store: CacheStore) -> set[str]:
    return {entry.key for entry in scan(store)}


# --------------------------------------------------------------------------------------------------
# Sizes and the setting
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("123", 123),
        ("500MB", 500 * 10**6),
        ("2GB", 2 * 10**9),
        ("2 gb", 2 * 10**9),
        ("1.5GiB", int(1.5 * 2**30)),
        ("10k", 10_000),
        ("0", 0),
        (" Unlimited ", None),
    ],
)
def test_sizes_take_bytes_decimal_and_binary_units_and_unlimited(text: str, size: int | None) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "2 gigs", "-1GB", "GB", "1e9", "1,000", "2GBB", "nan"])
def test_anything_else_is_not_a_size(text: str) -> None:
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)


@pytest.mark.parametrize("command", [["cache", "info"], ["cache", "prune"], ["run", "--dry-run", "WF"]])
def test_a_bad_max_size_variable_is_one_error_naming_it_and_the_forms_exit_2(tmp_path: Path, command: list) -> None:
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(_workflow(tmp_path, "a")))
    args = [str(config) if arg == "WF" else arg for arg in command]
    if command[0] == "cache":
        args += ["--cache-dir", str(tmp_path / "cache")]
    result = _invoke(*args, env={MAX_SIZE_ENV: "2 gigs"})
    assert result.exit_code == 2
    assert result.stderr == f"Error: {MAX_SIZE_ENV}: '2 gigs' is not a size; set it to {SIZE_FORMS}\n"
    assert not (tmp_path / "cache").exists()


def test_a_bad_max_size_flag_or_workflow_key_is_exit_2_naming_it(tmp_path: Path) -> None:
    flag = _invoke("cache", "prune", "--cache-dir", str(tmp_path), "--max-size", "lots")
    assert flag.exit_code == 2
    assert flag.stderr.startswith("Error: Invalid value for '--max-size': 'lots' is not a size; use a number of bytes")
    config = tmp_path / "wf.json"
    for value, shown in (("lots", "'lots' is not a size"), (-5, "-5 is not a size"), (True, "expected a size")):
        config.write_text(json.dumps(_workflow(tmp_path, "a", cache_max_size=value)))
        result = _invoke("run", "--dry-run", str(config))
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"Error: cache_max_size: {shown}"), result.stderr
        assert result.stderr.count("\n") == 1


# --------------------------------------------------------------------------------------------------
# Eviction after a run
# --------------------------------------------------------------------------------------------------
def test_a_run_over_the_limit_evicts_the_least_recently_used_and_its_rerun_is_served_from_the_cache(
    tmp_path: Path, run_log: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = CacheStore(tmp_path / "cache")
    olive.run(_workflow(tmp_path, "a"))
    a_keys = _keys(store)
    one_workflow, _ = entries_size(store)
    olive.run(_workflow(tmp_path, "b"))
    b_keys = _keys(store) - a_keys
    assert len(a_keys) == len(b_keys) == 2 and len(ran_passes(run_log)) == 4
    # "a" is used again (all from the cache): now "b" is the least recently used, though written later.
    olive.run(_workflow(tmp_path, "a"))
    assert len(ran_passes(run_log)) == 4

    # Room for two workflows' entries, not three.
    monkeypatch.setenv(MAX_SIZE_ENV, str(int(2.5 * one_workflow)))
    caplog.set_level("INFO", logger="olive.cache.eviction")
    olive.run(_workflow(tmp_path, "c"))
    assert len(ran_passes(run_log)) == 6
    left = _keys(store)
    assert not left & b_keys and a_keys <= left and len(left) == 4
    assert entries_size(store)[0] <= 2.5 * one_workflow
    [message] = [r.getMessage() for r in caplog.records if r.name == "olive.cache.eviction"]
    assert "evicted the 2 least recently used entries (" in message
    assert f"4 entries ({entries_size(store)[0] / 1000:.1f} KB) remain" in message and MAX_SIZE_ENV in message
    assert not list((tmp_path / "cache" / "tmp").iterdir())

    # The latest workflow and the one used before it rerun entirely from the cache; "b" runs again.
    for marker in ("c", "a"):
        output = olive.run(_workflow(tmp_path, marker))
        assert all(node.cached for node in output.footprint if node.pass_key)
    assert len(ran_passes(run_log)) == 6
    olive.run(_workflow(tmp_path, "b"))
    assert len(ran_passes(run_log)) == 8


def test_the_workflow_key_sets_the_limit_and_a_run_that_writes_nothing_evicts_nothing(
    tmp_path: Path, run_log: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = CacheStore(tmp_path / "cache")
    olive.run(_workflow(tmp_path, "a"))
    olive.run(_workflow(tmp_path, "b"))
    assert len(_keys(store)) == 4
    # The workflow's key wins over the variable; a fully cached run writes nothing, so it prunes nothing.
    monkeypatch.setenv(MAX_SIZE_ENV, "unlimited")
    olive.run(_workflow(tmp_path, "b", cache_max_size=0))
    assert len(_keys(store)) == 4
    # One new entry (its second pass is the same run as "b"'s): a limit of 0 leaves only what this run holds.
    before = _keys(store)
    changed = _workflow(tmp_path, "b", cache_max_size=0)
    changed["passes"]["add"]["marker"] = "b2"
    output = olive.run(changed)
    assert [node.cached for node in output.footprint if node.pass_key] == [False, True]
    assert len(ran_passes(run_log)) == 5
    assert len(_keys(store)) == 2
    assert len(before & _keys(store)) == 1
    # Its own entries are over the limit: it says so, naming the setting to raise.
    [warning] = [
        r.getMessage() for r in caplog.records if r.name == "olive.cache.eviction" and r.levelname == "WARNING"
    ]
    assert (
        "over its 0 bytes limit (cache_max_size): the entries of running workflows (this one's too) are kept" in warning
    )


def test_evaluations_are_entries_too_and_go_least_recently_used_first(tmp_path: Path) -> None:
    store = CacheStore(tmp_path / "cache")
    keys = [f"{i:02x}" * 32 for i in range(4)]
    for key in keys:
        store.put_eval(key, {"result": {"m": {"value": 1.0, "priority": 1, "higher_is_better": True}}})
    old = time.time() - 100
    for i, key in enumerate(keys):
        os.utime(store.eval_path(key), (old + i, old + i))
    assert store.get_eval(keys[0], ["m"]) is not None  # a hit: now the most recently used
    size = store.eval_path(keys[0]).stat().st_size
    result = prune(store, SizeLimit(2 * size, "test"))
    assert [entry.key for entry in result.evicted] == keys[1:3]
    assert _keys(store) == {keys[0], keys[3]}
    assert result.summary().startswith(f"evicted the 2 least recently used entries ({2 * size} bytes); 2 entries")


# --------------------------------------------------------------------------------------------------
# What a running workflow holds
# --------------------------------------------------------------------------------------------------
def _held_run(tmp_path: Path, log: Path) -> tuple[subprocess.Popen, set[str], set[str]]:
    """A workflow run in another process, stopped (sleeping) inside its last pass after it reused one cached entry
    and wrote one. Returns the process, the keys of those two entries, and those of an older workflow's two."""
    store = CacheStore(tmp_path / "cache")
    olive.run(_workflow(tmp_path, "old"))
    old = _keys(store)
    olive.run(base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1}}, output_dir=str(tmp_path / "o")))
    passes = {
        "add": {"type": "AddMatMuls", "n": 1},  # cached
        "mid": {"type": "ScaleOutput", "scale": 3.0},  # written by the held run
        "slow": {"type": "AddMatMuls", "marker": "slow"},  # sleeping, its entry not written yet
    }
    config = tmp_path / "held.json"
    config.write_text(json.dumps(base_workflow(tmp_path, passes=passes, output_dir=str(tmp_path / "held-out"))))
    proc = _olive_process(["run", str(config)], {"OLIVE_TEST_SLEEP": "slow:10", "OLIVE_TEST_RUN_LOG": str(log)})
    wait_for_runs(proc, log, 2, "the held run did not reach its slow pass")
    held = _keys(store) - old
    assert len(old) == 2 and len(held) == 2
    return proc, held, old


def test_an_entry_a_concurrently_running_workflow_holds_is_never_evicted(tmp_path: Path) -> None:
    proc, held, _ = _held_run(tmp_path, tmp_path / "held.log")
    store = CacheStore(tmp_path / "cache")
    try:
        result = _invoke("cache", "prune", "--cache-dir", str(store.root), "--max-size", "0")
        assert result.exit_code == 0, result.output
        assert _keys(store) == held
        assert "evicted the 2 least recently used entries" in result.stdout
        assert result.stdout.strip().endswith("(--max-size); kept 2 entries that running workflows use")
    finally:
        _, err = proc.communicate(timeout=120)
    # The held run finished with the entries it was using: its model is delivered, its record is gone.
    assert proc.returncode == 0, err
    assert (tmp_path / "held-out" / "model.onnx").is_file()
    assert not list((store.root / "locks").glob("use-*.lock"))
    assert len(ran_passes(tmp_path / "held.log")) == 2
    # Once the run is over its entries are ordinary ones.
    assert _invoke("cache", "prune", "--cache-dir", str(store.root), "--max-size", "0").exit_code == 0
    assert _keys(store) == set()


def test_a_killed_runs_record_holds_nothing_and_is_removed(tmp_path: Path) -> None:
    proc, _, _ = _held_run(tmp_path, tmp_path / "held.log")
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    store = CacheStore(tmp_path / "cache")
    [record] = (store.root / "locks").glob("use-*.lock")
    result = _invoke("cache", "prune", "--cache-dir", str(store.root), "--max-size", "0")
    assert result.exit_code == 0, result.output
    assert _keys(store) == set() and not record.exists()
    assert "kept" not in result.stdout.splitlines()[-2]
    # The killed run's half-written folder went too: no later run can use it.
    assert not list((store.root / "tmp").iterdir())


# --------------------------------------------------------------------------------------------------
# olive cache info | prune, and what is not the cache's
# --------------------------------------------------------------------------------------------------
def test_cache_info_shows_the_entries_use_against_the_limit(tmp_path: Path) -> None:
    olive.run(_workflow(tmp_path, "a"))
    used, count = entries_size(CacheStore(tmp_path / "cache"))
    assert count == 2
    text = _invoke("cache", "info", "--cache-dir", str(tmp_path / "cache")).stdout
    assert (
        f"limit: 5.0 GB (the default; set {MAX_SIZE_ENV} to change it); entries use {used / 1000:.1f} KB (0%)" in text
    )
    shown = _invoke("cache", "info", "--cache-dir", str(tmp_path / "cache"), env={MAX_SIZE_ENV: "20KB"})
    assert (
        f"limit: 20.0 KB ({MAX_SIZE_ENV}); entries use {used / 1000:.1f} KB ({100 * used / 20000:.0f}%)" in shown.stdout
    )
    info = json.loads(_invoke("cache", "info", "--cache-dir", str(tmp_path / "cache"), "--json").stdout)
    assert (info["entries_bytes"], info["max_size_bytes"], info["max_size_source"]) == (
        used,
        DEFAULT_MAX_SIZE,
        "the default",
    )
    unlimited = _invoke(
        "cache", "info", "--cache-dir", str(tmp_path / "cache"), "--json", env={MAX_SIZE_ENV: "unlimited"}
    )
    assert json.loads(unlimited.stdout)["max_size_bytes"] is None


def test_prune_dry_run_lists_what_would_go_and_deletes_nothing(tmp_path: Path) -> None:
    olive.run(_workflow(tmp_path, "a"))
    olive.run(_workflow(tmp_path, "b"))
    cache = tmp_path / "cache"
    before = _files(cache)
    result = _invoke("cache", "prune", "--cache-dir", str(cache), "--max-size", "1", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 5 and all(line.startswith("  run of ") and "last used" in line for line in lines[:4])
    assert lines[-1].startswith("would evict the 4 least recently used entries (")
    assert lines[-1].endswith("0 entries (0 bytes) would remain, against a limit of 1 bytes (--max-size)")
    assert _files(cache) == before
    # Under the limit: nothing to do, and it says so.
    calm = _invoke("cache", "prune", "--cache-dir", str(cache))
    assert (
        calm.stdout.startswith("nothing to evict; 4 entries (")
        and "against a limit of 5.0 GB (the default)" in calm.stdout
    )
    assert _files(cache) == before


def test_prune_never_touches_what_the_cache_did_not_create(tmp_path: Path) -> None:
    # cache_dir is a project folder: its own files, some named like the cache's, and links out of it.
    project = tmp_path / "project"
    olive.run(base_workflow(project, cache_dir=str(project), output_dir=str(project / "out")))
    outside = tmp_path / "outside"
    (outside / "model").mkdir(parents=True)
    (outside / "model" / "weights.bin").write_bytes(b"\0" * 4096)
    shard = next((project / "runs").iterdir())
    own = {
        "runs/results.csv": b"a,b\n",
        f"runs/{shard.name}/notes.txt": b"mine",
        "evals/zz/" + "ab" * 32 + ".json": b"{}",  # not a shard name
        "data/big.bin": b"\1" * 100_000,  # far over the limit, and not counted against it
    }
    for rel, data in own.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_bytes(data)
    (shard / (shard.name + "c" * 62)).symlink_to(outside / "model")  # an entry's name, but a link
    (project / "evals" / "cd").symlink_to(outside)  # a shard that is a link
    for name in ("cd" * 32 + ".json",):
        (outside / name).write_text("{}")
    outside_before = _files(outside)

    result = _invoke("cache", "prune", "--cache-dir", str(project), "--max-size", "0")
    assert result.exit_code == 0, result.output
    assert "evicted the least recently used entry (" in result.stdout
    assert _keys(CacheStore(project)) == set()
    for rel, data in own.items():
        assert (project / rel).read_bytes() == data
    assert (shard / (shard.name + "c" * 62)).is_symlink() and (project / "evals" / "cd").is_symlink()
    assert _files(outside) == outside_before
    assert (project / "input" / "model.onnx").is_file() and (project / "out" / "model.onnx").is_file()


def test_corrupt_times_records_and_digests_neither_crash_nor_reach_other_files(tmp_path: Path) -> None:
    olive.run(_workflow(tmp_path, "a"))
    olive.run(_workflow(tmp_path, "b"))
    store = CacheStore(tmp_path / "cache")
    entries = sorted(scan(store), key=lambda e: e.key)
    # Last uses far in the past and the future, a record that is not JSON, one that is a link to a user's file.
    os.utime(entries[0].path / "run.json", (0, 0))
    os.utime(entries[1].path / "run.json", (4_000_000_000, 4_000_000_000))
    (entries[2].path / "run.json").write_text("not json")
    mine = tmp_path / "mine.json"
    mine.write_text('{"pass_name": "x"}')
    os.utime(mine, (1_000_000, 1_000_000))
    (entries[3].path / "run.json").unlink()
    (entries[3].path / "run.json").symlink_to(mine)
    # A hold record of garbage no process holds, and digests naming a user's file with a stale or bad signature.
    record_path(store.root / "locks", "f" * 32).write_bytes(b"use run " + b"../" * 30 + b"\nnew eval xyz\n\xff\xfe")
    digests = store.root / "digests" / "ee"
    digests.mkdir(parents=True, exist_ok=True)
    (digests / ("ee" * 32 + ".json")).write_text(json.dumps({"signature": [str(mine), 1, 2, 3, 4], "sha256": "0"}))
    (digests / ("ee" + "1" * 62 + ".json")).write_text(json.dumps({"signature": "/etc/passwd"}))
    (digests / ("ee" + "0" * 62 + ".json")).write_text("[")
    misplaced = digests / ("ef" * 32 + ".json")  # not in its key's shard: not the cache's
    misplaced.write_text("{}")

    result = _invoke("cache", "prune", "--cache-dir", str(store.root), "--max-size", "0")
    assert result.exit_code == 0, result.output
    assert _keys(store) == set()
    assert mine.read_text() == '{"pass_name": "x"}' and mine.stat().st_mtime == 1_000_000
    assert list(digests.iterdir()) == [misplaced] and not list((store.root / "locks").glob("use-*.lock"))
    assert "also removed 0 temp folder(s) of killed runs and 3 stale file digest(s)" in result.stdout
    # The input model's digest is still good: it stays.
    assert list((store.root / "digests").glob("*/*.json"))


def test_entries_a_runs_other_processes_look_up_are_held_for_it(tmp_path: Path) -> None:
    # A search's workers are other processes given the run's session: what they look up is held as the run's.
    store = CacheStore(tmp_path / "cache")
    store.ensure()
    key = "ab" * 32
    worker = (
        "import sys; from olive.cache.store import CacheStore;"
        "store = CacheStore(sys.argv[1]); store.session_id = sys.argv[2];"
        "store.get_run(sys.argv[3]); store.get_eval(sys.argv[3])"
    )
    with store.holding() as hold:
        assert hold is not None and not hold.wrote_new()
        subprocess.run([sys.executable, "-c", worker, str(store.root), store.session_id, key], check=True)
        with store.lock("prune"):
            held = read_held(store.root / "locks", remove_dead=True)
        assert ("run", key) in held and ("eval", key) in held
        store.put_eval("cd" * 32, {"result": {}})
        assert hold.wrote_new()
    # Outside a run nothing is recorded, and the run's record is gone.
    assert store.get_run(key) is None and not list((store.root / "locks").glob("use-*.lock"))
