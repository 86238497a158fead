"""``olive optimize MODEL`` and ``olive quantize``: build a workflow for the model, run it, say what it chose.

Microsoft Olive 0.13's flag names are accepted as aliases (``-m/--model_name_or_path``, ``-o/--output_path``,
``-d/--data_name``, ``--dry_run``, ``--act_precision``...). The workflow is built by
:func:`olive.optimize.recipe.build_workflow`; this module parses, prints and runs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import click

from olive.cli.failure import EXIT_CONFIG, EXIT_FAILED, error_line, fail, interrupted, one_line
from olive.exceptions import OliveError, WorkflowConfigError
from olive.hardware.constants import DEVICES
from olive.optimize.data import data_source
from olive.optimize.facts import read_model_facts
from olive.optimize.keep import parse_keep
from olive.optimize.options import (
    DEFAULT_MAX_SAMPLES,
    OptimizeOptions,
    parse_adapters,
    parse_batch_sizes,
    parse_dims,
    parse_latency_budget,
)
from olive.optimize.recipe import Recipe, build_workflow

if TYPE_CHECKING:
    from olive.engine.output import WorkflowOutput

WORKFLOW_FILE = "optimize_workflow.json"


class _OneLineErrors(click.Command):
    """A flag click cannot parse is one line (and exit code 2), like every other error of the command."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            error_line(f"{one_line(exc.format_message()).rstrip('.')}; see 'olive {self.name} --help'")
            sys.exit(EXIT_CONFIG)


def _options(function: Any) -> Any:
    """The options ``optimize`` and ``quantize`` share (ours first, Microsoft Olive's spelling as an alias)."""
    decorators = [
        click.argument("model", required=False),
        click.option(
            "-m", "--model_name_or_path", "model_option", default=None, help="The model (instead of the argument)."
        ),
        click.option(
            "--data",
            "-d",
            "--data_name",
            "data",
            default=None,
            type=click.Path(path_type=Path),
            help="Samples like those the model serves: an .npz of arrays keyed by input name, or a text file "
            "(.txt one per line, .jsonl...) when the model has a tokenizer. Half fits (calibration, the guard's "
            "choices), half judges (every figure and keep), at least 16 samples. Without it, synthetic inputs.",
        ),
        click.option(
            "--validation-data",
            "--validation_data",
            "validation_data",
            default=None,
            type=click.Path(path_type=Path),
            help="Samples to judge on (figures and keeps), of the same kinds as --data; then all of --data fits.",
        ),
        click.option(
            "--keep",
            "keeps",
            multiple=True,
            help="What the chosen model must keep, 'metric=value' (at value or better; >=, <=, > and < work "
            "quoted), repeatable: cosine_mean, cosine_min (worst sample), max_abs_diff, top1. Default: "
            "cosine_min=0.97 and cosine_mean=0.99; top1=0.99 for class scores. A decoder keeps perplexity (1.02x: a "
            "ratio to the float model's), top1_agreement, next_token_kl on held-out text; default perplexity=1.02x.",
        ),
        click.option(
            "--latency-budget",
            "--latency_budget",
            "latency_budget",
            default="fastest",
            show_default=True,
            help="'fastest', or a ratio to the input's median latency (0.6): then the model that agrees best "
            "within it.",
        ),
        click.option(
            "--precision",
            default=None,
            help="auto, int8, uint8, int4, fp16 or fp32 (graph rewrites only). Default: auto for optimize, int8 "
            "for quantize. A decoder: int4 (auto), int8 or fp32.",
        ),
        click.option(
            "--act_precision",
            "--act-precision",
            "act_precision",
            default=None,
            help="Quantize activations too (static quantization calibrated on --data): int8 (with "
            "--use_qdq_format) or uint8.",
        ),
        click.option(
            "--use_qdq_format",
            "--use-qdq-format",
            "--use_qdq_encoding",
            "use_qdq_format",
            is_flag=True,
            help="Static quantization in the QDQ format (QuantizeLinear/DequantizeLinear pairs).",
        ),
        click.option(
            "--block_size", "--block-size", "block_size", type=int, default=None, help="int4 block size (default 32)."
        ),
        click.option(
            "--algorithm", default="rtn", show_default=True, help="Quantization algorithm: rtn (round to nearest)."
        ),
        click.option("--implementation", default=None, help="Quantizer implementation: ort (onnxruntime's)."),
        click.option(
            "--provider",
            "providers",
            multiple=True,
            help="Execution provider to optimize for, repeatable (each is searched); a plugin provider's "
            "options are searched too; 'all': every installed one offering the device. Default: the CPU provider.",
        ),
        click.option("--device", default="cpu", show_default=True, help=f"{', '.join(DEVICES)}."),
        click.option(
            "--max-time", "--max_time", "max_time", type=float, default=None, help="Stop searching after this many s."
        ),
        click.option(
            "--max_samples",
            "--max-samples",
            "max_samples",
            type=int,
            default=DEFAULT_MAX_SAMPLES,
            show_default=True,
            help="Use at most this many samples of --data.",
        ),
        click.option(
            "--batch_size",
            "--batch-size",
            "batch_size",
            default="auto",
            show_default=True,
            help="The batch size the model is served at, or a list (1,8,32): held-out samples are batched together "
            "at each (shuffled, seed 0, padded as the data is; at 1 each at its real length) and every figure and "
            "keep is the worst over them. auto: 1,32 for a model with an attention mask (one request at a time, "
            "and sentence-transformers' encode batch), 1 otherwise.",
        ),
        click.option(
            "--max-length",
            "--max_seq_len",
            "max_length",
            type=int,
            default=None,
            help="Text data: tokens per sample (padded; latency is timed at this length). Default: 128, or the "
            "model's longest input when shorter.",
        ),
        click.option(
            "--dim_param", "--dim-param", "dim_param", default=None, help="Free dimension names, comma separated."
        ),
        click.option(
            "--dim_value", "--dim-value", "dim_value", default=None, help="Their sizes for synthetic inputs (1,128)."
        ),
        click.option("--task", "-t", default=None, help="Task of a Hugging Face model folder."),
        click.option(
            "--adapter",
            "adapters",
            multiple=True,
            metavar="NAME=PATH",
            help="A decoder's PEFT LoRA adapter folder, repeatable: the base is built once, each adapter is written "
            "as NAME.onnx_adapter beside it and measured with it active (perplexity, top-1 agreement with PyTorch "
            "with it merged, decode tokens/s against no adapter).",
        ),
        click.option(
            "--tokenizer",
            default=None,
            type=click.Path(path_type=Path),
            help="Tokenizer folder for text --data when the model has none beside it.",
        ),
        click.option(
            "--fusion/--no-fusion",
            default=None,
            help="Transformer fusion (default: when the model is a transformer). olive quantize never fuses: "
            "--fusion is an error there.",
        ),
        click.option(
            "--cache-dir",
            "cache_dir",
            default=None,
            type=click.Path(file_okay=False, path_type=Path),
            help="Cache folder (reruns reuse it). Default: the per-user cache, as for olive run.",
        ),
        click.option(
            "--dry-run",
            "--dry_run",
            "dry_run",
            is_flag=True,
            help="Print the workflow and the size of its search; run nothing, write nothing.",
        ),
        click.option(
            "--save_config_file",
            "--save-config",
            "save_config",
            is_flag=True,
            help=f"Write the workflow ({WORKFLOW_FILE}) into the output folder; run nothing.",
        ),
        click.option("--verbose", "-v", is_flag=True, help="Olive's log messages and tracebacks of errors."),
    ]
    for decorator in reversed(decorators):
        function = decorator(function)
    return function


def _run(quantize_only: bool, output_default: str, params: dict[str, Any]) -> None:
    verbose = params["verbose"]
    try:
        _main(quantize_only, output_default, params)
    except OliveError as exc:
        fail(exc, verbose)
    except KeyboardInterrupt:
        interrupted()


def _main(quantize_only: bool, output_default: str, params: dict[str, Any]) -> None:
    from olive.cli.run import _logging, _print_dry_run, _print_summary
    from olive.optimize.installed import ALL_PROVIDERS, installed_now, installed_plugin_providers, left_out_by_all
    from olive.workflows.run import execute, prepare

    start = time.perf_counter()
    model = _model_argument(params["model"], params["model_option"])
    options = _optimize_options(quantize_only, output_default, params)
    facts = read_model_facts(model, options.task)
    installed, providers = installed_now(options.providers, options.device)
    left_out = left_out_by_all(options.device) if ALL_PROVIDERS in options.providers else []
    if providers != options.providers:
        options = attrs.evolve(options, providers=providers)
    source = data_source(
        options.data,
        facts,
        installed.data_containers,
        options.tokenizer,
        validation=options.validation_data,
        max_samples=options.max_samples,
    )
    recipe = build_workflow(facts, options, installed, source)
    workflow_path = options.output_dir / WORKFLOW_FILE

    with _logging(verbose=params["verbose"]):
        prepared = _prepare(prepare, recipe)
        _print_plan(facts.describe(), recipe, prepared.total_size(), options, installed_plugin_providers())
        if ALL_PROVIDERS in params["providers"]:
            searched = ", ".join(options.providers)
            rest = f"; left out: {'; '.join(left_out)}" if left_out else "; no other provider is installed"
            click.echo(f"Note:   --provider all on {options.device}: {searched}{rest} (olive eps lists them)")
        if params["dry_run"]:
            click.echo(json.dumps(recipe.document.to_json(), indent=2))
            _print_dry_run(prepared)
            return
        _write_workflow(options.output_dir, workflow_path, recipe)
        if params["save_config"]:
            click.echo(f"Wrote {workflow_path}; run it with: olive run {workflow_path}")
            return
        with _quiet_library_logs(params["verbose"]):
            output = execute(prepared, show_progress=True)
    _print_summary(output)
    _print_outcome(output, recipe, options, prepared.total_size(), workflow_path)
    click.echo(f"Finished in {time.perf_counter() - start:.1f} s")


def _optimize_options(quantize_only: bool, output_default: str, params: dict[str, Any]) -> OptimizeOptions:
    return OptimizeOptions(
        output_dir=Path(params["output"] or output_default).expanduser().absolute(),
        cache_dir=params["cache_dir"].expanduser().absolute() if params["cache_dir"] else None,
        keeps=tuple(parse_keep(k) for k in params["keeps"]),
        latency_budget=parse_latency_budget(params["latency_budget"]),
        precision=(params["precision"] or ("int8" if quantize_only else "auto")).strip().lower(),
        act_precision=params["act_precision"].strip().lower() if params["act_precision"] else None,
        use_qdq_format=params["use_qdq_format"],
        block_size=params["block_size"],
        algorithm=params["algorithm"],
        implementation=params["implementation"],
        providers=tuple(params["providers"]),
        device=params["device"].strip().lower(),
        max_time=params["max_time"],
        data=params["data"],
        validation_data=params["validation_data"],
        tokenizer=params["tokenizer"],
        max_samples=params["max_samples"],
        batch_sizes=parse_batch_sizes(params["batch_size"]),
        max_length=params["max_length"],
        dim_values=parse_dims(params["dim_param"], params["dim_value"]),
        fusion=params["fusion"],
        task=params["task"],
        quantize_only=quantize_only,
        adapters=parse_adapters(params["adapters"]),
    )


def _write_workflow(output_dir: Path, workflow_path: Path, recipe: Recipe) -> None:
    from olive.engine.output_writer import claim_files, foreign_files, refuse_foreign

    if output_dir.is_dir():
        refuse_foreign(output_dir, foreign_files(output_dir, [WORKFLOW_FILE]), WorkflowConfigError)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        claim_files(output_dir, [WORKFLOW_FILE])
        _write_text(workflow_path, json.dumps(recipe.document.to_json(), indent=2) + "\n")
    except OSError as exc:
        raise WorkflowConfigError(
            f"cannot write into '{output_dir}' ({exc.strerror or exc})", owner="--output"
        ) from exc


def _print_outcome(
    output: WorkflowOutput, recipe: Recipe, options: OptimizeOptions, total: int, workflow_path: Path
) -> None:
    """The chosen model against the input (or float) model and where everything is; exit 1 when none keeps."""
    from olive.optimize.summary import closest_miss, comparison_lines, decoder_lines, decoder_miss, search_cut_short

    output_dir = options.output_dir
    cut_short = search_cut_short(output, total, options.max_time)
    if output.best is None:
        if cut_short:
            click.echo(f"Search:   {cut_short}")
        click.echo(f"Workflow: {workflow_path} (edit it and rerun with olive run; finished runs are cached)")
        if recipe.decoder:
            error_line(decoder_miss(output, recipe.keeps))
        else:
            error_line(closest_miss(output, recipe.keeps, recipe.latency_budget))
        sys.exit(EXIT_FAILED)
    if recipe.decoder:
        click.echo("Chosen model, against the float model:")
        for line in decoder_lines(output, recipe.keeps, synthetic=recipe.synthetic):
            click.echo(f"  {line}")
        if recipe.synthetic:
            click.echo(
                "  (agreement on random token ids says little about text; give --data FILE, text like the model's "
                "prompts, to fit the int4 guard on it and judge perplexity on text it did not fit on)"
            )
        click.echo(
            f"Model:    {output_dir} (onnxruntime_genai.Model('{output_dir}') loads and serves the folder as it is)"
        )
        if recipe.adapters:
            from olive.optimize.summary import adapter_lines, adapter_usage

            click.echo("Adapters, each active, against the float model with it:")
            for line in adapter_lines(output, recipe.adapters, synthetic=recipe.synthetic):
                click.echo(f"  {line}")
            for line in adapter_usage(output_dir, recipe.adapters):
                click.echo(line)
    else:
        click.echo("Chosen model, against the input model:")
        for line in comparison_lines(output, recipe.keeps, synthetic=recipe.synthetic):
            click.echo(f"  {line}")
        if recipe.synthetic:
            click.echo("  (agreement on synthetic inputs; give --data to judge it on real samples)")
        click.echo(f"Model:    {output.output_model_path or output.best.model_path}")
    report = output_dir / "report.html"
    if report.is_file():
        click.echo(f"Report:   {report}")
    click.echo(f"Workflow: {workflow_path} (olive run {workflow_path} reruns it from the cache)")
    if cut_short:
        click.echo(f"Search:   {cut_short}")


@contextlib.contextmanager
def _quiet_library_logs(verbose: bool) -> Iterator[None]:
    """onnxruntime's transformer optimizer warns that a model was not exported by PyTorch (true of any other
    exporter and harmless: the fusions are checked by the pass); shown with --verbose only."""
    logger = logging.getLogger("onnxruntime.transformers")
    saved = logger.level
    if not verbose:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(saved)


def _model_argument(argument: str | None, option: str | None) -> str:
    if argument and option and Path(argument).expanduser().absolute() != Path(option).expanduser().absolute():
        raise WorkflowConfigError(
            f"two models given ('{argument}' and -m '{option}'); give one", owner="--model_name_or_path"
        )
    model = argument or option
    if not model:
        raise WorkflowConfigError(
            "no model given; run olive optimize MODEL (an ONNX file or a Hugging Face model folder)", owner="MODEL"
        )
    return model


def _prepare(prepare: Any, recipe: Recipe) -> Any:
    try:
        # The one data file is split, or the command stops saying how to give more (as --data's own check).
        return prepare(recipe.document, split_required=True)
    except WorkflowConfigError as exc:
        # A provider the workflow names came from --provider: say so instead of the workflow's JSON path.
        if (exc.owner or "").startswith("systems."):
            raise WorkflowConfigError(exc.reason, owner="--provider") from exc
        adapter = _adapter_owner(exc.owner or "", recipe)
        if adapter is not None:
            raise WorkflowConfigError(exc.reason, owner=adapter) from exc
        data_options = {f"data_configs[{i}]": option for i, option in enumerate(("--data", "--validation-data"))}
        option = next((o for path, o in data_options.items() if (exc.owner or "").startswith(path)), None)
        if option is not None:
            raise WorkflowConfigError(exc.reason, owner=option) from exc
        raise


def _adapter_owner(owner: str, recipe: Recipe) -> str | None:
    """``--adapter NAME=PATH`` for an error the input model's check gave about one of its adapters."""
    prefix = "input_model.adapters"
    if not owner.startswith(prefix):
        return None
    rest = owner[len(prefix) :].lstrip(".")
    name = next((n for n in recipe.adapters if rest == n or rest.startswith(f"{n}.")), None)
    if name is None:
        return "--adapter"
    return f"--adapter {name}={recipe.document.input_model.adapters[name]}"


def _print_plan(described: str, recipe: Recipe, size: int, options: OptimizeOptions, plugins: list[str]) -> None:
    passes = " > ".join(
        f"{key} ({spec['type']})" if isinstance(spec, dict) else key for key, spec in recipe.document.passes.items()
    )
    click.echo(f"Model:  {described}")
    if recipe.document.search_strategy.stop_when_goals_met:
        click.echo(f"Search: {passes}; up to {size} candidate(s), stopping at the first that keeps every keep")
    else:
        click.echo(f"Search: {passes}; {size} candidate(s)")
    click.echo(f"Goal:   {recipe.objective}")
    for note in recipe.notes:
        click.echo(f"Note:   {note}")
    unsearched = [p for p in plugins if p not in options.providers]
    if unsearched and not options.providers:
        click.echo(
            f"Note:   {', '.join(unsearched)} installed; add --provider NAME (or --provider all) to search "
            f"{'it' if len(unsearched) == 1 else 'them'} too"
        )


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _output_option(default: str) -> Any:
    return click.option(
        "-o",
        "--output",
        "--output_path",
        "output",
        default=None,
        type=click.Path(file_okay=False),
        help=f"Output folder (default: {default}).",
    )


@click.command("optimize", cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@_options
@_output_option("optimized-model")
def optimize_command(**params: Any) -> None:
    """Optimize MODEL (an ONNX file, or a Hugging Face folder with olive-passes-torch) into the fastest model that
    keeps its outputs. A Hugging Face decoder (a causal language model, with olive-passes-genai) is built with
    onnxruntime-genai's builder and quantized to int4, the MatMuls the keep needs kept at 8 bits.

    Builds a workflow from the model and what is installed (transformer fusion, int8 with an accuracy guard when
    --data is given, the targets' providers), runs it with a progress bar and a table, and writes the chosen
    model, report.html and the workflow (optimize_workflow.json; olive run reruns it from the cache) into the
    output folder. Exit codes: 0 a model was chosen; 1 none keeps --keep (the closest is named); 2 bad flags
    or model.
    """
    _run(False, "optimized-model", params)


@click.command("quantize", cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@_options
@_output_option("quantized-model")
def quantize_command(**params: Any) -> None:
    """Quantize MODEL (int8 by default) without graph rewrites; otherwise as olive optimize (see its help).

    Takes Microsoft Olive's flags: -m, --algorithm (rtn), --precision, --act_precision, --implementation (ort),
    -d/--data_name (a local file), --max_samples, --batch_size, -o.
    """
    _run(True, "quantized-model", params)
