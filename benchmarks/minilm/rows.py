"""The benchmark's rows: which Olive passes make each row's model, and the bar the table judges them by.

A row is either fixed steps (passes run one after another, looked up by name in the plugin registry) or a
searched workflow (``search``, see ``searches.py``). To benchmark a new pass, add a row here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
OUTPUT_NAME = "last_hidden_state"
MASK_NAME = "attention_mask"
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
