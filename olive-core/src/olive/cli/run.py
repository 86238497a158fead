"""``olive run --config FILE [--dry-run]``."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from olive.cli.failure import EXIT_FAILED, INTERRUPTED_BEFORE_RUN, error_line, fail, interrupted
from olive.config_errors import user_path
from olive.exceptions import OliveError, WorkflowConfigError


@click.command("run")
@click.argument("config_file", required=False, type=click.Path(path_type=Path))
@click.option(
    "--config",
    "config_path",
    default=None,
    type=click.Path(path_type=Path),
    help="The workflow file (JSON or YAML); or give it as the argument.",
)
@click.option("--dry-run", is_flag=True, help="Validate the workflow and print the search space; run nothing.")
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Override the workflow's output_dir.",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Override the workflow's cache_dir.",
)
@click.option("--verbose", "-v", is_flag=True, help="Show tracebacks of errors.")
def run_command(
    config_file: Path | None,
    config_path: Path | None,
    dry_run: bool,
    output_dir: Path | None,
    cache_dir: Path | None,
    verbose: bool,
) -> None:
    """Run a workflow: optimize the input model with the configured passes and search.

    `olive run FILE` and `olive run --config FILE` are the same. Exit codes: 0 a model was produced; 1 the
    run failed or nothing met the goals; 2 the config is invalid.
    """
    from olive.workflows.run import execute, prepare

    if config_file is not None and config_path is not None and config_file != config_path:
        fail(
            WorkflowConfigError(f"two workflow files given ('{config_file}' and --config '{config_path}'); give one"),
            verbose,
        )
    config_path = config_path or config_file
    if config_path is None:
        fail(WorkflowConfigError("no workflow file given; run `olive run FILE` (a JSON or YAML workflow)"), verbose)

    overrides = {}
    try:
        for key, option, value in (("output_dir", "--output-dir", output_dir), ("cache_dir", "--cache-dir", cache_dir)):
            if value is not None:
                overrides[key] = str(user_path(str(value), option, None, kind="folder"))
    except OliveError as exc:
        fail(exc, verbose)
    with _logging(verbose):
        try:
            with _held_logs(show_on_error=verbose):
                prepared = prepare(config_path, **overrides)
        except OliveError as exc:
            fail(exc, verbose)
        except KeyboardInterrupt:
            interrupted(INTERRUPTED_BEFORE_RUN)
        if dry_run:
            _print_dry_run(prepared)
            return
        try:
            output = execute(prepared, show_progress=True)
        except OliveError as exc:
            fail(exc, verbose)
        except KeyboardInterrupt:
            interrupted()
    _print_summary(output)
    if output.best is None:
        error_line(output.reason)
        sys.exit(EXIT_FAILED)


class _Holding(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _held_logs(show_on_error: bool) -> Iterator[None]:
    """Hold back what Olive logs while the workflow is validated (deprecation notes, say): shown once it is
    valid, dropped when it is not, so an invalid workflow's output is its one ``Error:`` line."""
    logger = logging.getLogger("olive")
    holding = _Holding()
    handlers = list(logger.handlers)
    logger.handlers = [holding]
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        logger.handlers = handlers
        if not failed or show_on_error:
            for record in holding.records:
                for handler in handlers:
                    if record.levelno >= handler.level:
                        handler.handle(record)


@contextlib.contextmanager
def _logging(verbose: bool) -> Iterator[None]:
    """Olive's log records, and those of every plugin's package (``olive_passes_torch``...), go to stderr through
    rich while the command runs (and only then)."""
    from rich.console import Console
    from rich.logging import RichHandler

    from olive.logs import olive_logs

    handler = RichHandler(console=Console(stderr=True), show_path=verbose, show_time=False)
    with olive_logs(logging.DEBUG if verbose else logging.INFO, handler):
        yield


def _print_dry_run(prepared) -> None:
    from rich.console import Console
    from rich.table import Table

    from olive.cli.layout import minimum_width

    workflow = prepared.workflow
    strategy = workflow.search_strategy
    rows = [
        (plan.key, alt.identity.name, str(alt.search_space.size()), ", ".join(alt.search_space.params) or "-")
        for plan in prepared.plans
        for alt in plan.alternatives
    ]
    table = Table(title="Passes")
    table.add_column("pass key", no_wrap=True)
    table.add_column("pass", no_wrap=True)
    table.add_column("points", justify="right", no_wrap=True)
    # Param names wrap after their commas, never inside a name.
    table.add_column("searched params", overflow="fold")
    for row in rows:
        table.add_row(*row)
    console = Console()
    if minimum_width(table, console.width) <= console.width:
        console.print(table)
    else:
        console.print("Passes", style="bold")
        for key, name, points, params in rows:
            console.print(f"  {key}: {name}, {points} point(s); searched: {params}", highlight=False)
    order = strategy.execution_order if strategy else "none (each pass runs once with its default config)"
    console.print(f"search: {order}" + (f", sampler {strategy.sampler}" if strategy else ""))
    for key, size in prepared.search_space_sizes().items():
        console.print(f"  {key}: {size} point(s)")
    targets = prepared.targets or [prepared.accelerator]
    if len(targets) > 1:
        console.print(f"  targets: {len(targets)}")
    console.print(f"total search space: {prepared.total_size()} point(s)")
    if strategy is not None and strategy.max_samples:
        console.print(f"max_samples: {strategy.max_samples}")
    if len(targets) > 1:
        # Each label carries its options; the line wraps between labels, never inside one.
        labels = ", ".join(target.label for target in targets)
        console.print(f"targets ({len(targets)}): {labels}", highlight=False, markup=False)
    else:
        console.print(
            f"accelerator: {targets[0].label} (execution providers: {', '.join(prepared.execution_providers)})",
            highlight=False,
            markup=False,
        )
    for shared in prepared.shared_data:
        console.print(f"data: {shared.describe()}", highlight=False, markup=False)
    console.print(_cpu_line(), highlight=False, markup=False)
    console.print("config is valid; nothing was run (--dry-run)")


def _cpu_line() -> str:
    """The CPU the run would measure on, and what it changes in the passes' defaults."""
    from olive.hardware.cpu import REDUCE_RANGE_REASON, describe_cpu
    from olive.measure.int8_kernel import int8_matmul_saturates

    line = f"cpu: {describe_cpu()}"
    if int8_matmul_saturates():
        line += f"; int8 quantization passes default to 7-bit weights (reduce_range) on it: {REDUCE_RANGE_REASON}"
    return line


def _print_summary(output) -> None:
    from rich.console import Console

    from olive.engine.results import Status
    from olive.report.data import FIT_PREFIX, report_data_from_output
    from olive.report.table import print_candidates

    console = Console()
    data = report_data_from_output(output)
    # Objectives first, then what was measured without a priority (it ranks nothing, but a user asked for it),
    # then the guard's figures on the samples it fit on, beside those measured on others.
    measured = [k for k in data.metric_keys() if not k.startswith(FIT_PREFIX)]
    keys = measured + [k for k in data.metric_keys() if k.startswith(FIT_PREFIX)]
    print_candidates(data, keys, console, title="Candidates")
    failed = sum(1 for n in output.footprint if n.status is Status.FAILED)
    pruned = sum(1 for n in output.footprint if n.status is Status.PRUNED)
    runs = [n for n in output.footprint if n.pass_key and n.status is not Status.PRUNED]
    cached = sum(1 for n in runs if n.cached)
    console.print(f"{len(runs)} pass run(s) ({cached} from cache), {failed} failed, {pruned} pruned")
    if output.best is not None:
        chain = " > ".join(f"{n.pass_key} ({n.pass_name})" for n in output.lineage(output.best))
        console.print(f"chosen model: {output.best.model_id} from {chain}", highlight=False)
        console.print(f"written to: {output.output_dir}", soft_wrap=True)
