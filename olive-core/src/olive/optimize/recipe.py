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
- **Choose**: the fastest candidate that meets every keep on the judging samples. A guard that meets its
  target on the samples it fit on can miss on the others (its worst fitted sample is an optimistic estimate of
  the worst unseen one), so the guard's targets are searched from the keeps towards a perfect score, every keep
  tightened alike, loosest first: the search stops at the first model that keeps everything on the judging
  samples, or reports the closest. With ``--latency-budget R``, the
  one that agrees best (first keep first) among those within ``R`` times the input's latency; the guard's target
  on the first keep is searched, so the search spends the budget on float nodes that buy agreement.
- **Where**: every ``--provider`` is a target the candidates are measured on; a plugin provider's options
  with search values (OpenVINO's precision hint) are searched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from olive.data.split import SPLIT_RULE
from olive.exceptions import WorkflowConfigError
from olive.hardware.cpu import REDUCE_RANGE_REASON
from olive.optimize.data import DATA_NAME, VALIDATION_NAME, DataSource, data_config, synthetic_specs
from olive.optimize.facts import ModelFacts
from olive.optimize.keep import CLASSIFIER_KEEPS, EMBEDDING_KEEPS, GUARD_METRICS, Keep
from olive.optimize.options import DEFAULT_MAX_LENGTH, OptimizeOptions
from olive.plugins.install_hints import distribution_of_pass, install_line

__all__ = [
    "DEFAULT_PROVIDERS",
    "GUARD_TARGET_STEPS",
    "LATENCY_REPEAT",
    "Installed",
    "Recipe",
    "build_workflow",
    "default_keeps",
    "guard_targets",
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

    workflow: dict[str, Any]
    keeps: tuple[Keep, ...]
    #: the latency ratio to the input model the chosen model must stay within (None: the fastest)
    latency_budget: float | None = None
    notes: tuple[str, ...] = ()
    synthetic: bool = False

    @property
    def objective(self) -> str:
        kept = " and ".join(str(k) for k in self.keeps)
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
    notes: list[str] = []
    keeps = options.keeps or default_keeps(facts)
    if facts.decoder_with_past:
        raise WorkflowConfigError(
            f"'{facts.path.name}' takes past key/values (a generation cache), which these passes do not optimize; "
            "export it without the cache",
            owner="MODEL",
        )
    if any(k.metric == "top1" for k in keeps) and not facts.classifier:
        notes.append("top1 compares the index of the largest value of each output vector; it suits class scores")
    passes: dict[str, Any] = {}
    if not facts.is_onnx:
        converter = installed.converters.get(facts.model_type)
        if converter is None:
            raise WorkflowConfigError(
                f"no installed pass converts a {facts.model_type} to ONNX; "
                f"{_install_hint('OnnxConversion') or 'install the distribution that offers one'}",
                owner="MODEL",
            )
        passes["convert"] = {"type": converter, **({"data_config": DATA_NAME} if not data.synthetic else {})}
    precision = _precision(options, facts, data)
    _add_fusion(passes, facts, options, installed, precision, notes)
    _add_quantization(passes, precision, facts, options, installed, data, keeps, notes)
    if not passes or list(passes) == ["convert"]:
        fusion = "OrtTransformersOptimization"
        if facts.transformer and options.fusion is not False and _missing(fusion, installed):
            # The fusion was left out, not unwanted: name what would do it.
            hint = _install_hint(fusion) or f"no installed distribution offers {fusion}"
            raise WorkflowConfigError(
                f"precision {precision} on a transformer needs {fusion}: {hint}", owner="--precision"
            )
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
    for option, source in (("--data", data), ("--validation-data", data.validation)):
        if source is not None and source.path is not None and (source.samples or 0) > options.max_samples:
            notes.append(
                f"{option}: '{source.path.name}' holds {source.samples} samples; the first {options.max_samples} are "
                "used (--max_samples)"
            )
        if source is not None and source.text_field != "text":
            notes.append(f"{option}: the text of each sample is its field '{source.text_field}' (its only field)")
    if data.split:
        notes.append(f"--data: {SPLIT_RULE} (give --validation-data FILE to judge on other samples)")
    elif data.validation is not None:
        notes.append("the passes fit on --data; every figure and keep is measured on --validation-data")
    if data.synthetic:
        notes.append(
            "no --data: agreement is measured on synthetic inputs made from the model's input specs, which says "
            "less than agreement on real data; give --data FILE (samples like those the model serves) to judge it "
            "on them and to let the accuracy guard keep sensitive nodes in float"
        )
    workflow: dict[str, Any] = {
        "workflow_id": WORKFLOW_ID,
        "input_model": _input_model(facts, options),
        "systems": {SYSTEM: {"type": "LocalSystem", "accelerators": [_accelerator(options, installed)]}},
        "target": SYSTEM,
        "data_configs": [],
        "evaluators": {EVALUATOR: {"metrics": _metrics(facts, options, data, keeps)}},
        "evaluator": EVALUATOR,
        "evaluate_input_model": True,
        "passes": passes,
        "search_strategy": {
            "execution_order": "joint",
            "sampler": "sequential",
            "max_samples": 0,
            "seed": 0,
            **({"max_time": options.max_time} if options.max_time is not None else {}),
        },
        # Without one, the workflow shares the per-user cache, as `olive run` of the written workflow does.
        **({"cache_dir": str(options.cache_dir)} if options.cache_dir is not None else {}),
        "output_dir": str(options.output_dir),
        "log_severity_level": 2,
    }
    max_length = _max_length(facts, options, data)
    config = data_config(data, options.max_samples, options.batch_size, max_length)
    if config is not None:
        workflow["data_configs"].append(config)
    if data.validation is not None:
        judged = data_config(data.validation, options.max_samples, options.batch_size, max_length, VALIDATION_NAME)
        if judged is not None:
            workflow["data_configs"].append(judged)
    if (
        "quantize" in passes
        and isinstance(passes["quantize"].get("target_value"), dict)
        and options.latency_budget is None
    ):
        # The guard's targets run loosest first: the first model that keeps everything is the fastest that does.
        workflow["search_strategy"]["stop_when_goals_met"] = True
    return Recipe(workflow, tuple(keeps), options.latency_budget, tuple(notes), data.synthetic)


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
            notes.append("no transformer fusion: with int8 weights the unfused graph ran faster (--fusion adds it)")
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
        return "int8"
    if options.device == "gpu":
        return "fp16"
    return "int8"


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
        "batch_size": options.batch_size,
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
        passes["quantize"] = {
            "type": guard,
            **common,
            "target_metric": [k.metric for k in targets],
            "target_value": {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": steps},
            **guard_only,
        }
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
def _scoring(facts: ModelFacts, options: OptimizeOptions, trim: bool = True) -> dict[str, Any]:
    """How outputs are compared, the same for the guard and the agreement metric: the first output (when there
    are several), mean-pooled over the mask for token vectors, each sample at its real length at batch 1 (padded
    data; synthetic inputs have no padding)."""
    scoring: dict[str, Any] = {}
    if len(facts.outputs) > 1:
        scoring["output_name"] = facts.outputs[0][0]
    if facts.mask_input is None:
        return scoring
    if facts.sequence_output and not facts.classifier:
        scoring["pooling"] = "mean"
    if trim and options.batch_size == 1:
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


# --------------------------------------------------------------------------------------------- model, target
def _input_model(facts: ModelFacts, options: OptimizeOptions) -> dict[str, Any]:
    model: dict[str, Any] = {"type": facts.model_type, "model_path": str(facts.path)}
    if facts.task is not None and facts.model_type == "HfModel":
        model["task"] = facts.task
    return model


def _accelerator(options: OptimizeOptions, installed: Installed) -> dict[str, Any]:
    names = list(options.providers) or [DEFAULT_PROVIDERS[options.device]]
    entries: list[Any] = []
    for name in names:
        searched = installed.plugin_providers.get(name)
        entries.append([name, dict.fromkeys(searched, "SEARCHABLE_VALUES")] if searched else name)
    return {"device": options.device, "execution_providers": entries}
