"""Writing a run's results into ``output_dir``.

``write_outputs`` writes the best model (``model.onnx`` plus its external data), ``model_config.json``,
``metrics.json``, ``footprint.json`` and ``run_history.txt``, then calls every registered output writer
(``register_output_writer``), which is how a report writer adds its files. Each file is written to a temp
name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from olive.engine.output import FootprintNode, WorkflowOutput
    from olive.workflows.config import WorkflowConfig

OutputWriter = Callable[["WorkflowOutput", "WorkflowConfig", Path], None]
_WRITERS: list[OutputWriter] = []


def register_output_writer(writer: OutputWriter) -> OutputWriter:
    """Add ``writer(output, workflow, output_dir)``, called after the standard files are written."""
    if writer not in _WRITERS:
        _WRITERS.append(writer)
    return writer


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _write_json(path: Path, value: Any) -> None:
    _write_text(path, json.dumps(value, indent=2, default=str) + "\n")


def _copy_model(node: FootprintNode, output_dir: Path) -> list[str]:
    """Copy the model file as ``model.onnx`` and its external data beside it; returns the file names."""
    model = node.create_model()
    source = Path(model.model_path)
    staging = output_dir / f".model-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        names = ["model.onnx"]
        shutil.copyfile(source, staging / "model.onnx")
        for extra in model.external_data_files() if hasattr(model, "external_data_files") else []:
            rel = os.path.relpath(extra, source.parent)
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(extra, target)
            names.append(rel)
        for name in names:
            final = output_dir / name
            final.parent.mkdir(parents=True, exist_ok=True)
            (staging / name).replace(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return names


def lineage(output: WorkflowOutput, node: FootprintNode) -> list[FootprintNode]:
    """The pass runs that produced ``node``, first pass first."""
    chain = []
    current: FootprintNode | None = node
    while current is not None and current.parent_model_id is not None:
        chain.append(current)
        current = output.get_node(current.parent_model_id)
    return list(reversed(chain))


def write_outputs(output: WorkflowOutput, workflow: WorkflowConfig) -> Path:
    """Write the run's files into ``workflow.output_dir``; returns that folder."""
    import olive

    output_dir = Path(workflow.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    output.output_dir = output_dir
    best = output.best
    # A previous run's model must not pass for this run's when nothing was produced.
    if best is None:
        for stale in ("model.onnx", "model_config.json", "metrics.json"):
            (output_dir / stale).unlink(missing_ok=True)
    else:
        files = _copy_model(best, output_dir)
        produced_by = [
            {
                "pass_key": n.pass_key,
                "pass_name": n.pass_name,
                "distribution": n.pass_distribution,
                "version": n.pass_version,
                "config": n.config,
            }
            for n in lineage(output, best)
        ]
        model_json = dict(best.model_json or {})
        config = dict(model_json.get("config") or {})
        config["model_path"] = str(output_dir / "model.onnx")
        config.pop("onnx_file_name", None)
        _write_json(
            output_dir / "model_config.json",
            {
                "type": model_json.get("type", "ONNXModel"),
                "config": config,
                "files": files,
                "produced_by": produced_by,
                "distributions": {
                    p["distribution"]: p["version"] for p in produced_by if p["distribution"] is not None
                },
                "olive_core_version": olive.__version__,
                "accelerator": output.accelerator,
            },
        )
        metrics = {"best": best.metrics, "model_id": best.model_id}
        input_node = output.footprint[0] if output.footprint else None
        if input_node is not None and input_node.metrics is not None:
            metrics["input_model"] = input_node.metrics
        _write_json(output_dir / "metrics.json", metrics)
    if not workflow.no_artifacts:
        _write_json(
            output_dir / "footprint.json",
            {
                "workflow_id": workflow.workflow_id,
                "accelerator": output.accelerator,
                "objectives": output.objectives,
                "best_model_id": best.model_id if best else None,
                "reason": output.reason,
                "nodes": [node.to_json() for node in output.footprint],
            },
        )
        _write_text(output_dir / "run_history.txt", run_history(output))
        from olive.report import write_report

        write_report(output_dir, workflow=workflow)
        for writer in list(_WRITERS):
            writer(output, workflow, output_dir)
    return output_dir


def run_history(output: WorkflowOutput) -> str:
    """One line per model tried: id, parent, pass, status, seconds, metrics."""
    lines = ["model_id\tparent\tpass\tstatus\tcached\trun_s\tmetrics"]
    for node in output.footprint:
        metrics = ", ".join(f"{k}={v:.6g}" for k, v in node.metric_values().items() if isinstance(v, int | float))
        status = node.status + (f" ({node.error})" if node.error else "")
        mark = " *" if output.best is not None and node.model_id == output.best.model_id else ""
        lines.append(
            f"{node.model_id}{mark}\t{node.parent_model_id or '-'}\t{node.pass_name or '-'}\t{status}\t"
            f"{'yes' if node.cached else 'no'}\t{node.timings.get('run', 0.0):.3f}\t{metrics}"
        )
    return "\n".join(lines) + "\n"
