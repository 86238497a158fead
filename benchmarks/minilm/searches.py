"""The searched rows: Olive workflows whose search makes the row's model.

``search`` searches over which quantization follows transformer optimization; ``guard-budget`` searches the
accuracy guard's target under a latency budget. Both measure latency (batch 1, sequence 128) and agreement on
the calibration sentences in the engine, so the held-out evaluation sentences stay unseen until the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from measuring import THREADS, WARMUP
from rows import (
    BUDGET_TARGETS,
    CALIB_DATA,
    MASK_NAME,
    OUTPUT_NAME,
    SEARCH_LATENCY_BUDGET,
    TARGET_MEAN,
    TARGET_MIN,
    model_dims,
)


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


WORKFLOWS = {"passes": search_workflow, "guard-budget": budget_workflow}
