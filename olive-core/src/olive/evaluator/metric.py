"""Metric configs in Microsoft Olive's JSON form, validated with the JSON path of every mistake.

::

    {"name": "latency", "type": "latency", "data_config": "calib",
     "sub_types": [{"name": "avg", "priority": 1, "goal": {"type": "percent-min-improvement", "value": 20}}],
     "user_config": {"warmup_num": 5, "repeat_test_num": 50}}

Types: ``latency``, ``throughput``, ``accuracy``, ``agreement``, ``size_on_disk``, ``custom`` and any metric a
plugin registers through the ``olive_register_metrics`` hook.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from olive.config_errors import (
    check_keys,
    choice,
    config_error,
    expect,
    input_specs,
    json_path,
    number,
    user_path,
    whole_number,
)
from olive.data.config import DataConfig
from olive.evaluator.result import joint_key
from olive.exceptions import ModelLoadError, WorkflowConfigError, closest_match_hint
from olive.measure.sessions import check_inference_settings
from olive.plugins.manager import get_plugin_manager, get_plugin_metrics

logger = logging.getLogger(__name__)

LATENCY_SUB_TYPES = ("avg", "min", "max", "p50", "p75", "p90", "p95", "p99", "p999")
# The model's runs relative to the reference (input) model's: the two are timed in alternating rounds and
# each run of the model is divided by the reference's median in its round, so a change in machine speed
# during a search moves both alike and cancels out of the ratio.
RATIO_PREFIX = "ratio_"
RATIO_SUB_TYPES = tuple(RATIO_PREFIX + name for name in LATENCY_SUB_TYPES)

# metric type -> {sub type: higher_is_better}; custom and plugin metrics take any sub type name.
BUILTIN_SUB_TYPES: dict[str, dict[str, bool]] = {
    "latency": dict.fromkeys(LATENCY_SUB_TYPES + RATIO_SUB_TYPES, False),
    "throughput": dict.fromkeys(LATENCY_SUB_TYPES + RATIO_SUB_TYPES, True),
    "accuracy": {"accuracy_score": True, "f1_score": True, "precision": True, "recall": True},
    "agreement": {"cosine_mean": True, "cosine_min": True, "max_abs_diff": False, "top1": True},
    "size_on_disk": {"bytes": False},
}
DEFAULT_SUB_TYPE = {
    "latency": "avg",
    "throughput": "avg",
    "accuracy": "accuracy_score",
    "agreement": "cosine_mean",
    "size_on_disk": "bytes",
}
BUILTIN_TYPES = (*BUILTIN_SUB_TYPES, "custom")

# Ranking tolerance when a sub type gives none: differences smaller than this are ties that fall through to
# the next priority (``0``: Microsoft Olive's exact order). Latency and throughput are relative (a fraction of
# the better value): the same model's p50 moved by up to 4.1% between repeated evaluations on 2 cores
# (benchmarks/README.md, "Ranking tolerance"). Scores are absolute: they are deterministic on CPU, but a
# difference of 1e-4 in a mean over a few dozen samples is below what the sample can tell apart. Sizes are
# exact bytes.
RELATIVE_TOLERANCE_TYPES = ("latency", "throughput")
DEFAULT_TOLERANCE: dict[str, float] = {
    "latency": 0.05,
    "throughput": 0.05,
    "accuracy": 1e-4,
    "agreement": 1e-4,
    "size_on_disk": 0.0,
}

GOAL_TYPES = ("threshold", "min-improvement", "percent-min-improvement", "max-degradation", "percent-max-degradation")

WARMUP_NUM = 10
REPEAT_TEST_NUM = 20
SLEEP_NUM = 0
# Upper bounds of the timing options: a latency metric at these already takes hours; beyond them a typo
# (an extra zero or ten) would run until killed.
MAX_WARMUP_NUM = 100_000
MAX_REPEAT_TEST_NUM = 1_000_000
MAX_SLEEP_NUM = 60
MAX_BATCH_SIZE = 1_000_000
# Microsoft Olive computes accuracy with torchmetrics ("torch_metrics", its default) or Hugging Face evaluate;
# here it is computed by Olive itself, the same way torchmetrics does.
BACKENDS = ("torch_metrics",)

# Options that may sit at the top of a metric, in user_config, or (Olive style) in a sub type's metric_config.
_OPTION_KEYS = (
    "warmup_num",
    "repeat_test_num",
    "sleep_num",
    "output_name",
    "pooling",
    "mask_input",
    "trim_padding",
)
_TOP_KEYS = (
    "name",
    "type",
    "sub_types",
    "data_config",
    "user_config",
    "backend",
    *_OPTION_KEYS,
    # the single-sub-type form of older Olive files
    "sub_type",
    "higher_is_better",
    "goal",
    "priority",
    "metric_config",
)
_SUB_KEYS = ("name", "priority", "higher_is_better", "goal", "metric_config", "tolerance")
_USER_CONFIG_KEYS = (
    "user_script",
    "script_dir",
    "data_dir",
    "batch_size",
    "inference_settings",
    "io_bind",
    "evaluate_func",
    "evaluate_func_kwargs",
    "metric_func",
    "metric_func_kwargs",
    "post_processing_func",
    "dataloader_func",
    "func_kwargs",
    "input_names",
    "input_shapes",
    "input_types",
    "shared_kv_buffer",
    *_OPTION_KEYS,
)
_ACCURACY_METRIC_CONFIG = ("average", "pos_label", "num_classes", "task", "multiclass")
_AVERAGES = ("binary", "macro", "micro", "weighted")
_TASKS = ("binary", "multiclass", "multilabel")
_PATH_KEYS = ("user_script", "script_dir", "data_dir")
_FUNCTION_KEYS = ("evaluate_func", "metric_func", "post_processing_func", "dataloader_func")
_POOLINGS = ("mean", "cls", "none")


@attrs.frozen
class MetricGoal:
    """``threshold`` (absolute), or relative to the input model: ``min-improvement``,
    ``percent-min-improvement``, ``max-degradation``, ``percent-max-degradation``."""

    type: str
    value: float


@attrs.frozen
class SubMetric:
    """One measured quantity of a metric (``avg`` of ``latency``...). ``priority`` > 0 makes it an objective.

    ``tolerance``: when ranking, two values closer than this tie and the next priority decides; a fraction
    of the better value when ``relative_tolerance`` (latency, throughput), else an absolute difference.
    """

    name: str
    priority: int = -1
    higher_is_better: bool = True
    goal: MetricGoal | None = None
    metric_config: dict[str, Any] = attrs.field(factory=dict)
    tolerance: float = 0.0
    relative_tolerance: bool = False


@attrs.frozen
class Metric:
    """A validated metric; ``json`` keeps the config as written (plugin metrics receive it)."""

    name: str
    type: str
    sub_types: list[SubMetric]
    data_config: str | None = None
    user_config: dict[str, Any] = attrs.field(factory=dict)
    warmup_num: int = WARMUP_NUM
    repeat_test_num: int = REPEAT_TEST_NUM
    sleep_num: float = SLEEP_NUM
    output_name: str | None = None
    pooling: str | None = None
    mask_input: str = "attention_mask"
    # Agreement only: run each batch-1 sample without its right padding, as a batch-1 service would.
    trim_padding: bool = False
    inline_data_config: DataConfig | None = attrs.field(default=None, eq=False, repr=False)
    json: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    json_path: str = attrs.field(default="metric", eq=False, repr=False)

    def keys(self) -> list[str]:
        return [joint_key(self.name, sub.name) for sub in self.sub_types]


_PLUGIN_METRICS: dict[int, tuple[Any, dict[str, Callable[..., Any]]]] = {}


def plugin_metrics() -> dict[str, Callable[..., Any]]:
    """Metrics registered by installed plugins through ``olive_register_metrics`` (name -> evaluate).

    The hook fires once per plugin manager; a plugin may not take a built-in metric type's name.
    """
    manager = get_plugin_manager()
    cached = _PLUGIN_METRICS.get(id(manager))
    if cached is not None and cached[0] is manager:
        return cached[1]
    found = dict(get_plugin_metrics(manager))
    clash = sorted(set(found) & set(BUILTIN_TYPES))
    if clash:
        raise WorkflowConfigError(
            f"a plugin registers metric type(s) {', '.join(clash)}, which are built in; disable it with "
            "OLIVE_DISABLE_PLUGINS"
        )
    _PLUGIN_METRICS.clear()
    _PLUGIN_METRICS[id(manager)] = (manager, found)
    return found


def parse_goal(data: Any, path: str, higher_is_better: bool) -> MetricGoal:
    expect(data, Mapping, path, '{"type": ..., "value": ...}')
    check_keys(data, ("type", "value"), path, "goal key")
    kind = data.get("type")
    if kind is None:
        raise config_error(f"{path}.type", f"missing; use one of {', '.join(GOAL_TYPES)}")
    choice(kind, GOAL_TYPES, f"{path}.type", "goal type")
    if "value" not in data:
        raise config_error(f"{path}.value", "missing; a goal needs a number")
    value = number(data["value"], f"{path}.value")
    if kind != "threshold" and value < 0:
        raise config_error(f"{path}.value", f"must be >= 0 for a {kind} goal, got {value}")
    # A percentage that would ask for a value below zero can never be met.
    shrinking = (kind == "percent-min-improvement" and not higher_is_better) or (
        kind == "percent-max-degradation" and higher_is_better
    )
    if shrinking and value >= 100:
        raise config_error(
            f"{path}.value",
            f"must be below 100 for a {kind} goal on a "
            f"{'higher' if higher_is_better else 'lower'}-is-better metric, got {value}",
        )
    return MetricGoal(kind, value)


def parse_metric(
    data: Mapping[str, Any],
    json_path: str = "metrics[0]",
    data_config_names: Iterable[str] | None = None,
    base_dir: str | Path | None = None,
) -> Metric:
    """Validate one metric's JSON; every error names its JSON path and the fix.

    :param data_config_names: the names in the workflow's ``data_configs`` (``None``: not checked).
    :param base_dir: folder for relative paths of an inline data config.
    """
    path = json_path
    expect(data, Mapping, path, "a metric object")
    if "type" not in data or data["type"] in (None, ""):
        raise config_error(
            f"{path}.type",
            f"every metric needs a type; use one of {', '.join(BUILTIN_TYPES)} (or a metric type a plugin registers)",
        )
    kind = expect(data["type"], str, f"{path}.type", "a metric type string")
    plugin_evaluate = None
    if kind not in BUILTIN_TYPES:
        registered = plugin_metrics()
        plugin_evaluate = registered.get(kind)
        if plugin_evaluate is None:
            known = (*BUILTIN_TYPES, *registered)
            raise config_error(
                f"{path}.type",
                f"unknown metric type {kind!r}{closest_match_hint(kind, known)}; "
                f"use one of {', '.join(known)} or install the plugin that provides it",
            )
    check_keys(data, _TOP_KEYS, path, "metric key")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise config_error(f"{path}.name", "every metric needs a name (a non-empty string), e.g. the type")

    user_config = expect(data.get("user_config") or {}, Mapping, f"{path}.user_config", "an object")
    if plugin_evaluate is None:
        check_keys(user_config, _USER_CONFIG_KEYS, f"{path}.user_config", "user_config key")
        _check_user_config(user_config, f"{path}.user_config", base_dir)
    if data.get("backend") is not None:
        choice(data["backend"], BACKENDS, f"{path}.backend", "backend")

    # Older files give one sub type at the top level.
    raw_subs = data.get("sub_types")
    if raw_subs is None and "sub_type" in data:
        raw_subs = [
            {k: data[k] for k in ("higher_is_better", "goal", "priority", "metric_config") if k in data}
            | {"name": data["sub_type"]}
        ]
        sub_path_of = lambda i: path  # noqa: E731
    else:
        for key in ("sub_type", "higher_is_better", "goal", "priority", "metric_config"):
            if key in data:
                raise config_error(
                    f"{path}.{key}", f'belongs inside sub_types (e.g. "sub_types": [{{"name": "avg", "{key}": ...}}])'
                )
        sub_path_of = lambda i: f"{path}.sub_types[{i}]"  # noqa: E731
    if raw_subs is None:
        if kind not in DEFAULT_SUB_TYPE:
            raise config_error(
                f"{path}.sub_types",
                'missing; a custom or plugin metric needs e.g. [{"name": "score", "higher_is_better": true}]',
            )
        raw_subs = [{"name": DEFAULT_SUB_TYPE[kind]}]
    expect(raw_subs, list, f"{path}.sub_types", "a list of sub types")
    if not raw_subs:
        raise config_error(f"{path}.sub_types", 'empty; give at least one sub type, e.g. [{"name": "avg"}]')

    plugin_directions = getattr(plugin_evaluate, "higher_is_better", None)
    sub_types: list[SubMetric] = []
    for index, raw in enumerate(raw_subs):
        sub_path = sub_path_of(index)
        if isinstance(raw, str):
            raw = {"name": raw}
        expect(raw, Mapping, sub_path, '{"name": ...}')
        check_keys(raw, _SUB_KEYS, sub_path, "sub type key")
        sub_name = raw.get("name")
        if not isinstance(sub_name, str) or not sub_name:
            raise config_error(f"{sub_path}.name", "every sub type needs a name")
        given = raw.get("higher_is_better")
        if given is not None:
            expect(given, bool, f"{sub_path}.higher_is_better", "true or false")
        if kind in BUILTIN_SUB_TYPES:
            allowed = BUILTIN_SUB_TYPES[kind]
            choice(sub_name, allowed, f"{sub_path}.name", f"{kind} sub type")
            higher = allowed[sub_name]
            if given is not None and given != higher:
                raise config_error(
                    f"{sub_path}.higher_is_better",
                    f"{kind} {sub_name} is {'higher' if higher else 'lower'}-is-better; remove higher_is_better",
                )
        elif given is not None:
            higher = given
        elif isinstance(plugin_directions, bool):
            higher = plugin_directions
        elif isinstance(plugin_directions, Mapping) and sub_name in plugin_directions:
            higher = bool(plugin_directions[sub_name])
        else:
            raise config_error(
                f"{sub_path}.higher_is_better",
                f"required for a {kind} metric: true if larger '{sub_name}' values are better, false otherwise",
            )
        priority = whole_number(raw.get("priority", -1), f"{sub_path}.priority")
        goal = parse_goal(raw["goal"], f"{sub_path}.goal", higher) if raw.get("goal") is not None else None
        metric_config = expect(raw.get("metric_config") or {}, Mapping, f"{sub_path}.metric_config", "an object")
        if kind == "accuracy":
            _check_accuracy_config(metric_config, f"{sub_path}.metric_config")
        elif kind in BUILTIN_SUB_TYPES:
            check_keys(metric_config, _OPTION_KEYS, f"{sub_path}.metric_config", "metric_config key")
        if any(s.name == sub_name for s in sub_types):
            raise config_error(f"{sub_path}.name", f"sub type '{sub_name}' appears twice in metric '{name}'")
        tolerance = DEFAULT_TOLERANCE.get(kind, 0.0)
        if raw.get("tolerance") is not None:
            tolerance = number(raw["tolerance"], f"{sub_path}.tolerance", minimum=0)
        relative = kind in RELATIVE_TOLERANCE_TYPES
        if relative and tolerance >= 1:
            raise config_error(
                f"{sub_path}.tolerance",
                f"is a fraction of the better value for {kind} (0.05 = 5%); use a number below 1, got {tolerance:g}",
            )
        sub_types.append(SubMetric(sub_name, priority, higher, goal, dict(metric_config), tolerance, relative))

    # Options: top level wins over user_config, which wins over the first sub type's metric_config.
    options: dict[str, Any] = {}
    for key in _OPTION_KEYS:
        for source, where in (
            (data, path),
            (user_config, f"{path}.user_config"),
            (sub_types[0].metric_config, f"{sub_path_of(0)}.metric_config"),
        ):
            if key in source:
                options[key] = (source[key], f"{where}.{key}")
                break
    kwargs: dict[str, Any] = {}
    if "warmup_num" in options:
        kwargs["warmup_num"] = whole_number(*options["warmup_num"], minimum=0, maximum=MAX_WARMUP_NUM)
    if "repeat_test_num" in options:
        kwargs["repeat_test_num"] = whole_number(*options["repeat_test_num"], minimum=1, maximum=MAX_REPEAT_TEST_NUM)
    if "sleep_num" in options:
        kwargs["sleep_num"] = number(*options["sleep_num"], minimum=0, maximum=MAX_SLEEP_NUM)
    for key in ("output_name", "mask_input"):
        if key in options:
            value, where = options[key]
            kwargs[key] = expect(value, str, where, f"the name of a model {key.split('_')[0]} (a string)")
    if "pooling" in options:
        value, where = options["pooling"]
        if value is not None:
            choice(value, _POOLINGS, where, "pooling")
        kwargs["pooling"] = None if value == "none" else value
    if "trim_padding" in options:
        value, where = options["trim_padding"]
        kwargs["trim_padding"] = expect(value, bool, where, "true or false")
        if value and kind != "agreement":
            raise config_error(where, f"trim_padding applies to agreement metrics only, not '{kind}'; remove it")

    data_config = data.get("data_config")
    inline = None
    if isinstance(data_config, Mapping):
        inline = DataConfig.from_json(data_config, json_path=f"{path}.data_config", base_dir=base_dir)
        data_config = inline.name
    elif data_config is not None:
        expect(data_config, str, f"{path}.data_config", "the name of a data config (or a data config object)")
        if data_config_names is not None and data_config not in set(data_config_names):
            names = sorted(set(data_config_names))
            raise config_error(
                f"{path}.data_config",
                f"no data config named '{data_config}'"
                f"{closest_match_hint(data_config, names)}; defined: {', '.join(names) or 'none'} "
                "(add it to data_configs)",
            )
    if kind == "accuracy" and data_config is None and "dataloader_func" not in user_config:
        raise config_error(
            f"{path}.data_config",
            "an accuracy metric needs labelled data; name a data config whose "
            "batches carry labels (e.g. an NpzDataContainer with a 'labels' array)",
        )
    if kind == "custom" and not (user_config.get("evaluate_func") or user_config.get("metric_func")):
        raise config_error(
            f"{path}.user_config.evaluate_func",
            "a custom metric needs user_config.evaluate_func (a "
            "function in user_script that returns the value) or user_config.metric_func",
        )
    return Metric(
        name=name,
        type=kind,
        sub_types=sub_types,
        data_config=data_config,
        user_config=dict(user_config),
        inline_data_config=inline,
        json=dict(data),
        json_path=path,
        **kwargs,
    )


def _check_user_config(user_config: Mapping[str, Any], path: str, base_dir: str | Path | None) -> None:
    """The values of a built-in or custom metric's ``user_config`` (the options are checked with the others)."""
    for key in _PATH_KEYS:
        if user_config.get(key) is not None:
            user_path(user_config[key], json_path(path, key), base_dir)
    for key in _FUNCTION_KEYS:
        value = user_config.get(key)
        if value is not None and not callable(value):
            expect(value, str, json_path(path, key), "the name of a function in user_script")
    for key in ("evaluate_func_kwargs", "metric_func_kwargs", "func_kwargs"):
        if user_config.get(key) is not None:
            expect(user_config[key], Mapping, json_path(path, key), "an object of keyword arguments")
    for name, kwargs in (user_config.get("func_kwargs") or {}).items():
        if kwargs is not None:
            expect(kwargs, Mapping, json_path(json_path(path, "func_kwargs"), name), "an object of keyword arguments")
    for key in ("io_bind", "shared_kv_buffer"):
        if user_config.get(key) is not None:
            expect(user_config[key], bool, json_path(path, key), "true or false")
    if user_config.get("batch_size") is not None:
        whole_number(user_config["batch_size"], json_path(path, "batch_size"), minimum=1, maximum=MAX_BATCH_SIZE)
    input_specs(user_config, path)
    settings, where = user_config.get("inference_settings"), json_path(path, "inference_settings")
    if isinstance(settings, Mapping) and "onnx" in settings:
        # Microsoft Olive keys a metric's settings by framework: {"onnx": {...}}
        check_keys(settings, ("onnx",), where, "framework")
        settings, where = settings["onnx"], json_path(where, "onnx")
    if settings is not None:
        try:
            check_inference_settings(settings, where)
        except ModelLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner=exc.owner) from None


def _check_accuracy_config(metric_config: Mapping[str, Any], path: str) -> None:
    check_keys(metric_config, _ACCURACY_METRIC_CONFIG, path, "metric_config key")
    if metric_config.get("average") is not None:
        choice(metric_config["average"], _AVERAGES, json_path(path, "average"), "average")
    if metric_config.get("task") is not None:
        choice(metric_config["task"], _TASKS, json_path(path, "task"), "task")
    if metric_config.get("num_classes") is not None:
        whole_number(metric_config["num_classes"], json_path(path, "num_classes"), minimum=1)
    if metric_config.get("multiclass") is not None:
        expect(metric_config["multiclass"], bool, json_path(path, "multiclass"), "true or false")
    if metric_config.get("pos_label") is not None:
        expect(
            metric_config["pos_label"], (int, str), json_path(path, "pos_label"), "a label (a whole number or a string)"
        )


def parse_metrics(
    data: Any,
    json_path: str = "evaluators.common.metrics",
    data_config_names: Iterable[str] | None = None,
    base_dir: str | Path | None = None,
) -> list[Metric]:
    """Validate an evaluator's ``metrics`` list: unique names, unique positive priorities.

    When no sub metric has a priority, the first one becomes the objective (priority 1), as Microsoft Olive
    does for a single metric.
    """
    expect(data, list, json_path, "a list of metrics")
    if not data:
        raise config_error(json_path, "empty; an evaluator needs at least one metric")
    metrics = [parse_metric(item, f"{json_path}[{i}]", data_config_names, base_dir) for i, item in enumerate(data)]
    seen: dict[str, int] = {}
    for index, metric in enumerate(metrics):
        if metric.name in seen:
            raise config_error(
                f"{json_path}[{index}].name",
                f"metric name '{metric.name}' is also used by "
                f"{json_path}[{seen[metric.name]}]; give each metric its own name",
            )
        seen[metric.name] = index
    return assign_priorities(metrics, json_path)


def assign_priorities(metrics: list[Metric], json_path: str = "metrics") -> list[Metric]:
    ranked: dict[int, str] = {}
    for metric in metrics:
        for sub in metric.sub_types:
            if sub.priority > 0:
                key = f"{metric.name}-{sub.name}"
                if sub.priority in ranked:
                    raise config_error(
                        json_path,
                        f"priority {sub.priority} is given to both {ranked[sub.priority]} and "
                        f"{key}; priorities rank objectives and must differ",
                    )
                ranked[sub.priority] = key
    if ranked:
        return metrics
    first = metrics[0]
    logger.debug("no metric has a priority; %s-%s becomes the objective", first.name, first.sub_types[0].name)
    subs = [attrs.evolve(first.sub_types[0], priority=1), *first.sub_types[1:]]
    return [attrs.evolve(first, sub_types=subs), *metrics[1:]]
