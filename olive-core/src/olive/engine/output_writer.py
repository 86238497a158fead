"""Writing a run's results into ``output_dir``.

``write_outputs`` writes the best model (``model.onnx`` plus its external data), ``model_config.json``,
``metrics.json``, ``footprint.json`` and ``run_history.txt``, then calls every registered output writer
(``register_output_writer``), which is how a report writer adds its files. Each file is written to a temp
name and renamed, so a reader never sees half a file.

The output folder may be one the user already uses, so the run overwrites or deletes only files it can
prove an earlier run wrote: every file written is listed in ``.olive-output.json`` (written before the
files themselves). A file of the same name that is not listed stops the run (at config time for the
standard names, before anything is written for external data) instead of replacing the user's file.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import olive
from olive.exceptions import OliveError
from olive.execution_providers.deployment import deployment_lines
from olive.execution_providers.registry import adapter_for
from olive.measure.sessions import PROVIDER_KEYS
from olive.model.handler import ONNXModelHandler
from olive.paths import UnsafeName, inside
from olive.report import write_report

if TYPE_CHECKING:
    from olive.config import WorkflowConfig
    from olive.engine.footprint import FootprintNode
    from olive.engine.output import WorkflowOutput

OutputWriter = Callable[["WorkflowOutput", "WorkflowConfig", Path], None]
_WRITERS: list[OutputWriter] = []

MANIFEST = ".olive-output.json"
MODEL_FILE = "model.onnx"
# What every run may write; checked against the folder before the run starts.
STANDARD_FILES = (MODEL_FILE, "model_config.json", "metrics.json", "footprint.json", "run_history.txt", "report.html")


def claimed_files(output_dir: Path) -> set[str]:
    """The files an earlier run recorded writing in ``output_dir`` (read from disk: anything that is not a
    plain relative path inside the folder is ignored)."""
    try:
        data = json.loads((output_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    files = data.get("files") if isinstance(data, dict) else None
    claimed = set()
    for name in files if isinstance(files, list) else []:
        if not isinstance(name, str):
            continue
        try:
            inside(output_dir, name)
        except (UnsafeName, OSError):
            continue
        claimed.add(os.path.normpath(name))
    return claimed


def foreign_files(output_dir: Path, names: list[str] | tuple[str, ...]) -> list[str]:
    """Those of ``names`` that exist in ``output_dir`` but that no run of ours wrote."""
    claimed = claimed_files(output_dir)
    return [name for name in names if os.path.normpath(name) not in claimed and os.path.lexists(output_dir / name)]


def refuse_foreign(output_dir: Path, foreign: list[str], error: type[Exception]) -> None:
    if foreign:
        raise error(
            f"output_dir: '{output_dir}' already holds {', '.join(foreign)}, which Olive did not write; move "
            f"{'it' if len(foreign) == 1 else 'them'} away or choose another output_dir (Olive never overwrites a "
            "file it did not create)"
        )


def claim_files(output_dir: Path, names: list[str]) -> None:
    """Record ``names`` as written by the tool, before writing them (an interrupted write stays claimed)."""
    files = sorted(claimed_files(output_dir) | {os.path.normpath(n) for n in names})
    _write_json(output_dir / MANIFEST, {"format": 1, "written_by": "olive", "files": files})


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


def _model_files(node: FootprintNode) -> tuple[Path, list[tuple[Path, str]]]:
    """The best model's file and ``(source, name in output_dir)`` of each file to copy."""
    model = node.create_model()
    source = Path(model.model_path)
    folder_files = getattr(model, "folder_files", None)
    if callable(folder_files):
        # A model that is a whole folder (an onnxruntime-genai folder: decoder, genai_config.json, tokenizer)
        # is copied under its own names, which the folder's files refer to.
        return source, [(Path(path), rel) for path, rel in folder_files()]
    files = [(source, MODEL_FILE)]
    for extra in model.external_data_files() if isinstance(model, ONNXModelHandler) else []:
        files.append((Path(extra), os.path.relpath(extra, source.parent)))
    return source, files


def _copy_model(files: list[tuple[Path, str]], output_dir: Path) -> list[str]:
    """Copy the model file as ``model.onnx`` and its external data beside it; returns the file names."""
    staging = output_dir / f".model-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        names = []
        for source, rel in files:
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            names.append(rel)
        for name in names:
            final = output_dir / name
            final.parent.mkdir(parents=True, exist_ok=True)
            (staging / name).replace(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return names


def write_outputs(output: WorkflowOutput, workflow: WorkflowConfig) -> Path:
    """Write the run's files into ``workflow.output_dir``; returns that folder."""
    output_dir = Path(workflow.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    output.output_dir = output_dir
    best = output.best
    model_files: list[tuple[Path, str]] = []
    if best is not None:
        _, model_files = _model_files(best)
        for _, rel in model_files:
            try:
                inside(output_dir, rel)
            except UnsafeName as exc:
                raise OliveError(
                    f"the best model's external data file '{rel}' would be written outside output_dir ({exc})"
                ) from None
    planned = [rel for _, rel in model_files] + [name for name in STANDARD_FILES if name != MODEL_FILE]
    refuse_foreign(output_dir, foreign_files(output_dir, planned), OliveError)
    claimed = claimed_files(output_dir)
    claim_files(output_dir, planned)
    # A previous run's model must not pass for this run's when nothing was produced.
    if best is None:
        for stale in (MODEL_FILE, "model_config.json", "metrics.json"):
            if stale in claimed:
                (output_dir / stale).unlink(missing_ok=True)
    else:
        files = _copy_model(model_files, output_dir)
        produced_by = [
            {
                "pass_key": n.pass_key,
                "pass_name": n.pass_name,
                "distribution": n.pass_distribution,
                "version": n.pass_version,
                "config": n.config,
            }
            for n in output.lineage(best)
        ]
        model_json = dict(best.model_json or {})
        config = dict(model_json.get("config") or {})
        if callable(getattr(best.create_model(), "folder_files", None)):
            config["model_path"] = str(output_dir)
        else:
            config["model_path"] = str(output_dir / "model.onnx")
            config.pop("onnx_file_name", None)
        target = best.target or {}
        if target.get("inference_settings") and target["execution_provider"] != "CPUExecutionProvider":
            # The model runs where it was chosen: the target's provider, options and device load it again.
            kept = {k: v for k, v in (config.get("inference_settings") or {}).items() if k not in PROVIDER_KEYS}
            config["inference_settings"] = {**kept, **target["inference_settings"]}
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
                **({"target": _deployment(target)} if target else {}),
            },
        )
        metrics = {"best": best.metrics, "model_id": best.model_id}
        if best.samples:
            # How many samples each figure stands on (the judging part when a data config was split).
            metrics["samples"] = best.samples
        if best.batch_sizes:
            # The batch sizes each agreement figure was served at, the one it was the worst at, and each size's own.
            metrics["batch_sizes"] = best.batch_sizes
        guard = ((best.model_json or {}).get("config") or {}).get("model_attributes", {}).get("accuracy_guard")
        if isinstance(guard, dict) and isinstance(guard.get("achieved"), dict):
            # The guard's own check, on the samples it fit on: beside "best", the gap shows how much it flatters.
            metrics["fit"] = {"accuracy_guard": guard["achieved"], "num_samples": guard.get("num_samples")}
            if isinstance(guard.get("batch_sizes"), list):
                # the batch sizes the guard scored its variants at (the worst over them)
                metrics["fit"]["batch_sizes"] = guard["batch_sizes"]
        input_node = output.footprint[0] if output.footprint else None
        if input_node is not None and input_node.metrics is not None:
            metrics["input_model"] = input_node.metrics
        reference = output.get_node(output.reference_model_id) if output.reference_model_id else None
        if reference is not None and reference is not input_node and reference.metrics is not None:
            # The input model could not be evaluated; this model stood in for it.
            metrics["reference"] = {"model_id": reference.model_id, "metrics": reference.metrics}
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
                "reference_model_id": output.reference_model_id,
                "tied_model_ids": output.tied_model_ids,
                "chosen_because": output.chosen_because,
                "nodes": [node.to_json() for node in output.footprint],
                "searched_params": output.searched_params,
            },
        )
        _write_text(output_dir / "run_history.txt", run_history(output))
        write_report(output_dir, workflow=workflow)
        for writer in list(_WRITERS):
            writer(output, workflow, output_dir)
    return output_dir


def _deployment(target: dict[str, Any]) -> dict[str, Any]:
    """What model_config.json says of the chosen target: provider, device, options and, for a plugin provider,
    the pip package that ships it."""
    recorded = {k: target[k] for k in ("label", "execution_provider", "device", "provider_options") if k in target}
    adapter = adapter_for(target.get("execution_provider", ""))
    if adapter is not None:
        recorded["package"] = adapter.package
        lines = deployment_lines(target, MODEL_FILE)
        if lines:
            recorded["deploy"] = lines
    if target.get("nodes_not_taken_count"):
        recorded["nodes_not_taken"] = target.get("nodes_not_taken")
    return recorded


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
