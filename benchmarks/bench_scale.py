"""Memory and time of each pass as the model grows: 0.1 to 2.2 GB of weights, past protobuf's 2 GB limit.

    python benchmarks/bench_scale.py                                   # every size and pass
    python benchmarks/bench_scale.py --sizes 0.1 1 --passes dynamic-int8 fp16
    python benchmarks/bench_scale.py --quick                           # a 13 MB model (smoke test)
    python benchmarks/bench_scale.py --json out.json --plot benchmarks/scale.png --reruns

Models come from ``olive.testing.models.bert_like_model_files`` (hidden 1024, 16 heads, FFN 4096; the
number of layers sets the size; weights written straight to external data). For each size and pass, three
jobs run, each in a fresh process: the bare pass call (``Pass.run`` in a script), ``olive run`` of a
one-pass workflow (no metrics) and ``olive run-pass``. Then a separate process checks the bare pass's
output: ``onnx.checker.check_model`` on the file (external data included), an onnxruntime session, and
the cosine similarity of its outputs to the fp32 model's on seeded inputs, which must reach the pass's
bound (:data:`PASSES`); an output past 2 GB must hold its weights in external data. A failed check
stops the benchmark with an error.

The search row runs a 4-point search (dynamic int8, ``per_channel`` x ``quant_preprocess``, with an
agreement metric) and, for comparison, each of its 4 points alone as a one-pass workflow with the same
metric; it reports the search's peak against the most expensive single point.

Peak RSS is that of the whole process tree of a job: the largest sum, over the job's process and all its
descendants, of their proportional set sizes (resident pages, shared ones split between the processes
sharing them, so a forked child is not counted twice), sampled every 10 ms from /proc, and never less
than the kernel's exact high-water mark of resident memory of the largest single process (``wait4``'s
``ru_maxrss``). It includes the interpreter and its imports (about 100-250 MB, shown on the row of the
smallest model). Wall time is the
whole process, start to exit; "pass s" is the time ``Pass.run`` itself took inside the bare job.

``--reruns`` also measures the fixed costs of item 4 of the scale issue: ``olive --help``, and a cached
rerun of a 16-point search on the quickstart model; with ``--minilm DIR`` (a folder holding the
``model.onnx`` that ``benchmarks/minilm/export.py`` writes), a cached rerun of a one-pass workflow (dynamic
int8) on all-MiniLM-L6-v2 and the time to copy its output. These jobs run with Python's bytecode cache on
(``PYTHONDONTWRITEBYTECODE`` removed), as an installed Olive does: the first run writes it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
GB = 1e9
PROTOBUF_LIMIT = 2**31 - 1

#: key -> (pass name, params, minimum mean cosine of the output against the fp32 model). The bounds are
#: floors that a broken model (wrong weights, lost tensors) cannot reach, with room for quantization error,
#: which compounds over depth: on these random 44-layer stacks 4-bit weights keep well under 0.9.
PASSES: dict[str, tuple[str, dict[str, Any], float]] = {
    "dynamic-int8": ("OnnxDynamicQuantization", {}, 0.95),
    "static-int8": ("OnnxStaticQuantization", {"quant_format": "QDQ"}, 0.9),
    "4bit-blockwise": ("OnnxBlockWiseRtnQuantization", {"bits": 4, "block_size": 128}, 0.5),
    "8bit-blockwise": ("OnnxBlockWiseRtnQuantization", {"bits": 8, "block_size": 128}, 0.99),
    "fp16": ("OnnxFloatToFloat16", {"keep_io_types": True}, 0.999),
    "peephole": ("OnnxPeepholeOptimizer", {}, 0.99999),
    "transformer-opt": ("OrtTransformersOptimization", {"model_type": "bert"}, 0.99999),
    "graph-opt": ("OrtGraphOptimization", {}, 0.99999),
    # the check's inputs (BATCH, SEQUENCE below) fit the fixed shape
    "fixed-shape": ("DynamicToFixedShape", {"dim_param": ["batch", "sequence"], "dim_value": [2, 32]}, 0.99999),
    "quant-preprocess": ("OnnxQuantizationPreprocess", {}, 0.99999),
    "session-tuning": (
        "OrtSessionParamsTuning",
        {"intra_thread_num_list": [2], "opt_level_list": ["ORT_ENABLE_ALL"], "warmup_num": 1, "repeat_test_num": 2},
        0.99999,
    ),
    # One batch of each node's own int8 error ranks the nodes (no quantization per node); the model is kept.
    "sensitivity": ("OnnxSensitivityAnalysis", {"sensitivity_method": "local_error", "max_samples": 2}, 0.99999),
    "guarded-int8": (
        "OnnxAccuracyGuardedQuantization",
        {"sensitivity_method": "local_error", "max_samples": 2, "target_value": 0.95, "max_fp32_nodes": 2},
        0.95,
    ),
}
#: passes that take the calibration samples as their data_config
NEEDS_DATA = ("OnnxStaticQuantization", "OnnxSensitivityAnalysis", "OnnxAccuracyGuardedQuantization")
SEARCH_KEY = "search-4pt"
#: the searched pass: per_channel x quant_preprocess are searched (precision and reduce_range pinned)
SEARCH_PASS = {"type": "OnnxDynamicQuantization", "precision": "int8", "reduce_range": False}
SEARCH_POINTS = [
    {"per_channel": per_channel, "quant_preprocess": preprocess}
    for per_channel in (True, False)
    for preprocess in (True, False)
]

HIDDEN, HEADS = 1024, 16
QUICK_HIDDEN, QUICK_HEADS = 256, 4
BATCH, SEQUENCE = 2, 32


# --------------------------------------------------------------------------------------------------
# Measuring a process tree
# --------------------------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return found


def _pss(pid: int) -> int:
    """Proportional set size: resident pages, shared ones split between the processes sharing them."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def _tree_pss(root: int) -> int:
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _pss(pid)
        todo += _children(pid)
    return total


def measure(cmd: list[str], cwd: Path, log: Path, bytecode: bool = False) -> dict[str, Any]:
    """Run ``cmd``; its wall time, peak RSS of its process tree and exit code. Output goes to ``log``.
    ``bytecode``: with Python's bytecode cache (``PYTHONDONTWRITEBYTECODE`` removed)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    with log.open("w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        peak = 0
        done = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, _tree_pss(proc.pid))
                done.wait(0.01)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        # wait4 (not Popen.wait) for the child's rusage: ru_maxrss covers it and its reaped descendants.
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": wall,
        "peak_rss": max(peak, usage.ru_maxrss * 1024),
        "returncode": proc.returncode,
        "log": str(log),
    }


def _require_ok(result: dict[str, Any], what: str) -> None:
    if result["returncode"] != 0:
        tail = Path(result["log"]).read_text(errors="replace")[-3000:]
        raise SystemExit(f"bench_scale: {what} failed (exit {result['returncode']}):\n{tail}")


# --------------------------------------------------------------------------------------------------
# Jobs run in child processes (``bench_scale.py _job ...``)
# --------------------------------------------------------------------------------------------------
def _job_pass(args: argparse.Namespace) -> None:
    import logging

    from olive.hardware import DEFAULT_CPU_ACCELERATOR
    from olive.model.handler import ONNXModelHandler
    from olive.plugins.registry import get_registry

    logging.disable(logging.WARNING)
    cls = get_registry().get_pass_class(args.pass_name)
    config = cls.generate_config(DEFAULT_CPU_ACCELERATOR, json.loads(args.config), disable_search=True)
    model = ONNXModelHandler(args.model)
    start = time.perf_counter()
    result = cls(DEFAULT_CPU_ACCELERATOR, config).run(model, args.output)
    seconds = time.perf_counter() - start
    Path(args.result).write_text(json.dumps({"pass_s": seconds, "model_path": result.model_path}))


def _job_reference(args: argparse.Namespace) -> None:
    import numpy as np

    from olive.measure import create_session
    from olive.model.handler import ONNXModelHandler
    from olive.testing.models import random_inputs

    model = ONNXModelHandler(args.model)
    inputs = random_inputs(model, batch_size=BATCH, sequence_length=SEQUENCE, seed=7)
    np.savez(args.inputs, **inputs)
    session = create_session(model.model_path, None)
    outputs = session.run(None, inputs)
    np.savez(args.reference, *outputs)


def _job_verify(args: argparse.Namespace) -> None:
    """Check the output model: ONNX checker on the file, a session, outputs against the fp32 reference."""
    import numpy as np
    import onnx

    from olive.measure import cosine_similarities, create_session
    from olive.model.handler import ONNXModelHandler

    model = ONNXModelHandler(args.model)
    path = model.model_path
    onnx.checker.check_model(path)
    proto = model.load_model(load_external_data=False)
    external = [f for f in model.external_data_files()]
    size = model.size_on_disk
    del proto
    inputs = dict(np.load(args.inputs))
    reference = list(np.load(args.reference).values())
    outputs = create_session(path, None).run(None, inputs)
    u = np.concatenate([np.asarray(r, np.float64).reshape(BATCH, -1) for r in reference], axis=1)
    v = np.concatenate([np.asarray(o, np.float64).reshape(BATCH, -1) for o in outputs], axis=1)
    cosines = cosine_similarities(u, v)
    report = {
        "cosine_mean": float(cosines.mean()),
        "cosine_min": float(cosines.min()),
        "max_abs_diff": float(np.abs(u - v).max()),
        "output_bytes": size,
        "external_data_files": len(external),
        "model_file_bytes": Path(path).stat().st_size,
    }
    Path(args.result).write_text(json.dumps(report))


def _job_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench_scale.py _job")
    parser.add_argument("kind", choices=["pass", "reference", "verify"])
    parser.add_argument("--pass-name")
    parser.add_argument("--config", default="{}")
    parser.add_argument("--model", required=True)
    parser.add_argument("--output")
    parser.add_argument("--result")
    parser.add_argument("--inputs")
    parser.add_argument("--reference")
    args = parser.parse_args(argv)
    {"pass": _job_pass, "reference": _job_reference, "verify": _job_verify}[args.kind](args)
    return 0


# --------------------------------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------------------------------
def _olive() -> list[str]:
    return [sys.executable, "-c", "import sys; from olive.cli.main import main; sys.exit(main())"]


def _job(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "_job", *args]


def _workflow(model: Path, passes: dict[str, Any], job: Path, data: Path | None, search: bool) -> Path:
    workflow: dict[str, Any] = {
        "workflow_id": "bench_scale",
        "input_model": {"type": "ONNXModel", "model_path": str(model)},
        "passes": passes,
        "cache_dir": str(job / "cache"),
        "output_dir": str(job / "out"),
    }
    if data is not None:
        workflow["data_configs"] = [
            {
                "name": "samples",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": str(data)},
                "dataloader_config": {"batch_size": 1},
            }
        ]
        workflow["evaluators"] = {
            "common": {
                "metrics": [
                    {
                        "name": "agreement",
                        "type": "agreement",
                        "data_config": "samples",
                        "sub_types": [{"name": "cosine_mean", "priority": 1}],
                    },
                ]
            }
        }
        workflow["evaluator"] = "common"
    if search:
        workflow["search_strategy"] = {"execution_order": "joint", "sampler": "sequential"}
    path = job / "workflow.json"
    path.write_text(json.dumps(workflow, indent=2))
    return path


def _model_for(size_gb: float, hidden: int, heads: int, root: Path) -> tuple[Path, int, int]:
    from olive.testing.models import bert_like_model_files, bert_like_weight_bytes

    per_layer = bert_like_weight_bytes(2, hidden) - bert_like_weight_bytes(1, hidden)
    layers = max(1, round(size_gb * GB / per_layer))
    folder = root / f"model-{size_gb:g}GB"
    if not (folder / "model.onnx").is_file():
        shutil.rmtree(folder, ignore_errors=True)
        bert_like_model_files(folder, num_layers=layers, hidden_size=hidden, num_heads=heads, vocab_size=1000)
    size = sum(f.stat().st_size for f in folder.iterdir())
    return folder / "model.onnx", layers, size


def run_size(
    size_gb: float,
    keys: list[str],
    root: Path,
    quick: bool,
    with_search: bool,
    with_engine: bool,
    keep_going: bool = False,
) -> list[dict[str, Any]]:
    hidden, heads = (QUICK_HIDDEN, QUICK_HEADS) if quick else (HIDDEN, HEADS)
    model, layers, size = _model_for(size_gb, hidden, heads, root)
    print(f"== {size / GB:.3f} GB ({layers} layers, hidden {hidden}): {model}", flush=True)
    work = root / f"jobs-{size_gb:g}GB"
    work.mkdir(parents=True, exist_ok=True)
    inputs, reference = work / "inputs.npz", work / "reference.npz"
    ref = measure(
        _job("reference", "--model", str(model), "--inputs", str(inputs), "--reference", str(reference)),
        work,
        work / "reference.log",
    )
    _require_ok(ref, "the fp32 reference run")
    calib = work / "calib.npz"
    _calibration_data(model, calib)
    rows = []
    for key in keys:
        try:
            rows.append(_pass_row(key, model, size, layers, size_gb, work, inputs, reference, calib, with_engine))
        except SystemExit as failure:
            if not keep_going:
                raise
            rows.append(
                {"size_gb": size / GB, "model_bytes": size, "layers": layers, "pass": key, "error": str(failure)}
            )
        print(_row_line(rows[-1]), flush=True)
    if with_search:
        rows.append(_search_row(model, size, layers, work, inputs))
        print(_row_line(rows[-1]), flush=True)
    return rows


def _pass_row(
    key: str,
    model: Path,
    size: int,
    layers: int,
    size_gb: float,
    work: Path,
    inputs: Path,
    reference: Path,
    calib: Path,
    with_engine: bool,
) -> dict[str, Any]:
    pass_name, params, bound = PASSES[key]
    if pass_name in NEEDS_DATA:
        params = {**params, "data_config": str(calib)}
    job = work / key
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir()
    bare = measure(
        _job(
            "pass",
            "--pass-name",
            pass_name,
            "--config",
            json.dumps(params),
            "--model",
            str(model),
            "--output",
            str(job / "bare"),
            "--result",
            str(job / "bare.json"),
        ),
        job,
        job / "bare.log",
    )
    _require_ok(bare, f"{key} on {size_gb:g} GB (bare pass)")
    produced = json.loads((job / "bare.json").read_text())
    check = measure(
        _job(
            "verify",
            "--model",
            produced["model_path"],
            "--inputs",
            str(inputs),
            "--reference",
            str(reference),
            "--result",
            str(job / "verify.json"),
        ),
        job,
        job / "verify.log",
    )
    _require_ok(check, f"checking the output of {key} on {size_gb:g} GB")
    verdict = json.loads((job / "verify.json").read_text())
    if verdict["cosine_mean"] < bound:
        raise SystemExit(
            f"bench_scale: {key} on {size_gb:g} GB: output cosine {verdict['cosine_mean']:.5f} is below the "
            f"bound {bound} (see {job})"
        )
    if verdict["output_bytes"] > PROTOBUF_LIMIT and not verdict["external_data_files"]:
        raise SystemExit(f"bench_scale: {key} on {size_gb:g} GB wrote a model past 2 GB without external data")
    shutil.rmtree(job / "bare", ignore_errors=True)
    row: dict[str, Any] = {
        "size_gb": size / GB,
        "model_bytes": size,
        "layers": layers,
        "pass": key,
        "pass_name": pass_name,
        "pass_s": produced["pass_s"],
        "bare_wall_s": bare["wall_s"],
        "bare_peak_rss": bare["peak_rss"],
        **{f"check_{k}": v for k, v in verdict.items()},
    }
    if with_engine:
        flow = _workflow(model, {"p": {"type": pass_name, **params}}, job, None, search=False)
        run = measure([*_olive(), "run", "--config", str(flow)], job, job / "run.log")
        _require_ok(run, f"olive run of {key} on {size_gb:g} GB")
        shutil.rmtree(job / "cache", ignore_errors=True)
        shutil.rmtree(job / "out", ignore_errors=True)
        run_pass = measure(
            [
                *_olive(),
                "run-pass",
                "--pass-name",
                pass_name,
                "--pass-config",
                json.dumps(params),
                "-m",
                str(model),
                "-o",
                str(job / "run-pass"),
            ],
            job,
            job / "run-pass.log",
        )
        _require_ok(run_pass, f"olive run-pass of {key} on {size_gb:g} GB")
        shutil.rmtree(job / "run-pass", ignore_errors=True)
        row.update(
            run_wall_s=run["wall_s"],
            run_peak_rss=run["peak_rss"],
            run_pass_wall_s=run_pass["wall_s"],
            run_pass_peak_rss=run_pass["peak_rss"],
        )
    return row


def _calibration_data(model: Path, path: Path) -> None:
    import numpy as np

    from olive.model.handler import ONNXModelHandler
    from olive.testing.models import random_inputs

    samples = [
        random_inputs(ONNXModelHandler(str(model)), batch_size=1, sequence_length=SEQUENCE, seed=s) for s in range(4)
    ]
    np.savez(path, **{k: np.concatenate([s[k] for s in samples]) for k in samples[0]})


def _search_row(model: Path, size: int, layers: int, work: Path, data: Path) -> dict[str, Any]:
    job = work / SEARCH_KEY
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir()
    singles = []
    for index, point in enumerate(SEARCH_POINTS):
        one = job / f"point-{index}"
        one.mkdir()
        flow = _workflow(model, {"q": {**SEARCH_PASS, **point}}, one, data, search=False)
        result = measure([*_olive(), "run", "--config", str(flow)], one, one / "run.log")
        _require_ok(result, f"the single point {point}")
        shutil.rmtree(one / "cache", ignore_errors=True)
        shutil.rmtree(one / "out", ignore_errors=True)
        singles.append(result)
    flow = _workflow(model, {"q": dict(SEARCH_PASS)}, job, data, search=True)
    search = measure([*_olive(), "run", "--config", str(flow)], job, job / "run.log")
    _require_ok(search, "the 4-point search")
    footprint = json.loads((job / "out" / "footprint.json").read_text())
    tried = footprint.get("nodes", footprint) if isinstance(footprint, dict) else footprint
    shutil.rmtree(job / "cache", ignore_errors=True)
    shutil.rmtree(job / "out", ignore_errors=True)
    heaviest = max(s["peak_rss"] for s in singles)
    return {
        "size_gb": size / GB,
        "model_bytes": size,
        "layers": layers,
        "pass": SEARCH_KEY,
        "pass_name": "OnnxDynamicQuantization",
        "search_points": len(SEARCH_POINTS),
        "models_in_footprint": len(tried),
        "run_wall_s": search["wall_s"],
        "run_peak_rss": search["peak_rss"],
        "single_point_peak_rss": [s["peak_rss"] for s in singles],
        "single_point_wall_s": [s["wall_s"] for s in singles],
        "search_vs_heaviest_point": search["peak_rss"] / heaviest,
    }


# --------------------------------------------------------------------------------------------------
# Fixed costs (item 4): olive --help and cached reruns
# --------------------------------------------------------------------------------------------------
def rerun_costs(root: Path, repeats: int, minilm: Path | None = None) -> dict[str, Any]:
    help_runs = [measure([*_olive(), "--help"], root, root / "help.log", bytecode=True) for _ in range(repeats + 1)]
    help_runs = help_runs[1:]  # the first writes the bytecode cache
    quick = root / "quickstart"
    shutil.rmtree(quick, ignore_errors=True)
    created = measure([*_olive(), "quickstart", str(quick)], root, root / "quickstart.log", bytecode=True)
    _require_ok(created, "olive quickstart")
    workflow = json.loads((quick / "quickstart.json").read_text())
    # 16 points: transformer fusion at opt_level 0 / 1 x dynamic int8 per_channel x reduce_range x preprocess
    # (pinned elsewhere).
    workflow["passes"] = {
        "fuse": {"type": "OrtTransformersOptimization", "model_type": "bert", "opt_level": [0, 1]},
        "quantize": {"type": "OnnxDynamicQuantization", "precision": "int8"},
    }
    workflow["search_strategy"] = {"execution_order": "joint", "sampler": "sequential"}
    workflow["output_dir"] = "output-16"
    (quick / "search16.json").write_text(json.dumps(workflow, indent=2))
    first = measure([*_olive(), "run", "--config", "search16.json"], quick, quick / "first.log", bytecode=True)
    _require_ok(first, "the 16-point search")
    footprint = json.loads((quick / "output-16" / "footprint.json").read_text())
    reruns = [
        measure([*_olive(), "run", "--config", "search16.json"], quick, quick / "rerun.log", bytecode=True)
        for _ in range(repeats)
    ]
    for r in reruns:
        _require_ok(r, "the cached rerun")
    result = {
        "help_wall_s": statistics.median(r["wall_s"] for r in help_runs),
        "help_peak_rss": max(r["peak_rss"] for r in help_runs),
        "search16_models": len(footprint.get("nodes", footprint)) if isinstance(footprint, dict) else len(footprint),
        "search16_first_wall_s": first["wall_s"],
        "search16_first_peak_rss": first["peak_rss"],
        "search16_rerun_wall_s": statistics.median(r["wall_s"] for r in reruns),
        "search16_rerun_peak_rss": max(r["peak_rss"] for r in reruns),
    }
    if minilm is not None:
        result.update(_minilm_rerun(root / "minilm", minilm / "model.onnx", repeats))
    return result


def _minilm_rerun(work: Path, model: Path, repeats: int) -> dict[str, Any]:
    """A cached rerun of a one-pass workflow (dynamic int8, no metrics) on all-MiniLM-L6-v2, and the time to copy
    its output (what a rerun cannot avoid)."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(model.resolve())},
        "passes": {"quantize": {"type": "OnnxDynamicQuantization", "precision": "int8"}},
        "cache_dir": "cache",
        "output_dir": "output",
    }
    (work / "minilm.json").write_text(json.dumps(workflow, indent=2))
    first = measure([*_olive(), "run", "--config", "minilm.json"], work, work / "first.log", bytecode=True)
    _require_ok(first, "the MiniLM workflow")
    reruns = [
        measure([*_olive(), "run", "--config", "minilm.json"], work, work / "rerun.log", bytecode=True)
        for _ in range(repeats)
    ]
    for r in reruns:
        _require_ok(r, "the cached MiniLM rerun")
    output = work / "output" / "model.onnx"
    copies = []
    for _ in range(repeats):
        start = time.perf_counter()
        shutil.copyfile(output, work / "copy.onnx")
        copies.append(time.perf_counter() - start)
    return {
        "minilm_model_bytes": model.stat().st_size,
        "minilm_output_bytes": output.stat().st_size,
        "minilm_first_wall_s": first["wall_s"],
        "minilm_rerun_wall_s": statistics.median(r["wall_s"] for r in reruns),
        "minilm_rerun_peak_rss": max(r["peak_rss"] for r in reruns),
        "minilm_output_copy_s": statistics.median(copies),
    }


# --------------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------------
def _mb(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def _row_line(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"   {r['pass']:<16} FAILED: {r['error'][:2000]}"
    if r["pass"] == SEARCH_KEY:
        return (
            f"   {r['pass']:<16} search {r['run_wall_s']:.1f} s {_mb(r['run_peak_rss'])} MiB; heaviest single "
            f"point {_mb(max(r['single_point_peak_rss']))} MiB ({r['search_vs_heaviest_point']:.2f}x)"
        )
    text = (
        f"   {r['pass']:<16} pass {r['pass_s']:.1f} s, bare {r['bare_wall_s']:.1f} s {_mb(r['bare_peak_rss'])} MiB "
        f"({r['bare_peak_rss'] / r['model_bytes']:.2f}x), cosine {r['check_cosine_mean']:.5f}"
    )
    if "run_peak_rss" in r:
        text += (
            f"; olive run {r['run_wall_s']:.1f} s {_mb(r['run_peak_rss'])} MiB; run-pass {r['run_pass_wall_s']:.1f}"
            f" s {_mb(r['run_pass_peak_rss'])} MiB"
        )
    return text


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model | pass | pass s | bare job s | peak RSS MiB | peak / model | `olive run` s | peak MiB | engine "
        "overhead s / MiB | `run-pass` peak MiB | output cosine |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        model = f"{r['size_gb']:.2f} GB"
        if "error" in r:
            lines.append(f"| {model} | {r['pass']} | failed: {r['error'].splitlines()[0][:120]} |||||||||")
            continue
        if r["pass"] == SEARCH_KEY:
            heaviest = max(r["single_point_peak_rss"])
            lines.append(
                f"| {model} | 4-point search (dynamic int8) | | | | | {r['run_wall_s']:.1f} | {_mb(r['run_peak_rss'])} "
                f"| {r['search_vs_heaviest_point']:.2f}x the heaviest single point ({_mb(heaviest)} MiB) | | |"
            )
            continue
        engine = "| | | |"
        if "run_peak_rss" in r:
            engine = (
                f"| {r['run_wall_s']:.1f} | {_mb(r['run_peak_rss'])} | {r['run_wall_s'] - r['bare_wall_s']:+.1f} / "
                f"{(r['run_peak_rss'] - r['bare_peak_rss']) / 2**20:+,.0f} | {_mb(r['run_pass_peak_rss'])} |"
            )
        lines.append(
            f"| {model} | {r['pass']} | {r['pass_s']:.1f} | {r['bare_wall_s']:.1f} | {_mb(r['bare_peak_rss'])} "
            f"| {r['bare_peak_rss'] / r['model_bytes']:.2f}x {engine} {r['check_cosine_mean']:.5f} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_scale: matplotlib is not installed; no plot written", file=sys.stderr)
        return False
    rows = [r for r in rows if "error" not in r]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    keys = list(dict.fromkeys(r["pass"] for r in rows if r["pass"] != SEARCH_KEY))
    for key in keys:
        mine = sorted((r for r in rows if r["pass"] == key), key=lambda r: r["size_gb"])
        sizes = [r["size_gb"] for r in mine]
        left.plot(sizes, [r["bare_peak_rss"] / GB for r in mine], marker="o", label=key)
        right.plot(sizes, [r["bare_peak_rss"] / r["model_bytes"] for r in mine], marker="o", label=key)
    search = sorted((r for r in rows if r["pass"] == SEARCH_KEY), key=lambda r: r["size_gb"])
    if search:
        left.plot(
            [r["size_gb"] for r in search],
            [r["run_peak_rss"] / GB for r in search],
            marker="s",
            linestyle="--",
            color="black",
            label="4-point search (olive run)",
        )
    top = max(r["size_gb"] for r in rows)
    for label, slope, offset, style in (
        ("1x model", 1.0, 0.0, ":"),
        ("2.5x (int8 budget)", 2.5, 0.0, "-."),
        ("1.5x + 0.3 GB (blockwise, fp16 budget)", 1.5, 0.3, "--"),
    ):
        left.plot([0, top], [offset, slope * top + offset], linestyle=style, color="grey", linewidth=0.8)
        left.annotate(label, (top, slope * top + offset), fontsize=7, color="grey", ha="right", va="bottom")
    left.set(
        xlabel="model size (GB of weights)",
        ylabel="peak RSS of the bare pass job (GB)",
        title="Peak memory by model size",
    )
    right.set(xlabel="model size (GB of weights)", ylabel="peak RSS / model size", title="Peak memory per model byte")
    right.axvline(PROTOBUF_LIMIT / GB, color="grey", linewidth=0.8, linestyle=":")
    right.annotate("protobuf 2 GB limit", (PROTOBUF_LIMIT / GB, right.get_ylim()[1] * 0.95), fontsize=8, color="grey")
    left.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_job"]:
        return _job_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=float, nargs="*", default=[0.1, 0.5, 1.0, 2.2], help="model sizes in GB (none: only --reruns)"
    )
    parser.add_argument("--passes", nargs="+", choices=[*PASSES, SEARCH_KEY], help="default: every pass + search")
    parser.add_argument("--quick", action="store_true", help="one 13 MB model (hidden 256), every pass: smoke test")
    parser.add_argument("--no-engine", action="store_true", help="only the bare pass jobs (no olive run / run-pass)")
    parser.add_argument(
        "--engine-max-gb",
        type=float,
        default=1.5,
        help="run the olive run / run-pass jobs for models up to this size (default 1.5: not at 2.2 GB)",
    )
    parser.add_argument("--reruns", action="store_true", help="also measure olive --help and a cached rerun")
    parser.add_argument(
        "--minilm", type=Path, help="with --reruns: a folder holding MiniLM's model.onnx (benchmarks/minilm/export.py)"
    )
    parser.add_argument("--workdir", type=Path, help="where models and jobs go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the workdir (models are reused when it is kept)")
    parser.add_argument("--keep-going", action="store_true", help="record a failing pass and go on")
    parser.add_argument("--json", type=Path, help="write every row as JSON here")
    parser.add_argument("--plot", type=Path, help="write the plot (PNG) here; needs matplotlib")
    parser.add_argument("--from-json", type=Path, nargs="+", help="only print the table (and plot) of saved runs")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = [json.loads(path.read_text()) for path in args.from_json]
        # A later run of the same size and pass replaces an earlier one; a failure never replaces a result.
        latest: dict[tuple[float, str], dict[str, Any]] = {}
        for row in (r for report in saved for r in report["rows"]):
            key = (round(row["size_gb"], 2), row["pass"])
            if "error" not in row or key not in latest:
                latest[key] = row
        rows = [latest[key] for key in sorted(latest, key=lambda k: (k[0], [*PASSES, SEARCH_KEY].index(k[1])))]
        print(table(rows))
        for report in saved:
            if "reruns" in report:
                print(json.dumps(report["reruns"], indent=2))
        if args.plot:
            plot(rows, args.plot)
        return 0
    sizes = [0.013] if args.quick else args.sizes
    chosen = args.passes or [*PASSES, SEARCH_KEY]
    keys = [k for k in chosen if k != SEARCH_KEY]
    root = args.workdir or Path(tempfile.mkdtemp(prefix="olive-bench-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    report: dict[str, Any] = {"rows": rows}
    try:
        for size in sizes:
            engine = not args.no_engine and size <= args.engine_max_gb
            rows += run_size(size, keys, root, args.quick, SEARCH_KEY in chosen, engine, args.keep_going)
            if args.json:
                args.json.write_text(json.dumps(report, indent=2))
        if args.reruns:
            report["reruns"] = rerun_costs(root, repeats=3 if args.quick else 7, minilm=args.minilm)
            print(json.dumps(report["reruns"], indent=2))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    if args.plot:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
