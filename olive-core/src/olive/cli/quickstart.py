"""``olive quickstart [DIR]``: write a small BERT-like model, sample data and a workflow, then run it.

Everything comes from the installed packages (the model is built with ``olive.testing.models``), so it works
offline. The workflow JSON it writes is an ordinary one: edit it and run it with ``olive run --config``.
"""

from __future__ import annotations

import errno
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import click

from olive.cli.failure import EXIT_FAILED, error_line, interrupted
from olive.config_errors import user_path
from olive.exceptions import OliveError, WorkflowConfigError
from olive.plugins.install_hints import install_line

WORKFLOW_FILE = "quickstart.json"
MODEL_DIR = "model"
DATA_FILE = "data.npz"

# Big enough that int8 quantization pays off in latency as well as size, small enough to build and
# search in seconds on two cores.
MODEL_SHAPE = {
    "num_layers": 4,
    "hidden_size": 128,
    "num_heads": 4,
    "intermediate_size": 512,
    "vocab_size": 1000,
    "max_seq_len": 128,
}
NUM_SAMPLES = 32
SEQUENCE_LENGTH = 64
COSINE_GOAL = 0.99

#: pass name -> the distribution that must provide it
REQUIRED_PASSES = {
    "OrtTransformersOptimization": "olive-passes-graph",
    "OnnxDynamicQuantization": "olive-passes-quant",
    "OnnxStaticQuantization": "olive-passes-quant",
}


def quickstart_workflow(reduce_range: bool | None = None) -> dict[str, Any]:
    """The workflow the quickstart writes; paths are relative to the file's folder.

    :param reduce_range: 7-bit int8 weights; by default, where this CPU's int8 MatMul saturates
        (:mod:`olive.hardware.cpu`).
    """
    if reduce_range is None:
        from olive.measure.int8_kernel import int8_matmul_saturates

        reduce_range = int8_matmul_saturates()
    return {
        "workflow_id": "quickstart",
        "input_model": {"type": "ONNXModel", "model_path": f"{MODEL_DIR}/model.onnx"},
        "data_configs": [
            {
                "name": "samples",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": DATA_FILE},
                "dataloader_config": {"batch_size": 1},
            }
        ],
        "evaluators": {
            "common": {
                "metrics": [
                    {
                        "name": "latency",
                        "type": "latency",
                        "data_config": "samples",
                        # Ranked by the p50 ratio to the input model, timed in alternating rounds with it, so
                        # that a machine slowing down or speeding up during the search does not pick the model.
                        "sub_types": [{"name": "ratio_p50", "priority": 1}, {"name": "p50"}],
                        "warmup_num": 10,
                        "repeat_test_num": 50,
                    },
                    {"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 2}]},
                    {
                        "name": "agreement",
                        "type": "agreement",
                        "data_config": "samples",
                        "sub_types": [
                            {"name": "cosine_mean", "priority": 3, "goal": {"type": "threshold", "value": COSINE_GOAL}},
                            {"name": "cosine_min"},
                        ],
                    },
                ]
            }
        },
        "evaluator": "common",
        "evaluate_input_model": True,
        "passes": {
            "fuse": {"type": "OrtTransformersOptimization", "model_type": "bert", "opt_level": [0, 99]},
            "quantize": [
                {
                    "type": "OnnxDynamicQuantization",
                    "precision": "int8",
                    "reduce_range": reduce_range,
                    "quant_preprocess": True,
                },
                {
                    "type": "OnnxStaticQuantization",
                    "data_config": "samples",
                    "quant_format": "QDQ",
                    "precision": "int8",
                    "activation_type": "int8",
                    "calibrate_method": "MinMax",
                    "per_channel": True,
                    "reduce_range": reduce_range,
                    "quant_preprocess": True,
                },
            ],
        },
        "search_strategy": {"execution_order": "joint", "sampler": "sequential", "seed": 0},
        "output_dir": "output",
    }


def default_directory() -> Path:
    """Where the quickstart writes when given no folder: ``quickstart`` in the user's data folder for olive
    (``~/.local/share/olive/quickstart`` on Linux), never the current folder, which may be a clone."""
    from platformdirs import user_data_path

    return user_data_path("olive", appauthor=False) / "quickstart"


def check_distributions() -> None:
    """Raise one clear error if a pass distribution the quickstart uses is missing or blocked."""
    from olive.plugins.discovery import normalize_name
    from olive.plugins.registry import get_registry

    entries = get_registry().entries()
    missing: list[str] = []
    blocked: list[str] = []
    for pass_name, distribution in REQUIRED_PASSES.items():
        offered = [e for e in entries if e.name == pass_name and normalize_name(e.distribution) == distribution]
        if not offered:
            if distribution not in missing:
                missing.append(distribution)
        elif all(e.status == "blocked" for e in offered) and distribution not in blocked:
            blocked.append(distribution)
    if missing:
        names = " and ".join(missing)
        raise OliveError(
            f"olive quickstart needs the pass distribution{'s' if len(missing) > 1 else ''} {names}, which "
            f"{'are' if len(missing) > 1 else 'is'} not installed; install with: "
            + " and ".join(install_line(m) for m in missing)
        )
    if blocked:
        raise OliveError(
            f"olive quickstart needs the pass distribution(s) {', '.join(blocked)}, blocked by "
            "OLIVE_LOAD_PLUGINS / OLIVE_DISABLE_PLUGINS; allow them to run the quickstart"
        )


def write_quickstart_files(directory: Path, force: bool = False) -> Path:
    """Write the model, the data and the workflow JSON into ``directory``; returns the workflow's path."""
    from olive.testing.models import bert_like_model, save_model, write_npz_dataset

    workflow_path = directory / WORKFLOW_FILE
    text = json.dumps(quickstart_workflow(), indent=2) + "\n"
    if workflow_path.exists() and not force and workflow_path.read_text(encoding="utf-8") != text:
        raise WorkflowConfigError(
            f"'{workflow_path}' exists and differs from the quickstart's workflow (edited?); run it with "
            f"'olive run --config {workflow_path}', or pass --force to overwrite it",
            owner="DIRECTORY",
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        model = save_model(bert_like_model(seed=0, **MODEL_SHAPE), directory / MODEL_DIR)
        write_npz_dataset(
            directory / DATA_FILE, model, num_samples=NUM_SAMPLES, sequence_length=SEQUENCE_LENGTH, seed=0
        )
        tmp = workflow_path.with_name(f".{WORKFLOW_FILE}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(workflow_path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            # The folder given is the problem: an input to change, as every other bad input is (exit code 2).
            raise WorkflowConfigError(
                f"cannot write the quickstart files into '{directory}' ({reason}); name a folder you can write "
                "in, e.g. olive quickstart ~/olive-quickstart",
                owner="DIRECTORY",
            ) from exc
        raise OliveError(f"cannot write the quickstart files into '{directory}': {reason}") from exc
    return workflow_path


# -------------------------------------------------------------------------------------------------
# Printing
# -------------------------------------------------------------------------------------------------
#: Shown besides the objectives: the input model's and each candidate's own p50, in ms.
_DISPLAY_KEYS = ("latency-p50",)


def print_candidates(output: Any, goals: dict[str, str]) -> None:
    """The input model and every candidate, with the objectives, goals and Pareto flag."""
    from olive.report.data import report_data_from_output
    from olive.report.table import is_paired_ratio, is_timed_apart
    from olive.report.table import print_candidates as print_table

    data = report_data_from_output(output, goals)
    keys = [o.key for o in data.objectives]
    for extra in _DISPLAY_KEYS:
        if extra not in keys and any(metric_value(n, extra) is not None for n in data.candidates()):
            keys.insert(1, extra)
    print_table(data, keys, title="Candidates (the input model first; * is the chosen one)")
    apart = [k for k in keys if is_timed_apart(k)]
    if apart and any(is_paired_ratio(k) for k in keys):
        click.echo(
            f"{', '.join(apart)}: each model timed apart, at another moment and under other load: not comparable "
            "with the ratio, which times each candidate in alternating rounds with the input model"
        )


def metric_value(node: Any, key: str) -> float | None:
    from olive.report.table import metric_value as value

    return value(node if isinstance(node, dict) else node.to_json(), key)


def _comparison(output: Any) -> list[str]:
    """One line per objective: the chosen model against the input model."""
    from olive.report.table import change_words, format_value, spread_words, unit_of

    best, base = output.best, output.footprint[0] if output.footprint else None
    lines: list[str] = []
    if best is None or base is None:
        return lines
    for objective in output.objectives:
        key, higher = objective["key"], objective["higher_is_better"]
        new, old = metric_value(best, key), metric_value(base, key)
        if new is None:
            continue
        divisor, unit = unit_of(key, higher)
        if unit == "ratio":
            # Paired with the input model in alternating rounds: the ratio itself is the comparison.
            if new > 0:
                speedup = new if higher else 1 / new
                words = f"{speedup:.2f}x faster" if speedup >= 1 else f"{1 / speedup:.2f}x slower"
                # Only the ratio: the two models' own p50s were timed apart, under other load, and an arrow between
                # them could contradict it (report.html says the same).
                within = spread_words(best.to_json(), key)
                lines.append(f"{key}: {format_value(new)} ({words}, timed alternately with the input model{within})")
            continue
        if old is None:
            continue
        suffix = f" {unit}" if unit else ""
        text = f"{key}: {format_value(old, divisor)} → {format_value(new, divisor)}{suffix}"
        change = change_words(old, new, unit) if not higher else ""
        if change:
            text += f" ({change})"
        lines.append(text)
    return lines


# -------------------------------------------------------------------------------------------------
@click.command("quickstart")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite an edited quickstart.json in DIRECTORY.")
@click.option("--no-run", is_flag=True, help="Only write the model, data and workflow; run nothing.")
@click.option("--verbose", "-v", is_flag=True, help="Show Olive's log messages.")
def quickstart_command(directory: Path | None, force: bool, no_run: bool, verbose: bool) -> None:
    """Optimize a small BERT-like model: writes it, sample data and a workflow JSON into DIRECTORY, then runs it.

    DIRECTORY defaults to a folder in your user data folder (the command prints where), so a clone or a
    project folder is left as it was; name one (e.g. `olive quickstart .`) to have the files there.

    The workflow searches transformer fusion (olive-passes-graph) followed by dynamic or static int8
    quantization (olive-passes-quant), measuring latency (timed alternately with the input model), size and
    output agreement with the input model, and keeps only models whose mean cosine similarity to it is at
    least 0.99. Edit the JSON it writes and run it again with `olive run --config DIRECTORY/quickstart.json`.
    Pass runs and evaluations go to the per-user cache (`olive cache info`).
    """
    start = time.perf_counter()
    check_distributions()
    directory = user_path(
        str(directory if directory is not None else default_directory()), "DIRECTORY", None, kind="folder"
    ).resolve()
    workflow_path = write_quickstart_files(directory, force=force)
    click.echo(
        f"Wrote a BERT-like model ({MODEL_SHAPE['num_layers']} layers, hidden size {MODEL_SHAPE['hidden_size']})"
    )
    click.echo(f"  model:    {directory / MODEL_DIR / 'model.onnx'}")
    click.echo(f"  data:     {directory / DATA_FILE} ({NUM_SAMPLES} samples of {SEQUENCE_LENGTH} tokens)")
    click.echo(f"  workflow: {workflow_path}")
    from olive.hardware.cpu import REDUCE_RANGE_REASON
    from olive.measure.int8_kernel import int8_matmul_saturates

    if int8_matmul_saturates():
        click.echo(f"  int8:     7-bit weights (reduce_range): {REDUCE_RANGE_REASON}")
    if no_run:
        click.echo(f"Run it with: olive run --config {workflow_path}")
        return

    from olive.report import write_report
    from olive.report.data import goals_of
    from olive.workflows.run import execute, prepare

    prepared = prepare(workflow_path)
    click.echo(f"Searching {prepared.total_size()} combinations of passes...")
    with _quiet_logging(verbose):
        try:
            output = execute(prepared, show_progress=True)
        except KeyboardInterrupt:
            interrupted()
    goals = goals_of(prepared.workflow)
    print_candidates(output, goals)
    report = None
    if output.output_dir is not None and (output.output_dir / "footprint.json").is_file():
        report = write_report(output.output_dir, goals=goals)
    elapsed = time.perf_counter() - start
    if output.best is None:
        error_line(output.reason)
        sys.exit(EXIT_FAILED)
    click.echo("Chosen model, against the input model:")
    for line in _comparison(output):
        click.echo(f"  {line}")
    click.echo(f"  goal: {'; '.join(f'{k} {v}' for k, v in goals.items())} (met)")
    click.echo(f"Chosen model: {output.output_model_path or output.best.model_path}")
    if report is not None:
        click.echo(f"Report:       {report}")
    click.echo(f"Finished in {elapsed:.1f} s. Edit {workflow_path.name} and run it again with:")
    click.echo(f"  olive run --config {workflow_path}")


class _quiet_logging:
    """Olive's warnings (or, with --verbose, everything) through rich on stderr while the run lasts."""

    def __init__(self, verbose: bool):
        self.verbose = verbose
        self._saved: list[tuple[logging.Logger, int, bool]] = []
        self._handler: logging.Handler | None = None

    def __enter__(self) -> None:
        from rich.console import Console
        from rich.logging import RichHandler

        olive_logger = logging.getLogger("olive")
        self._handler = RichHandler(console=Console(stderr=True), show_path=False, show_time=False)
        self._saved = [(olive_logger, olive_logger.level, olive_logger.propagate)]
        olive_logger.addHandler(self._handler)
        olive_logger.propagate = False
        olive_logger.setLevel(logging.DEBUG if self.verbose else logging.WARNING)
        if not self.verbose:
            # The transformer optimizer warns that the model was not exported by PyTorch; true and harmless here.
            optimizer_logger = logging.getLogger("onnxruntime.transformers")
            self._saved.append((optimizer_logger, optimizer_logger.level, optimizer_logger.propagate))
            optimizer_logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        olive_logger = logging.getLogger("olive")
        if self._handler is not None:
            olive_logger.removeHandler(self._handler)
        for logger, level, propagate in self._saved:
            logger.setLevel(level)
            logger.propagate = propagate
