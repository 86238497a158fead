"""Property test: `olive run` on mutated workflows never gives a traceback, a hang or a stray file.

Valid workflows are mutated as a hostile user or a careless script would: values dropped, retyped or replaced
with garbage at any depth, hostile strings (NUL, lone surrogates, names over 255 bytes, `..`, symlink loops,
system folders), huge and non-finite numbers, unknown and duplicate keys, deep nesting; written as JSON or YAML.

- The bulk goes through the CLI's error path in this process (``olive run --dry-run`` with click's runner):
  exit 0 or 2 (1 only for a run-time failure), exit 2 in one ``Error:`` line, nothing created.
- A sample runs for real through the ``olive`` command in a subprocess with a timeout: exit 0, 1 or 2, no
  traceback, nothing created or deleted outside the workflow's ``output_dir`` and ``cache_dir``, and exit 0 only
  with a model in ``output_dir`` that onnxruntime loads.

The seed is drawn per session and printed with any failure; replay with ``OLIVE_FUZZ_SEED=<seed>`` (and
``OLIVE_FUZZ_EXAMPLES`` / ``OLIVE_FUZZ_RUNS`` to change the number of in-process / subprocess examples).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import random
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from engine_support import agreement_metric, searched, size_metric, write_calibration, write_mlp
from hypothesis import HealthCheck, event, given, note, seed, settings
from hypothesis import strategies as st

from olive.cli.main import cli
from olive.testing.processes import StalledProcessError, run_watched

TESTS_DIR = Path(__file__).parent
SEED = int(os.environ.get("OLIVE_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
EXAMPLES = int(os.environ.get("OLIVE_FUZZ_EXAMPLES", "1000"))
RUNS = int(os.environ.get("OLIVE_FUZZ_RUNS", "24"))
# A hang is judged by work, not by wall time, which a busy machine stretches: one in-process validation may use
# this many seconds of CPU; a real run may go this long without a sign of progress (output, or a file written
# under its folder) before it counts as a hang.
VALIDATION_CPU_LIMIT = 20
RUN_STALL_LIMIT = 120
REPLAY = f"fuzz seed {SEED}: replay with OLIVE_FUZZ_SEED={SEED} pytest tests/test_fuzz_workflows.py"

pytestmark = pytest.mark.usefixtures("engine_registry")


# ------------------------------------------------------------------------------------------------ the bases


def _full(root: Path) -> dict:
    """Systems, a data config, an evaluator with a goal, a joint search over two passes."""
    return {
        "workflow_id": "fuzz",
        "input_model": {"type": "ONNXModel", "config": {"model_path": "model/model.onnx"}},
        "systems": {
            "local": {
                "type": "LocalSystem",
                "accelerators": [{"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}],
            }
        },
        "target": "local",
        "data_configs": [
            {
                "name": "calib",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": "calib.npz", "max_samples": 4},
                "dataloader_config": {"batch_size": 2},
            }
        ],
        "evaluators": {
            "common": {
                "metrics": [
                    size_metric(),
                    agreement_metric(0.9),
                    {
                        "name": "latency",
                        "type": "latency",
                        "sub_types": [{"name": "avg"}],
                        "user_config": {
                            "warmup_num": 1,
                            "repeat_test_num": 2,
                            "inference_settings": {"session_options": {"intra_op_num_threads": 1}},
                        },
                    },
                ]
            }
        },
        "evaluator": "common",
        "passes": {
            "add": {"type": "AddMatMuls", "config": {"n": 1, "marker": searched("a", "b")}},
            "scale": {
                "type": "ScaleOutput",
                "truncate": searched(False, True),
                "scale": {
                    "olive_parameter_type": "SearchParameter",
                    "type": "Conditional",
                    "parents": ["truncate"],
                    "support": [{"key": [False], "value": [1.0, 2.0]}],
                    "default": [1.0],
                },
            },
        },
        "search_strategy": {"execution_order": "joint", "sampler": "sequential", "max_samples": 2, "seed": 0},
        "cache_dir": "cache",
        "output_dir": "out",
    }


def _small(root: Path) -> dict:
    """One pass, flat engine keys, the older single-sub-type metric form."""
    return {
        "input_model": {
            "type": "ONNXModel",
            "model_path": "model",
            "inference_settings": {"execution_provider": ["CPUExecutionProvider"], "provider_options": [{}]},
        },
        "passes": {"add": {"type": "AddMatMuls", "n": 2}},
        "evaluators": {
            "e": {"metrics": [{"name": "size", "type": "size_on_disk", "sub_type": "bytes", "priority": 1}]}
        },
        "evaluator": "e",
        "clean_cache": False,
        "cache_dir": "cache",
        "output_dir": "out",
    }


BASES = {"full": _full, "small": _small}


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files every example's folder starts with: the input model and its calibration data."""
    root = tmp_path_factory.mktemp("fuzz-fixtures")
    write_mlp(root / "model")
    write_calibration(root / "calib.npz", rows=4)
    return root


@contextlib.contextmanager
def _example_folder(fixtures: Path) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ex-", dir=fixtures.parent))
    try:
        shutil.copytree(fixtures / "model", folder / "model")
        shutil.copy(fixtures / "calib.npz", folder / "calib.npz")
        (folder / "loop").symlink_to(folder / "loop")
        (folder / "home").mkdir()
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------------------------------------ mutations

HOSTILE_STRINGS = [
    "",
    " ",
    "x",
    "a" * 300,
    "é" * 200,
    "d/" * 2100,
    "a\0b",
    "model\udc80.onnx",
    "\ud800",
    "../../../../../etc/passwd",
    "..",
    "/",
    "~",
    "~/olive-fuzz",
    "/dev/null",
    "/proc/self/status",
    "loop",
    "loop/model.onnx",
    "model",
    "model/model.onnx",
    "calib.npz",
    ".",
    "C:\\Windows",
    "line\nbreak",
    "\x1b[31mred",
    "💥",
    "NaN",
    "null",
    "{}",
    "%s%n",
    "${HOME}",
    "CPUExecutionProvider",
    "ORT_PARALLEL",
    "joint",
    "tpe",
    "threshold",
    "AddMatMuls",
    "OLIVE_INVALID_PARAM_VALUE",
]
HOSTILE_NUMBERS = [
    0,
    -1,
    1,
    2,
    3,
    64,
    65,
    255,
    2**31,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    10**30,
    10**400,
    0.5,
    -0.0,
    1e-320,
    1e30,
    1e308,
    math.nan,
    math.inf,
    -math.inf,
    True,
    False,
]
JUNK = st.one_of(
    st.sampled_from(HOSTILE_STRINGS),
    st.sampled_from(HOSTILE_NUMBERS),
    st.sampled_from([None, [], {}, [1, "a"], {"q": 1}, [[1, 2]], {"type": "x"}, [None], ["a"] * 300]),
    st.text(max_size=12),
    st.integers(),
    st.floats(),
    st.recursive(st.none() | st.integers(-3, 3) | st.text(max_size=3), lambda c: st.lists(c, max_size=3), max_leaves=6),
)
KEYS = st.one_of(
    st.sampled_from(
        [
            "colour",
            "n",
            "type",
            "config",
            "passes",
            "sampler",
            "Config",
            "",
            "\0",
            "k" * 300,
            "key\udc80",
            "model_path",
            "onnx_file_name",
            "batch_size",
            "max_samples",
            "execution_provider",
            "session_options",
            "inference_settings",
            "intra_op_num_threads",
            "enable_profiling",
            "optimized_model_filepath",
            "user_script",
            "data_config",
            "goal",
            "priority",
            "metric_config",
            "backend",
            "engine",
            "search_algorithm",
            "output_dir",
        ]
    ),
    st.text(max_size=8),
)


# Values a careful user might well write: the real runs start from these more often, so more of them get past
# validation and exercise passes, the cache, evaluation and the outputs.
PLAUSIBLE = st.one_of(
    st.integers(-1, 5),
    st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, 1e-3, True, False, None, "", "a", "b", "out2", "cache2", "model"]),
    st.sampled_from(["avg", "p50", "cosine_min", "threshold", "random", "tpe", "pass-by-pass", "ORT_PARALLEL"]),
)


class _Duplicated:
    """An object written with one key twice (the second occurrence holds ``value``)."""

    def __init__(self, data: dict, key: str, value: Any):
        self.data, self.key, self.value = data, key, value


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_paths(item, (*prefix, i)))
    return found


def _at(config: Any, path: tuple) -> Any:
    for part in path:
        config = config[part]
    return config


def _mutate(config: dict, path: tuple, op: str, junk: Any, key: str) -> dict:
    parent: Any = config
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    target = parent[last]
    if op == "replace":
        parent[last] = junk
    elif op == "delete":
        del parent[last]
    elif op == "add_key":
        if isinstance(target, dict):
            target[key] = junk
        elif isinstance(target, list):
            target.append(junk)
        else:
            parent[last] = {key: junk}
    elif op == "retype":
        parent[last] = [target] if not isinstance(target, list) else {"items": target}
    elif op == "stringify":
        parent[last] = json.dumps(target)
    elif op == "nest":
        for _ in range(70):
            target = [target]
        parent[last] = target
    elif op == "duplicate" and isinstance(target, dict) and target:
        parent[last] = _Duplicated(target, next(iter(target)), junk)
    return config


def _dump(value: Any) -> str:
    """JSON text, with NaN/Infinity as Python writes them and duplicated keys written twice."""
    if isinstance(value, _Duplicated):
        pairs = [*value.data.items(), (value.key, value.value)]
        return "{" + ", ".join(f"{json.dumps(k)}: {_dump(v)}" for k, v in pairs) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {_dump(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dump(v) for v in value) + "]"
    return json.dumps(value)


def _has_duplicates(value: Any) -> bool:
    if isinstance(value, _Duplicated):
        return True
    if isinstance(value, dict):
        return any(_has_duplicates(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_duplicates(v) for v in value)
    return False


@st.composite
def mutated_workflows(draw: st.DrawFn, plausible: bool = False) -> tuple[str, str, dict]:
    """``(file name, text, config)`` of a base workflow after one to three mutations (with ``plausible``: one,
    of a value a careful user might write)."""
    base = draw(st.sampled_from(sorted(BASES)), label="base")
    config = copy.deepcopy(BASES[base](Path()))
    ops = ["replace", "replace", "delete"] if plausible else ["replace", "replace", "delete", "add_key", "retype"]
    ops += [] if plausible else ["stringify", "nest", "duplicate"]
    for _ in range(draw(st.integers(1, 1 if plausible else 3), label="mutations")):
        paths = _paths(config)
        if plausible:  # a value changed or left out, the structure kept
            paths = [p for p in paths if not isinstance(_at(config, p), dict | list)]
        if not paths:
            break
        path = draw(st.sampled_from(paths), label="path")
        op = draw(st.sampled_from(ops), label="op")
        # sampled_from hands out the same objects each time: mutate copies only.
        junk = copy.deepcopy(draw(PLAUSIBLE if plausible else JUNK, label="junk"))
        config = _mutate(config, path, op, junk, draw(KEYS, label="key"))
        if _has_duplicates(config):
            break  # written as text from here on
    if not _has_duplicates(config) and draw(st.booleans(), label="yaml"):
        try:
            return "wf.yaml", yaml.safe_dump(config, allow_unicode=True), config
        except (yaml.YAMLError, UnicodeError, RecursionError):
            pass
    return "wf.json", _dump(config), config


# ------------------------------------------------------------------------------------------------ checks


@contextlib.contextmanager
def _cpu_time_limit(seconds: int, what: str) -> Iterator[None]:
    """A hang is CPU time spent in a loop; the profiling timer counts it, not the time other processes take."""

    def hang(signum: int, frame: Any) -> None:
        raise TimeoutError(f"{what} used over {seconds} s of CPU (a hang)")

    previous = signal.signal(signal.SIGPROF, hang)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


# `import onnxruntime` keeps a device id of its own under the home folder (not Olive's doing; onnxruntime skips
# it when ORT_DISABLE_TELEMETRY=1 is set).
_ONNXRUNTIME_OWN = Path("home/.cache/Microsoft/DeveloperTools/.onnxruntime")


def _snapshot(folder: Path) -> dict[str, tuple]:
    """Every path under ``folder``: a file's mode, size and mtime; a folder's mode (its entries speak for it)."""
    found = {}
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if rel == _ONNXRUNTIME_OWN or rel in _ONNXRUNTIME_OWN.parents or _ONNXRUNTIME_OWN in rel.parents:
            continue
        info = path.lstat()
        found[str(rel)] = (
            (info.st_mode,)
            if path.is_dir() and not path.is_symlink()
            else (
                info.st_mode,
                info.st_size,
                info.st_mtime_ns,
            )
        )
    return found


def _allowed_roots(config: Any, folder: Path) -> list[Path]:
    """Where the workflow may write: its cache_dir and output_dir as it names them (their defaults otherwise)."""
    roots = []
    flat = config if isinstance(config, dict) else {}
    engine = flat.get("engine") if isinstance(flat.get("engine"), dict) else {}
    for key, default in (("cache_dir", ".olive-cache"), ("output_dir", "output")):
        value = flat.get(key, engine.get(key, default))
        if isinstance(value, str) and value and "\0" not in value:
            with contextlib.suppress(ValueError, OSError, RuntimeError):
                path = Path(value.replace("~", str(folder / "home"), 1) if value.startswith("~") else value)
                roots.append(Path(os.path.normpath(folder / path)))
    return roots


def _outside(changed: set[str], folder: Path, roots: list[Path]) -> list[str]:
    stray = []
    for rel in changed:
        path = folder / rel
        if not any(path == root or root in path.parents for root in roots):
            stray.append(rel)
    return sorted(stray)


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    return lines[0]


# ------------------------------------------------------------------------------------------------ the tests


@seed(SEED)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(workflow=mutated_workflows())
def test_validation_of_mutated_workflows_is_exit_0_or_2_in_one_line_and_creates_nothing(
    fixtures: Path, workflow: tuple[str, str, dict]
) -> None:
    name, text, _ = workflow
    note(REPLAY)
    with _example_folder(fixtures) as folder:
        (folder / name).write_text(text, encoding="utf-8", errors="surrogatepass")
        before = _snapshot(folder)
        with _cpu_time_limit(VALIDATION_CPU_LIMIT, "validation"):
            result = CliRunner().invoke(
                cli, ["run", str(folder / name), "--dry-run"], env={"HOME": str(folder / "home")}
            )
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"{REPLAY}\nan exception escaped: {result.exception!r}") from result.exception
        assert "Traceback" not in result.output, REPLAY
        assert result.exit_code in (0, 1, 2), (REPLAY, result.output)
        event(f"exit {result.exit_code}")
        if result.exit_code == 2:
            event("error at " + _one_error_line(result.stderr).split(":")[1].split(".")[0].split("[")[0].strip())
        after = _snapshot(folder)
        assert after == before, (REPLAY, sorted(set(after) ^ set(before)))


_CLI = (
    "import sys; sys.path.insert(0, sys.argv[1]);"
    "from engine_support import make_registry;"
    "from olive.plugins.registry import set_registry; set_registry(make_registry());"
    "from olive.cli.main import main; main(sys.argv[2:])"
)


@seed(SEED)
@settings(
    max_examples=RUNS,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(workflow=st.sampled_from([True, True, True, False]).flatmap(lambda plausible: mutated_workflows(plausible)))
def test_real_runs_of_mutated_workflows_give_no_traceback_no_hang_and_no_stray_files(
    fixtures: Path, workflow: tuple[str, str, dict]
) -> None:
    name, text, config = workflow
    note(REPLAY)
    with _example_folder(fixtures) as folder:
        (folder / name).write_text(text, encoding="utf-8", errors="surrogatepass")
        before = _snapshot(folder)
        try:
            proc = run_watched(
                [sys.executable, "-c", _CLI, str(TESTS_DIR), "run", str(folder / name)],
                cwd=folder / "home",
                env={**os.environ, "HOME": str(folder / "home"), "PYTHONWARNINGS": "ignore", "COLUMNS": "100"},
                stalled_after=RUN_STALL_LIMIT,
                watch=[folder],
            )
        except StalledProcessError as exc:
            raise AssertionError(f"{REPLAY}\nolive run hung: {exc}") from exc
        report = f"{REPLAY}\nexit {proc.returncode}\n{proc.stderr[-3000:]}"
        assert "Traceback (most recent call last)" not in proc.stderr, report
        assert proc.returncode in (0, 1, 2), report
        event(f"exit {proc.returncode}")
        if proc.returncode == 2:
            _one_error_line(proc.stderr)
        after = _snapshot(folder)
        changed = {rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)}
        stray = _outside(changed, folder, _allowed_roots(config, folder))
        assert not stray, f"{report}\ncreated, changed or deleted outside output_dir/cache_dir: {stray[:10]}"
        if proc.returncode == 0:
            import onnxruntime as ort

            (model,) = [
                root / "model.onnx" for root in _allowed_roots(config, folder) if (root / "model.onnx").is_file()
            ]
            ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])


def test_the_bases_run_and_each_mutation_kind_is_exercised(fixtures: Path) -> None:
    """The fuzzing starts from workflows that work, and every mutation kind writes something parsable."""
    for make in BASES.values():
        with _example_folder(fixtures) as folder:
            (folder / "wf.json").write_text(json.dumps(make(folder)))
            proc = run_watched(
                [sys.executable, "-c", _CLI, str(TESTS_DIR), "run", str(folder / "wf.json")],
                stalled_after=RUN_STALL_LIMIT,
                watch=[folder],
            )
            assert proc.returncode == 0, proc.stderr
            assert (folder / "out" / "model.onnx").is_file()
    config = _full(Path())
    for op in ("replace", "delete", "add_key", "retype", "stringify", "nest", "duplicate"):
        text = _dump(_mutate(copy.deepcopy(config), ("passes", "add"), op, "junk", "k"))
        assert isinstance(json.loads(text), dict), op
