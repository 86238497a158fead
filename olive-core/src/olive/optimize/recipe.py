"""The workflow ``olive optimize`` runs, built from the model's facts, the user's options and what is installed.

:func:`build_workflow` is a pure function: it reads nothing and runs nothing, so every choice below is
testable on its own. It uses only passes the registry lists (``installed.passes``); a pass whose distribution
is missing is left out with a note naming the distribution and its install line, or, when the user asked for
what only that pass does, is an error saying so.

Every param a pass would search by default is pinned: the search is only what is written here (a workflow
that searched, say, the calibration method too would quietly triple). The search it writes (measured defaults:
``benchmarks/bench_optimize.py``):

- **Convert** first when the input is not ONNX (the pass that takes its model type, ``OnnxConversion`` for a
  Hugging Face folder).
- **Fuse** a transformer's attention, layer norms and GELU (``OrtTransformersOptimization``; heads and
  hidden size are inferred from the graph) for fp32, fp16 and int4, searched against the unfused graph
  (``only_onnxruntime``): which is faster depends on the precision and the hardware. Not for int8 (the fused
  quantized graph measured slower) nor for plugin providers. ``--fusion`` fuses, without the alternative;
  ``olive quantize`` and ``--no-fusion`` leave the graph alone.
- **Quantize** for the precision: int8 with data is ``OnnxAccuracyGuardedQuantization`` (dynamic int8,
  per-channel weights, embeddings quantized, the nodes that cost agreement most kept in float until the keeps
  hold on the data); without data, ``OnnxDynamicQuantization``; ``--act_precision``/``--use_qdq_format`` make
  it ``OnnxStaticQuantization``; int4 is ``OnnxBlockWiseRtnQuantization``; fp16 ``OnnxFloatToFloat16``.
- **For this CPU**: int8 weights are 7-bit (``reduce_range``) where onnxruntime's CPU int8 MatMul adds pairs of
  products in 16 bits (x86-64 without VNNI or AMX), as onnxruntime advises there; 8-bit elsewhere, where 7 bits
  only cost precision. The plan says which, and why.
- **Fit and judge on different samples**: the passes (calibration, the guard's choices) fit on one half of
  ``--data`` and every figure and keep is measured on the other (:mod:`olive.data.split`), or on
  ``--validation-data`` when given, so the promise holds on samples the search did not fit on.
- **Judge** every candidate against the input model: latency as a ratio of medians timed in alternating rounds
  with it (``ratio_p50``), agreement (``--keep``, as goals), size.
- **At the batch size it is served with** (:func:`served_batch_sizes`: ``--batch-size``, else 1 and 32 for a
  model with an attention mask, 1 otherwise): the agreement metric (``served_batch_size``) and the guard
  (``batch_size``) batch the samples together as a server would (shuffled, seed 0, padded as the data is) and
  take the worst over the sizes, so dynamic int8, whose output depends on the batch-mates, is judged by its worst
  batching. Above batch 1, static int8 (calibrated ranges: batch-independent) is searched in the same guard after
  every dynamic step (``quant_mode``, the parent of the target).
- **Choose**: the fastest candidate that meets every keep on the judging samples. A guard that meets its
  target on the samples it fit on can miss on the others (its worst fitted sample is an optimistic estimate of
  the worst unseen one), so the guard's targets are searched from the keeps towards a perfect score, every keep
  tightened alike, loosest first: the search stops at the first model that keeps everything on the judging
  samples, or reports the closest. With ``--latency-budget R``, the
  one that agrees best (first keep first) among those within ``R`` times the input's latency; the guard's target
  on the first keep is searched, so the search spends the budget on float nodes that buy agreement.
- **Where**: every ``--provider`` is a target the candidates are measured on; a plugin provider's options
  with search values (OpenVINO's precision hint) are searched.

A **decoder** (a Hugging Face causal language model) takes another road (:func:`_decoder_workflow`), through the
passes of olive-passes-genai, named in the workflow by type only:

- **Build** with ``ModelBuilder`` (onnxruntime-genai's builder: a KV cache, ``genai_config.json``, the tokenizer)
  in fp32: the float model every figure compares with.
- **Quantize** to int4 (the default on every device) with ``OnnxGuardedInt4``: the MatMuls that cost the keep most
  stay at 8 bits until the keep holds on the text it fits on; its target is searched from the keep towards the
  float model, loosest first, stopping at the first model that keeps everything on the judging text. Without
  ``--data`` there is no text to fit on: plain int4 (``OnnxKQuantQuantization``, symmetric). ``--precision int8``
  is 8-bit weights the same way; ``fp32`` is the build alone.
- **Judge** on the judging half of the text (the data-roles split: the guard never saw it): decode tokens/s as a
  ratio to the float model's, timed in alternating rounds through ``onnxruntime_genai.Generator``; perplexity and
  next-token top-1 agreement on fixed windows; size. The keeps (default ``perplexity<=1.02x``) are goals.
- **Adapters** (``--adapter NAME=PATH``, PEFT LoRA folders of the model): the float build carries an input for
  each adapted weight (``ModelBuilder``'s ``extract_adapters``: float whatever the precision, empty by default so
  the base runs with none) and one ``NAME.onnx_adapter`` per adapter, which every later model keeps. Each adapter
  is measured with it active, under metrics named ``<type>@NAME``: perplexity on the judging text, top-1 agreement
  against PyTorch with the adapter merged, decode tokens/s as a ratio to the same model with no adapter (timed in
  alternating rounds). The keeps hold for the base.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from olive.data.split import SPLIT_RULE
from olive.exceptions import WorkflowConfigError
from olive.hardware.cpu import REDUCE_RANGE_REASON
from olive.optimize.data import DATA_NAME, TEXT_SUFFIXES, VALIDATION_NAME, DataSource, data_config, synthetic_specs
from olive.optimize.facts import ModelFacts
from olive.optimize.keep import CLASSIFIER_KEEPS, DECODER_KEEPS, EMBEDDING_KEEPS, GUARD_METRICS, Keep
from olive.optimize.options import DEFAULT_MAX_LENGTH, DEFAULT_MAX_SAMPLES, OptimizeOptions
from olive.plugins.install_hints import distribution_of_pass, install_line
from olive.workflows.document import (
    AcceleratorEntry,
    InputModelEntry,
    SearchEntry,
    SystemEntry,
    WorkflowDocument,
)

__all__ = [
    "DEFAULT_PROVIDERS",
    "GUARD_TARGET_STEPS",
    "LATENCY_REPEAT",
    "Installed",
    "Recipe",
    "build_workflow",
    "default_keeps",
    "guard_targets",
    "served_batch_sizes",
]

WORKFLOW_ID = "optimize"
EVALUATOR = "optimize"
SYSTEM = "target"
#: device -> the provider that runs on it when none is named
DEFAULT_PROVIDERS = {"cpu": "CPUExecutionProvider", "gpu": "CUDAExecutionProvider", "npu": "QNNExecutionProvider"}
#: the fraction of the way from a keep to a perfect score (1.0, or 0 for max_abs_diff) at which the guard's
#: searched targets sit: for cosine_min >= 0.97, 0.97 0.98 0.99 0.992 0.994 0.996 0.998 (the benchmark's list)
GUARD_TARGET_STEPS = (0.0, 1 / 3, 2 / 3, 11 / 15, 12 / 15, 13 / 15, 14 / 15)
#: timed runs of each candidate (and as many of the input model, alternating): about a second for MiniLM
LATENCY_REPEAT = 200
LATENCY_WARMUP = 10
#: at most this many nodes stay float in a guarded model (the guard's own default, 6, and each costs speed)
MAX_FP32_NODES = 6
INT8_PRECISIONS = ("int8", "uint8")
#: the batch sizes a model with an attention mask is served at when --batch-size is not given: one request at a
#: time, and sentence-transformers' ``encode`` default batch (32)
DEFAULT_MASKED_BATCH_SIZES = (1, 32)


@attrs.frozen
class Installed:
    """What the environment offers, as the registries list it (no pass is imported to find out).

    :param passes: pass names that can be used.
    :param data_containers: plugin data container types that can be used.
    :param plugin_providers: plugin execution provider -> the names of its options that have search values.
    """

    passes: frozenset[str]
    data_containers: frozenset[str] = frozenset()
    plugin_providers: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: model type -> the pass that converts it to ONNX (its first pass)
    converters: Mapping[str, str] = attrs.field(factory=dict)
    #: onnxruntime's CPU int8 MatMul adds pairs of products in 16 bits on this CPU (``olive.hardware.cpu``): int8
    #: weights get ``reduce_range`` when the CPU provider is a target
    int8_saturates: bool = False


@attrs.frozen
class Recipe:
    """A workflow and what to tell the user about it before it runs."""

    document: WorkflowDocument
    keeps: tuple[Keep, ...]
    #: the latency ratio to the input model the chosen model must stay within (None: the fastest)
    latency_budget: float | None = None
    notes: tuple[str, ...] = ()
    synthetic: bool = False
    #: a decoder's workflow (generative metrics; :func:`_decoder_workflow`)
    decoder: bool = False
    #: the batch sizes agreement and keeps are measured at (empty: the data's own batches, or synthetic inputs)
    batch_sizes: tuple[int, ...] = ()
    #: a decoder's adapters (``--adapter``), each measured with it active under metrics named ``<type>@<name>``
    adapters: tuple[str, ...] = ()

    @property
    def workflow(self) -> dict[str, Any]:
        """The workflow file's content."""
        return self.document.to_json()

    @property
    def objective(self) -> str:
        kept = " and ".join(str(k) for k in self.keeps)
        if self.decoder:
            if not self.keeps:
                return "the fastest decoder (no keep held: without --data there is no text to judge it on)"
            return f"the fastest decoder that keeps {kept} against the float model on held-out text"
        if self.latency_budget is None:
            return f"the fastest model that keeps {kept}"
        return f"the model that agrees best within {self.latency_budget:g}x the input's latency, keeping {kept}"


def default_keeps(facts: ModelFacts) -> tuple[Keep, ...]:
    """What a model keeps when ``--keep`` is not given: its predicted class for class scores, else its vectors
    (mean-pooled sentence embeddings for a token sequence with a mask)."""
    return CLASSIFIER_KEEPS if facts.classifier else EMBEDDING_KEEPS


def guard_targets(keep: Keep) -> list[float]:
    """The accuracy guard's targets searched for ``keep`` under a latency budget, from the keep itself towards a
    perfect score."""
    best = 1.0 if keep.higher_is_better else 0.0
    values = [round(keep.value + (best - keep.value) * step, 6) for step in GUARD_TARGET_STEPS]
    return list(dict.fromkeys(values))


def _tightened(keeps: list[Keep]) -> list[list[float]]:
    """The guard's target values at each of ``GUARD_TARGET_STEPS``, every keep moved the same fraction of the way
    towards a perfect score (loosest first, repeats dropped)."""
    steps = []
    for step in GUARD_TARGET_STEPS:
        values = [round(k.value + ((1.0 if k.higher_is_better else 0.0) - k.value) * step, 6) for k in keeps]
        if values not in steps:
            steps.append(values)
    return steps


def build_workflow(facts: ModelFacts, options: OptimizeOptions, installed: Installed, data: DataSource) -> Recipe:
    """The workflow for ``facts`` under ``options`` with what ``installed`` offers (see the module docstring)."""
    if facts.decoder:
        return _decoder_workflow(facts, options, installed, data)
    _check_encoder(facts, options)
    if options.adapters:
        raise WorkflowConfigError(
            f"'{facts.path.name}' is not a decoder (a Hugging Face causal language model), and LoRA adapters are "
            "built here for decoders only; leave --adapter out, or merge the adapter (peft's merge_and_unload) and "
            "give the merged folder",
            owner="--adapter",
        )
    notes: list[str] = []
    sizes = served_batch_sizes(facts, options, data, notes)
    options = attrs.evolve(options, batch_sizes=sizes)
    keeps = options.keeps or default_keeps(facts)
    if any(k.metric == "top1" for k in keeps) and not facts.classifier:
        notes.append("top1 compares the index of the largest value of each output vector; it suits class scores")
    passes: dict[str, Any] = {}
    if not facts.is_onnx:
        passes["convert"] = _conversion(facts, installed, data)
    precision = _precision(options, facts, data)
    _add_fusion(passes, facts, options, installed, precision, notes)
    _add_quantization(passes, precision, facts, options, installed, data, keeps, notes)
    if not passes or list(passes) == ["convert"]:
        _nothing_to_optimize(facts, options, installed, precision)
    fits = _fits_on_data(passes)
    if not options.keeps and facts.classifier:
        keeps = _classifier_keeps(_judged_samples(options, data, fits), notes)
    notes.extend(_data_notes(options, data, fits))
    # The guard's targets run loosest first: the first model that keeps everything is the fastest that does.
    stop = (
        "quantize" in passes
        and isinstance(passes["quantize"].get("target_value"), dict)
        and options.latency_budget is None
    )
    metrics = _metrics(facts, options, data, keeps)
    configs = _data_configs(data, options, _max_length(facts, options, data))
    workflow = _document(facts, options, installed, metrics, passes, configs, stop)
    served = () if data.synthetic else sizes
    return Recipe(workflow, tuple(keeps), options.latency_budget, tuple(notes), data.synthetic, batch_sizes=served)


def served_batch_sizes(
    facts: ModelFacts, options: OptimizeOptions, data: DataSource, notes: list[str] | None = None
) -> tuple[int, ...]:
    """The batch sizes an encoder is served at: ``--batch-size``, else :data:`DEFAULT_MASKED_BATCH_SIZES` for a
    model with an attention mask (sentence embeddings, text classification: served in batches) and 1 otherwise
    (nothing says how its requests are batched) or where the model's batch axis is fixed. ``notes`` gets what the
    summary says about them."""
    fixed = sorted({shape[0] for _, shape, _ in facts.inputs if shape and isinstance(shape[0], int) and shape[0] > 0})
    if options.batch_sizes:
        sizes = options.batch_sizes
        if fixed and any(size != fixed[0] for size in sizes):
            raise WorkflowConfigError(
                f"'{facts.path.name}' takes batches of {fixed[0]} only (its inputs' first axis is fixed); give "
                f"--batch-size {fixed[0]}, or export the model with a free batch axis",
                owner="--batch-size",
            )
        why = "--batch-size"
    elif fixed:
        sizes, why = (fixed[0],), "the model's inputs take batches of that size only"
    elif facts.mask_input is not None:
        sizes = DEFAULT_MASKED_BATCH_SIZES
        why = (
            "one request at a time and sentence-transformers' encode batch, the default for a model with an "
            "attention mask"
        )
    else:
        sizes, why = (1,), "the default for a model without an attention mask"
    if notes is not None and not data.synthetic:
        shown = " and ".join(str(s) for s in sizes)
        if len(sizes) > 1:
            what = f"at batch sizes {shown} ({why}): held-out samples shuffled (seed 0) and batched together at each"
            what += ", padded as the data is; each figure is the worst over them"
        else:
            what = f"at batch size {shown} ({why})"
            if sizes[0] > 1:
                what += ": held-out samples shuffled (seed 0) and batched together, padded as the data is"
        notes.append(f"agreement and every keep are measured {what}; --batch-size sets them")
    elif notes is not None and options.batch_sizes:
        notes.append("--batch-size: synthetic inputs are one batch; give --data to measure at served batch sizes")
    return tuple(sizes)


def _check_encoder(facts: ModelFacts, options: OptimizeOptions) -> None:
    generative = [str(k) for k in options.keeps if k.generative]
    if generative:
        raise WorkflowConfigError(
            f"{', '.join(generative)}: a decoder's keep, and '{facts.path.name}' is not a decoder (a Hugging Face "
            "causal language model); keep cosine_mean, cosine_min, max_abs_diff or top1",
            owner="--keep",
        )
    if facts.decoder_with_past:
        raise WorkflowConfigError(
            f"'{facts.path.name}' takes past key/values (a generation cache), which these passes do not optimize; "
            "export it without the cache",
            owner="MODEL",
        )


def _conversion(facts: ModelFacts, installed: Installed, data: DataSource) -> dict[str, Any]:
    converter = installed.converters.get(facts.model_type)
    if converter is None:
        raise WorkflowConfigError(
            f"no installed pass converts a {facts.model_type} to ONNX; "
            f"{_install_hint('OnnxConversion') or 'install the distribution that offers one'}",
            owner="MODEL",
        )
    return {"type": converter, **({"data_config": DATA_NAME} if not data.synthetic else {})}


def _nothing_to_optimize(facts: ModelFacts, options: OptimizeOptions, installed: Installed, precision: str) -> None:
    fusion = "OrtTransformersOptimization"
    if facts.transformer and options.fusion is not False and _missing(fusion, installed):
        # The fusion was left out, not unwanted: name what would do it.
        hint = _install_hint(fusion) or f"no installed distribution offers {fusion}"
        raise WorkflowConfigError(f"precision {precision} on a transformer needs {fusion}: {hint}", owner="--precision")
    if facts.fused:
        what = "is fused already"
    elif facts.transformer:
        what = "is a transformer that --no-fusion leaves alone"
    else:
        what = "is not a transformer"
    raise WorkflowConfigError(
        f"nothing to optimize: '{facts.path.name}' {what} and precision {precision} changes no weights; choose "
        "--precision int8, int4 or fp16",
        owner="--precision",
    )


def _fits_on_data(passes: Mapping[str, Any]) -> bool:
    """Whether a pass names ``--data`` (calibration, a guard's checks): only then is it split into a fitting and
    a judging half (:mod:`olive.workflows.data_roles`)."""

    def names(value: Any) -> bool:
        if isinstance(value, Mapping):
            return value.get("data_config") == DATA_NAME or any(names(v) for v in value.values())
        if isinstance(value, list):
            return any(names(v) for v in value)
        return False

    return names(dict(passes))


def _judged_samples(options: OptimizeOptions, data: DataSource, fits: bool) -> int | None:
    """How many samples the keeps are judged on, where the files were counted."""
    source = data.validation or data
    if source.synthetic or source.samples is None:
        return None
    count = min(source.samples, options.max_samples) if options.max_samples else source.samples
    return count // 2 if fits and data.split else count


def _classifier_keeps(judged: int | None, notes: list[str]) -> tuple[Keep, ...]:
    """The default keep of class scores: 99 predictions in 100, or, judged on fewer than 100 samples (where 0.99
    allows no flipped prediction at all), one flip in the samples judged, said in a note."""
    (default,) = CLASSIFIER_KEEPS
    if judged is None or judged * (1 - default.value) >= 1:
        return CLASSIFIER_KEEPS
    value = math.floor((1 - 1 / judged) * 100) / 100 if judged > 1 else 0.0
    notes.append(
        f"top1 is kept at {value:g}, not {default.value:g}: on {judged} judged sample(s) {default.value:g} allows no "
        f"flipped prediction; judge on 100 samples or more (--max_samples, default {DEFAULT_MAX_SAMPLES}) for the "
        f"tighter default, or give --keep top1={default.value:g}"
    )
    return (Keep("top1", ">=", value),)


def _data_notes(options: OptimizeOptions, data: DataSource, fits: bool = True) -> list[str]:
    """What the summary says about the data: samples left out, the text field, how fitting and judging split."""
    notes = []
    for option, source in (("--data", data), ("--validation-data", data.validation)):
        if source is None:
            continue
        if source.path is not None and (source.samples or 0) > options.max_samples:
            notes.append(
                f"{option}: '{source.path.name}' holds {source.count_words()}; the first {options.max_samples} are "
                "used (--max_samples)"
            )
        if source.text_field != "text":
            notes.append(f"{option}: the text of each sample is its field '{source.text_field}' (its only field)")
    if data.split and not fits:
        notes.append("--data: every sample judges (metrics and keeps): no pass here fits on data, so it is not split")
    elif data.split:
        notes.append(f"--data: {SPLIT_RULE} (give --validation-data FILE to judge on other samples)")
    elif data.validation is not None:
        notes.append("the passes fit on --data; every figure and keep is measured on --validation-data")
    if data.synthetic:
        notes.append(
            "no --data: agreement is measured on synthetic inputs made from the model's input specs, which says "
            "less than agreement on real data; give --data FILE (samples like those the model serves) to judge it "
            "on them and to let the accuracy guard keep sensitive nodes in float"
        )
    return notes


def _data_configs(data: DataSource, options: OptimizeOptions, length: int) -> list[dict[str, Any]]:
    """The fitting data's config, then the judging data's when it is given apart."""
    # The data is read (and latency timed) at the smallest served size; agreement re-batches it at each.
    batch = min(options.batch_sizes or (1,))
    configs = [data_config(data, options.max_samples, batch, length)]
    if data.validation is not None:
        configs.append(data_config(data.validation, options.max_samples, batch, length, VALIDATION_NAME))
    return [config for config in configs if config is not None]


def _document(
    facts: ModelFacts,
    options: OptimizeOptions,
    installed: Installed,
    metrics: list[dict[str, Any]],
    passes: dict[str, Any],
    data_configs: list[dict[str, Any]],
    stop_when_goals_met: bool,
) -> WorkflowDocument:
    """Every ``olive optimize`` workflow: its passes, data and metrics on the target, judged in one evaluator."""
    return WorkflowDocument(
        workflow_id=WORKFLOW_ID,
        input_model=_input_model(facts, options),
        systems={SYSTEM: SystemEntry(type="LocalSystem", accelerators=[_accelerator(options, installed)])},
        target=SYSTEM,
        data_configs=data_configs,
        evaluators={EVALUATOR: {"metrics": metrics}},
        evaluator=EVALUATOR,
        evaluate_input_model=True,
        passes=passes,
        search_strategy=SearchEntry(
            execution_order="joint",
            sampler="sequential",
            max_samples=0,
            seed=0,
            max_time=options.max_time,
            stop_when_goals_met=stop_when_goals_met,
        ),
        # Without one, the workflow shares the per-user cache, as `olive run` of the written workflow does.
        cache_dir=str(options.cache_dir) if options.cache_dir is not None else None,
        output_dir=str(options.output_dir),
        log_severity_level=2,
    )


def _max_length(facts: ModelFacts, options: OptimizeOptions, data: DataSource) -> int:
    limit = facts.max_sequence_length
    if options.max_length is None:
        return min(DEFAULT_MAX_LENGTH, limit) if limit else DEFAULT_MAX_LENGTH
    if limit and options.max_length > limit and data.kind == "text":
        raise WorkflowConfigError(
            f"{options.max_length} tokens, and '{facts.path.name}' takes at most {limit}; give --max-length {limit} or "
            "less",
            owner="--max-length",
        )
    return options.max_length


# --------------------------------------------------------------------------------------------- the passes
def _install_hint(pass_name: str) -> str | None:
    distribution = distribution_of_pass(pass_name)
    if distribution is None:
        return None
    return f"{pass_name} is offered by {distribution}; install it with: {install_line(distribution)}"


def _missing(pass_name: str, installed: Installed) -> bool:
    return pass_name not in installed.passes


def _add_fusion(
    passes: dict[str, Any],
    facts: ModelFacts,
    options: OptimizeOptions,
    installed: Installed,
    precision: str,
    notes: list[str],
) -> None:
    name = "OrtTransformersOptimization"
    if options.quantize_only or options.fusion is False:
        return
    if options.fusion is None:
        if not facts.transformer:
            return
        if precision in INT8_PRECISIONS:
            # Measured, not assumed (benchmarks/bench_optimize.py, all-MiniLM-L6-v2, onnxruntime 1.32): with int8
            # weights the fused graph (QAttention) ran 7-17% slower than the unfused one in every paired timing,
            # and a search between the two picked either on a busy machine, where their ratios to the input
            # model drift apart by as much.
            notes.append(
                "no transformer fusion: a default from benchmarks/bench_optimize.py, not measured on this CPU (with "
                "int8 weights the fused all-MiniLM-L6-v2 ran 7-17% slower than the unfused one on AMD EPYC); --fusion "
                "fuses it"
            )
            return
        if any(p in installed.plugin_providers for p in options.providers):
            # onnxruntime's fused ops are its own contrib ops, which a plugin provider leaves to the CPU.
            notes.append("no transformer fusion: a plugin provider runs onnxruntime's fused ops on the CPU")
            return
    if facts.fused:
        notes.append(f"'{facts.path.name}' is fused already (it holds onnxruntime's attention ops): no fusion")
        return
    if _missing(name, installed):
        message = f"transformer fusion left out: {_install_hint(name) or f'no installed distribution offers {name}'}"
        if options.fusion:
            raise WorkflowConfigError(message, owner="--fusion")
        notes.append(message)
        return
    # opt_level 1 (onnxruntime's basic optimizations, then the fusions): the transformer optimizer's own default
    # for BERT and GPT-2, fixed rather than searched.
    fuse: dict[str, Any] = {"type": name, "opt_level": 1}
    if facts.is_onnx:
        # A Hugging Face model's conversion records its model type; an ONNX file says nothing, and onnxruntime's
        # BERT fusions cover encoders (BERT, RoBERTa, MiniLM, DistilBERT...); heads and width come from the graph.
        fuse["model_type"] = "bert"
    if options.fusion is None:
        # Fused or not is measured by the search: which is faster depends on the precision and the hardware (in
        # fp32 on the CPU here the fused MiniLM was no faster). only_onnxruntime keeps onnxruntime's basic graph
        # optimization alone: the graph as a session would see it anyway.
        fuse["only_onnxruntime"] = {
            "olive_parameter_type": "SearchParameter",
            "type": "Categorical",
            "support": [False, True],
        }
    passes["fuse"] = fuse


def _precision(options: OptimizeOptions, facts: ModelFacts, data: DataSource) -> str:
    if options.precision != "auto":
        return options.precision
    if options.act_precision is not None or options.use_qdq_format:
        chosen = "int8"
    else:
        chosen = "fp16" if options.device == "gpu" else "int8"
    if options.block_size is not None:
        raise WorkflowConfigError(
            f"a block size is for --precision int4 (block-wise 4-bit weights); --precision auto means {chosen} for "
            f"'{facts.path.name}' (int4 is what it means for a decoder); add --precision int4, or leave --block_size "
            "out",
            owner="--block_size",
        )
    return chosen


def _quant_dist_missing(pass_name: str, installed: Installed, precision: str, options: OptimizeOptions) -> None:
    if _missing(pass_name, installed):
        hint = _install_hint(pass_name) or f"no installed distribution offers {pass_name}"
        raise WorkflowConfigError(f"precision {precision} needs {pass_name}: {hint}", owner="--precision")


def _add_quantization(
    passes: dict[str, Any],
    precision: str,
    facts: ModelFacts,
    options: OptimizeOptions,
    installed: Installed,
    data: DataSource,
    keeps: tuple[Keep, ...],
    notes: list[str],
) -> None:
    if precision == "fp32":
        if not passes or list(passes) == ["convert"]:
            name = "OnnxPeepholeOptimizer"
            if not _missing(name, installed):
                passes["optimize"] = {"type": name}
        return
    if precision == "fp16":
        _quant_dist_missing("OnnxFloatToFloat16", installed, precision, options)
        passes["quantize"] = {"type": "OnnxFloatToFloat16", "keep_io_types": True}
        return
    if precision == "int4":
        _quant_dist_missing("OnnxBlockWiseRtnQuantization", installed, precision, options)
        # accuracy_level 4: MatMulNBits computes in int8, its fast path on CPUs
        passes["quantize"] = {
            "type": "OnnxBlockWiseRtnQuantization",
            "bits": 4,
            "block_size": options.block_size or 32,
            "accuracy_level": 4,
        }
        return
    weights = "uint8" if precision == "uint8" else "int8"
    reduce_range = _reduce_range(weights, options, installed, notes)
    if options.act_precision is not None or options.use_qdq_format or options.device == "npu":
        _static(passes, weights, reduce_range, options, installed, data)
        return
    guard = "OnnxAccuracyGuardedQuantization"
    aims = [k for k in keeps if k.metric in GUARD_METRICS]
    if data.synthetic or not aims or _missing(guard, installed):
        if not data.synthetic and aims and _missing(guard, installed):
            notes.append(f"the accuracy guard is left out: {_install_hint(guard)}")
        elif not data.synthetic and not aims:
            notes.append("the accuracy guard aims at cosines or max_abs_diff; with only top1 kept it is left out")
        _quant_dist_missing("OnnxDynamicQuantization", installed, precision, options)
        # No quant_pre_process: the symbolic shapes it writes into the graph made the int8 model 10-20% slower
        # on all-MiniLM-L6-v2 here (onnxruntime 1.32, benchmarks/bench_optimize.py), its other steps nothing.
        passes["quantize"] = {
            "type": "OnnxDynamicQuantization",
            "precision": weights,
            "per_channel": True,
            "reduce_range": reduce_range,
            "quant_preprocess": False,
        }
        return
    scoring = _scoring(facts, options)
    common = {
        "data_config": DATA_NAME,
        "max_samples": options.max_samples,
        "batch_size": _one_or_list(options.batch_sizes),
        "precision": weights,
        "reduce_range": reduce_range,
        # Quantized embeddings agree as well or better (all-MiniLM-L6-v2: held-out worst 0.972 against 0.965 with
        # them in float) and make the model 2.6x smaller.
        "quantize_embeddings": True,
        **scoring,
    }
    # A target the guard cannot reach still gives its closest model: the keeps (goals) then reject it and the
    # command names what it reached and at what latency.
    guard_only = {"max_fp32_nodes": MAX_FP32_NODES, "on_target_missed": "best"}
    targets = list(aims)
    if options.latency_budget is None:
        # Every keep tightened alike, step by step: what the judging samples miss can be the mean as well as the
        # worst sample. No sensitivity analysis up front: most often the keeps' own targets hold on the judging
        # samples, and a guard that meets its target with every node in int8 ranks nothing, where the analysis
        # would quantize every node once; a stricter retry ranks for itself.
        steps = _tightened(targets)
        dynamic = {
            "type": guard,
            **common,
            "target_metric": [k.metric for k in targets],
            "target_value": {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": steps},
            **guard_only,
        }
        passes["quantize"] = dynamic
        if max(options.batch_sizes) > 1:
            _static_alternative(dynamic, steps)
            notes.append(
                "dynamic int8 takes each activation's range over the whole batch, so a sample's output depends on "
                "its batch-mates: it is judged at every served batch size, and static int8 (activation ranges "
                "calibrated on --data: the same output whatever the batch) competes for the keep when it misses"
            )
        return
    if not _missing("OnnxSensitivityAnalysis", installed):
        first = targets[0]
        passes["sensitivity"] = {"type": "OnnxSensitivityAnalysis", **common, "metric": first.metric}
        searched = guard_targets(first)
        others = targets[1:]
        passes["quantize"] = {
            "type": guard,
            **common,
            "target_metric": [first.metric, *(k.metric for k in others)],
            "target_value": {
                "olive_parameter_type": "SearchParameter",
                "type": "Categorical",
                "support": [[value, *(k.value for k in others)] for value in searched],
            },
            **guard_only,
        }
        return
    passes["quantize"] = {
        "type": guard,
        **common,
        "target_metric": [k.metric for k in targets],
        "target_value": [k.value for k in targets],
        **guard_only,
    }


def _categorical(support: list[Any]) -> dict[str, Any]:
    return {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": support}


def _static_alternative(guard: dict[str, Any], steps: list[list[float]]) -> None:
    """The batch-independent alternative to guarded dynamic int8, in the same guard: static int8 (QDQ, activation
    ranges calibrated with MinMax on the fitting samples: a sample's output is the same whatever its batch-mates),
    the nodes that cost agreement most kept in float. ``quant_mode`` is searched before the target (its parent),
    so every dynamic step runs first and the search stops at the first model that keeps everything: static int8
    ran slower than dynamic int8 on the CPUs measured here. Each static variant is quantized for real, so static
    tries the keeps' own targets only, not the dynamic ladder."""
    guard["quant_mode"] = _categorical(["dynamic", "static"])
    guard["target_value"] = {
        "olive_parameter_type": "SearchParameter",
        "type": "Conditional",
        "parents": ["quant_mode"],
        "support": [
            {"key": ["dynamic"], "value": _categorical(steps)},
            {"key": ["static"], "value": _categorical(steps[:1])},
        ],
    }


def _reduce_range(weights: str, options: OptimizeOptions, installed: Installed, notes: list[str]) -> bool:
    """7-bit int8 weights where the CPU provider's int8 MatMul saturates (uint8 weights take a kernel that does
    not; other providers run kernels of their own)."""
    on_cpu = options.device == "cpu" and (not options.providers or "CPUExecutionProvider" in options.providers)
    if weights != "int8" or not on_cpu or not installed.int8_saturates:
        return False
    notes.append(f"int8 weights in 7 bits (reduce_range): {REDUCE_RANGE_REASON}")
    return True


def _static(
    passes: dict[str, Any],
    weights: str,
    reduce_range: bool,
    options: OptimizeOptions,
    installed: Installed,
    data: DataSource,
) -> None:
    name = "OnnxStaticQuantization"
    owner = "--act_precision" if options.act_precision is not None else "--use_qdq_format"
    if options.device == "npu" and options.act_precision is None and not options.use_qdq_format:
        owner = "--device"
    if data.synthetic:
        raise WorkflowConfigError(
            "static quantization calibrates activation ranges on data; give --data FILE (samples like those the "
            "model serves)",
            owner=owner,
        )
    _quant_dist_missing(name, installed, "int8 with quantized activations", options)
    act = options.act_precision or ("int8" if weights == "int8" else "uint8")
    quant_format = "QDQ" if options.use_qdq_format or options.device == "npu" else "QOperator"
    passes["quantize"] = {
        "type": name,
        "data_config": DATA_NAME,
        "quant_format": quant_format,
        "precision": weights,
        "activation_type": act,
        "per_channel": True,
        "reduce_range": reduce_range,
        "quant_preprocess": True,
        "calibrate_method": "MinMax",
        "calibration_sampling_size": options.max_samples,
    }


# --------------------------------------------------------------------------------------------- judging
def _one_or_list(sizes: tuple[int, ...]) -> int | list[int]:
    return sizes[0] if len(sizes) == 1 else list(sizes)


def _scoring(facts: ModelFacts, options: OptimizeOptions, trim: bool = True) -> dict[str, Any]:
    """How outputs are compared, the same for the guard and the agreement metric: the first output (when there
    are several), mean-pooled over the mask for token vectors, each sample served at batch size 1 at its real
    length (padded data; synthetic inputs have no padding; batches of several run padded, as the data is)."""
    scoring: dict[str, Any] = {}
    if len(facts.outputs) > 1:
        scoring["output_name"] = facts.outputs[0][0]
    if facts.mask_input is None:
        return scoring
    if facts.sequence_output and not facts.classifier:
        scoring["pooling"] = "mean"
    if trim and 1 in options.batch_sizes:
        # at batch size 1 only: a batch of several samples runs padded, as the data is
        scoring["trim_padding"] = True
    if scoring.get("pooling") or scoring.get("trim_padding"):
        scoring["mask_input"] = facts.mask_input
    return scoring


def _metrics(
    facts: ModelFacts, options: OptimizeOptions, data: DataSource, keeps: tuple[Keep, ...]
) -> list[dict[str, Any]]:
    fastest = options.latency_budget is None
    judged = VALIDATION_NAME if data.validation is not None else DATA_NAME
    data_ref = {} if data.synthetic else {"data_config": judged}
    specs = synthetic_specs(facts, options.dim_values) if data.synthetic else None
    user_config = {"user_config": dict(specs)} if specs else {}
    ratio: dict[str, Any] = {"name": "ratio_p50"}
    priority = 1
    if fastest:
        ratio["priority"] = priority
        priority += 1
    else:
        ratio["goal"] = {"type": "threshold", "value": options.latency_budget}
    agreement_subs = []
    for keep in keeps:
        agreement_subs.append(
            {"name": keep.metric, "priority": priority, "goal": {"type": "threshold", "value": keep.threshold}}
        )
        priority += 1
    if not fastest:
        ratio["priority"] = priority
        priority += 1
    scoring = _scoring(facts, options, trim=not data.synthetic)
    if not data.synthetic:
        scoring["served_batch_size"] = _one_or_list(options.batch_sizes)
    return [
        {
            "name": "latency",
            "type": "latency",
            **data_ref,
            "sub_types": [ratio, {"name": "p50"}],
            "warmup_num": LATENCY_WARMUP,
            "repeat_test_num": LATENCY_REPEAT,
            **user_config,
        },
        {"name": "agreement", "type": "agreement", **data_ref, **scoring, "sub_types": agreement_subs, **user_config},
        {"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": priority}]},
    ]


# --------------------------------------------------------------------------------------------- decoders
#: the passes a decoder's workflow names (ModelBuilder and the guard: olive-passes-genai; k-quant: olive-passes-quant)
BUILDER = "ModelBuilder"
GUARDED_INT4 = "OnnxGuardedInt4"
WEIGHT_ONLY = "OnnxKQuantQuantization"
#: a decoder's precisions: int4 is what ``auto`` means (the builder's own choice on every target)
DECODER_PRECISIONS = ("auto", "int4", "int8", "fp32", "fp16")
#: the fraction of the way from a decoder keep to the float model at which the guard's searched goals sit: for
#: perplexity<=1.02x, 1.02 1.0133 1.0067 (each try ranks every MatMul again: three at most)
DECODER_GOAL_STEPS = (0.0, 1 / 3, 2 / 3)
#: tokens per window of the teacher-forced metrics and the guard; windows read at most
DECODER_WINDOW = 128
DECODER_MAX_WINDOWS = 16
#: the decode speed: greedy tokens after a prompt, runs of each model (and of the float model, alternating)
DECODE_SETTINGS = {"prompt_tokens": 64, "max_new_tokens": 32, "repeat": 20}
#: the guard's goal metric for a keep it can aim at
_GUARD_GOALS = {"perplexity": "perplexity_ratio", "top1_agreement": "top1_agreement"}


def _decoder_workflow(facts: ModelFacts, options: OptimizeOptions, installed: Installed, data: DataSource) -> Recipe:
    """A decoder's workflow: ModelBuilder (fp32), then int4 guarded on the text (see the module docstring)."""
    if _missing(BUILDER, installed):
        hint = _install_hint(BUILDER) or "no installed distribution offers it"
        raise WorkflowConfigError(
            f"'{facts.path.name}' is a decoder (a causal language model), which olive optimize builds with {BUILDER} "
            f"(onnxruntime-genai's builder, with a KV cache): {hint}",
            owner="MODEL",
        )
    _check_decoder_options(facts, options, data)
    notes: list[str] = []
    text = not data.synthetic
    keeps = options.keeps or (DECODER_KEEPS if text else ())
    window = _decoder_window(facts, options)
    precision = "int4" if options.precision == "auto" else options.precision
    if options.precision == "auto":
        notes.append(
            f"--precision auto: int4 for a decoder (block size {options.block_size or 32}"
            + (", the MatMuls the keep needs at 8 bits)" if text else ")")
        )
    # The builder's int4 settings would be searched by default; the float build is one model, the reference.
    build = {"type": BUILDER, "precision": "fp16" if precision == "fp16" else "fp32"}
    if options.adapters:
        # The float build every figure compares with carries the adapter inputs, so it runs every adapter too.
        build["extract_adapters"] = True
    build.update(dict.fromkeys(("int4_block_size", "int4_is_symmetric", "int4_algo_config"), "DEFAULT_VALUE"))
    passes: dict[str, Any] = {"build": build}
    block = options.block_size or 32
    if precision == "int4" and text:
        passes["quantize"] = _guard_pass(keeps, block, window, notes)
    elif precision in ("int4", "int8"):
        bits = 4 if precision == "int4" else 8
        # int8 compute, as the builder's own int4 on the CPU (k-quant's blocks always carry an offset).
        passes["quantize"] = {"type": WEIGHT_ONLY, "bits": bits, "block_size": block, "accuracy_level": 4}
        if precision == "int4":
            notes.append(
                f"no --data: plain int4 ({WEIGHT_ONLY}); with --data the guard ({GUARDED_INT4}) keeps the "
                "MatMuls that cost the keep most at 8 bits"
            )
    judged = VALIDATION_NAME if data.validation is not None else DATA_NAME
    metrics = _decoder_metrics(keeps, judged if text else None, window)
    metrics += _adapter_metrics(facts, options, judged if text else None, window)
    if options.adapters:
        notes.append(
            f"{len(options.adapters)} adapter(s) ({', '.join(n for n, _ in options.adapters)}): the base is built "
            "once with an input for each adapted weight (float, whatever the precision), each adapter is written as "
            "NAME.onnx_adapter and measured with it active: "
            + ("perplexity, " if text else "")
            + "top1_agreement against PyTorch with it merged, decode tokens/s against no adapter"
        )
    # The HfModel is not evaluated itself: every figure compares with the first pass's output, the float build.
    # The guard's goals run loosest first: the first model that keeps everything is the smallest that does.
    stop = isinstance(passes.get("quantize", {}).get("goal_value"), dict)
    workflow = _document(facts, options, installed, metrics, passes, _data_configs(data, options, window), stop)
    if text and data.text_field != "text":
        notes.append(f"--data: the text of each sample is its field '{data.text_field}' (its only field)")
    if text and data.path is not None and (data.samples or 0) > options.max_samples:
        notes.append(
            f"--data: '{data.path.name}' holds {data.count_words()}; the first {options.max_samples} are used "
            "(--max_samples)"
        )
    if data.split:
        notes.append(
            f"--data: {SPLIT_RULE}; the guard fits on its half, perplexity and agreement are measured on the other "
            "(give --validation-data FILE to judge on other text)"
        )
    elif data.validation is not None:
        notes.append("the guard fits on --data; perplexity and agreement are measured on --validation-data")
    if data.synthetic:
        notes.append(
            "no --data: agreement is measured on seeded random token ids, which says little about how the model "
            "does on text, and there is no perplexity; give --data FILE (text like the model's prompts and "
            "answers, .txt one sample per line or .jsonl) to fit the int4 guard on it and to judge perplexity and "
            "agreement on text it did not fit on"
        )
    adapters = tuple(name for name, _ in options.adapters)
    return Recipe(workflow, tuple(keeps), None, tuple(notes), data.synthetic, decoder=True, adapters=adapters)


def _check_decoder_options(facts: ModelFacts, options: OptimizeOptions, data: DataSource) -> None:
    name = facts.path.name
    if options.precision not in DECODER_PRECISIONS:
        raise WorkflowConfigError(
            f"{options.precision} is not a decoder precision here; use int4 (the default: 4-bit weights, the MatMuls "
            "the keep needs at 8), int8 or fp32 (fp16 on a GPU)",
            owner="--precision",
        )
    if options.precision == "fp16" and options.device == "cpu":
        raise WorkflowConfigError(
            "fp16 decoders need a GPU provider (onnxruntime-genai's builder writes fp32, int8 or int4 for the CPU); "
            "use --precision int4, or --device gpu",
            owner="--precision",
        )
    if options.act_precision is not None or options.use_qdq_format:
        raise WorkflowConfigError(
            f"'{name}' is a decoder, whose weights are quantized block-wise (activations stay float); leave "
            "--act_precision and --use_qdq_format out",
            owner="--act_precision" if options.act_precision is not None else "--use_qdq_format",
        )
    if options.latency_budget is not None:
        raise WorkflowConfigError(
            f"'{name}' is a decoder: olive optimize chooses the smallest int4 model that keeps --keep, and no "
            "latency budget; leave --latency-budget out",
            owner="--latency-budget",
        )
    if options.fusion:
        raise WorkflowConfigError(
            "a decoder's attention is fused by onnxruntime-genai's builder (GroupQueryAttention); leave --fusion out",
            owner="--fusion",
        )
    others = [str(k) for k in options.keeps if not k.generative]
    if others:
        raise WorkflowConfigError(
            f"{', '.join(others)}: '{name}' is a decoder, which keeps what it says on text: perplexity (e.g. "
            "perplexity<=1.02x, within 2% of the float model), top1_agreement (e.g. top1_agreement>=0.98) or "
            "next_token_kl",
            owner="--keep",
        )
    if data.kind == "npz":
        raise WorkflowConfigError(
            f"a decoder is fitted and judged on text; give a text file ({', '.join(TEXT_SUFFIXES)}), not an .npz",
            owner="--data",
        )
    if data.synthetic and options.keeps:
        raise WorkflowConfigError(
            f"{', '.join(str(k) for k in options.keeps)} is measured on text; give --data FILE (.txt one sample per "
            "line, or .jsonl)",
            owner="--keep",
        )


def _decoder_window(facts: ModelFacts, options: OptimizeOptions) -> int:
    limit = facts.max_sequence_length
    window = options.max_length or DECODER_WINDOW
    if limit and window > limit:
        if options.max_length is not None:
            raise WorkflowConfigError(
                f"{window} tokens, and '{facts.path.name}' takes at most {limit}; give --max-length {limit} or less",
                owner="--max-length",
            )
        window = limit
    return window


def _guard_pass(keeps: tuple[Keep, ...], block: int, window: int, notes: list[str]) -> dict[str, Any]:
    """``OnnxGuardedInt4`` aimed at the first keep it can aim at (perplexity as a ratio, or top-1 agreement), its
    goal searched from the keep towards the float model."""
    aim = next((k for k in keeps if _GUARD_GOALS.get(k.metric) and (k.relative or k.metric != "perplexity")), None)
    if aim is None:
        aim = DECODER_KEEPS[0]
        notes.append(f"the int4 guard aims at {aim} (it aims at perplexity<=Nx or top1_agreement, and neither is kept)")
    goals = list(dict.fromkeys(round(aim.threshold + (1.0 - aim.threshold) * s, 6) for s in DECODER_GOAL_STEPS))
    return {
        "type": GUARDED_INT4,
        "data_config": DATA_NAME,
        "goal_metric": _GUARD_GOALS[aim.metric],
        "goal_value": {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": goals},
        "block_size": block,
        "window": window,
        "max_windows": DECODER_MAX_WINDOWS,
    }


def _decoder_metrics(keeps: tuple[Keep, ...], judged: str | None, window: int) -> list[dict[str, Any]]:
    """Decode speed first (the objective), then what is kept (goals), then size; on the judging text, or on seeded
    random token ids without text (``judged`` None)."""
    data_ref: dict[str, Any] = {"data_config": judged} if judged else {}
    synthetic = {} if judged else {"synthetic": True}
    windows = {"window": window, "max_windows": DECODER_MAX_WINDOWS, **synthetic}
    kept = {k.metric: k for k in keeps}
    priority = 2

    def sub(name: str) -> dict[str, Any]:
        nonlocal priority
        entry: dict[str, Any] = {"name": name}
        if name in kept:
            entry.update(priority=priority, goal=kept[name].goal())
            priority += 1
        return entry

    names = ["top1_agreement"] if not judged else ["perplexity", "top1_agreement"]
    if "next_token_kl" in kept:
        names.append("next_token_kl")
    metrics: list[dict[str, Any]] = [
        {
            "name": "speed",
            "type": "decode_tokens_per_s",
            **data_ref,
            "sub_types": [{"name": "ratio_decode_tokens_per_s", "priority": 1}, {"name": "decode_tokens_per_s"}],
            "user_config": {**DECODE_SETTINGS, **synthetic},
        }
    ]
    metrics += [
        {"name": name, "type": name, **data_ref, "sub_types": [sub(name)], "user_config": dict(windows)}
        for name in names
    ]
    metrics.append({"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": priority}]})
    return metrics


def adapter_metric_name(metric_type: str, adapter: str) -> str:
    """The name of a metric measured with ``adapter`` active: ``perplexity@legal``."""
    return f"{metric_type}@{adapter}"


def _adapter_metrics(
    facts: ModelFacts, options: OptimizeOptions, judged: str | None, window: int
) -> list[dict[str, Any]]:
    """Per adapter, with it active (olive-passes-genai's metrics take ``user_config.adapter``): perplexity on the
    judging text, top-1 agreement with PyTorch running the base with the adapter merged, and decode tokens/s
    against the same model with no adapter. Figures, not goals: the keeps hold for the base."""
    data_ref: dict[str, Any] = {"data_config": judged} if judged else {}
    synthetic = {} if judged else {"synthetic": True}
    windows = {"window": window, "max_windows": DECODER_MAX_WINDOWS, **synthetic}
    metrics: list[dict[str, Any]] = []
    for name, folder in options.adapters:
        adapter = {"adapter": name, "adapter_path": str(folder), "base_model": str(facts.path)}
        quality = ["perplexity", "top1_agreement"] if judged else ["top1_agreement"]
        metrics += [
            {
                "name": adapter_metric_name(kind, name),
                "type": kind,
                **data_ref,
                "sub_types": [{"name": kind}],
                "user_config": {**windows, **adapter},
            }
            for kind in quality
        ]
        metrics.append(
            {
                "name": adapter_metric_name("speed", name),
                "type": "decode_tokens_per_s",
                **data_ref,
                "sub_types": [{"name": "ratio_decode_tokens_per_s"}, {"name": "decode_tokens_per_s"}],
                "user_config": {**DECODE_SETTINGS, **synthetic, **adapter},
            }
        )
    return metrics


# --------------------------------------------------------------------------------------------- model, target
def _input_model(facts: ModelFacts, options: OptimizeOptions) -> InputModelEntry:
    task = facts.task if facts.model_type == "HfModel" else None
    adapters = {name: str(folder) for name, folder in options.adapters}
    return InputModelEntry(
        type=facts.model_type, model_path=str(facts.path), task=task, adapters=adapters, handler=facts.handler
    )


def _accelerator(options: OptimizeOptions, installed: Installed) -> AcceleratorEntry:
    names = list(options.providers) or [DEFAULT_PROVIDERS[options.device]]
    entries: list[Any] = []
    for name in names:
        searched = installed.plugin_providers.get(name)
        entries.append([name, dict.fromkeys(searched, "SEARCHABLE_VALUES")] if searched else name)
    return AcceleratorEntry(device=options.device, execution_providers=entries)
