"""Building each row's model by running Olive passes, looked up by name in the plugin registry exactly as a
workflow would; a row whose pass is not installed says "not available", a pass that fails costs its row only.
"""

from __future__ import annotations

import json
import shutil
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rows import Row, Step
from searches import WORKFLOWS


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
            result.status, result.note = "not available", f"{step.pass_name}: {one_line(exc)}"
            return result
    started = time.perf_counter()
    for index, (step, pass_class) in enumerate(zip(row.steps, classes, strict=True)):
        out = models_dir / row.key / f"{index}-{step.pass_name}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        try:
            model = pass_class(DEFAULT_CPU_ACCELERATOR, step.config).run(model, str(out))
        except Exception as exc:  # a broken pass should cost its row, not the whole benchmark
            result.status, result.note = "failed", f"{step.pass_name}: {one_line(exc)}"
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


def build_searched(row: Row, fp32_path: Path, models_dir: Path, quick: bool, export_dir: Path) -> Result:
    from olive.exceptions import PluginLoadError, UnknownPassError

    result = Result(row)
    try:
        from olive.workflows import run as olive_run
    except ImportError as exc:
        result.status, result.note = "not available", f"olive.workflows.run: {one_line(exc)}"
        return result
    workflow = WORKFLOWS[row.search](fp32_path, export_dir, models_dir.parent, quick)
    saved = models_dir.parent / f"{workflow['workflow_id'].removeprefix('minilm-')}-workflow.json"
    saved.write_text(json.dumps(workflow, indent=2) + "\n")
    started = time.perf_counter()
    try:
        output = olive_run(workflow)
    except (UnknownPassError, PluginLoadError) as exc:
        result.status, result.note = "not available", one_line(exc)
        return result
    except Exception as exc:
        result.status, result.note = "failed", f"olive.workflows.run: {one_line(exc)}"
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


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
