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
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from olive.exceptions import WorkflowConfigError, closest_match_hint

if TYPE_CHECKING:
    from olive.data.config import DataConfig

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

GOAL_TYPES = ("threshold", "min-improvement", "percent-min-improvement", "max-degradation", "percent-max-degradation")

WARMUP_NUM = 10
REPEAT_TEST_NUM = 20
SLEEP_NUM = 0

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
_SUB_KEYS = ("name", "priority", "higher_is_better", "goal", "metric_config")
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
_POOLINGS = ("mean", "cls", "none")


@attrs.frozen
class MetricGoal:
    """``threshold`` (absolute), or relative to the input model: ``min-improvement``,
    ``percent-min-improvement``, ``max-degradation``, ``percent-max-degradation``."""

    type: str
    value: float


@attrs.frozen
class SubMetric:
    """One measured quantity of a metric (``avg`` of ``latency``...). ``priority`` > 0 makes it an objective."""

    name: str
    priority: int = -1
    higher_is_better: bool = True
    goal: MetricGoal | None = None
    metric_config: dict[str, Any] = attrs.field(factory=dict)


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
        from olive.evaluator.result import joint_key

        return [joint_key(self.name, sub.name) for sub in self.sub_types]

    @property
    def is_plugin(self) -> bool:
        return self.type not in BUILTIN_TYPES


_PLUGIN_METRICS: dict[int, tuple[Any, dict[str, Callable[..., Any]]]] = {}


def plugin_metrics() -> dict[str, Callable[..., Any]]:
    """Metrics registered by installed plugins through ``olive_register_metrics`` (name -> evaluate).

    The hook fires once per plugin manager; a plugin may not take a built-in metric type's name.
    """
    try:
        from olive.plugins.manager import get_plugin_manager, get_plugin_metrics
    except ImportError:
        return {}
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


def _fail(path: str, message: str) -> WorkflowConfigError:
    return WorkflowConfigError(f"{path}: {message}")


def _check_keys(data: Mapping[str, Any], allowed: Iterable[str], path: str, what: str) -> None:
    allowed = tuple(allowed)
    for key in data:
        if key not in allowed:
            raise _fail(
                f"{path}.{key}",
                f"unknown {what} key{closest_match_hint(str(key), allowed)}; valid keys: {', '.join(allowed)}",
            )


def _int(value: Any, path: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise _fail(path, f"expected an integer >= {minimum}, got {value!r}")
    return int(value)


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(path, f"expected a number, got {value!r}")
    return float(value)


def parse_goal(data: Any, path: str, higher_is_better: bool) -> MetricGoal:
    if not isinstance(data, Mapping):
        raise _fail(path, f'expected {{"type": ..., "value": ...}}, got {data!r}')
    _check_keys(data, ("type", "value"), path, "goal")
    kind = data.get("type")
    if kind is None:
        raise _fail(f"{path}.type", f"missing; use one of {', '.join(GOAL_TYPES)}")
    if kind not in GOAL_TYPES:
        raise _fail(
            f"{path}.type",
            f"unknown goal type {kind!r}{closest_match_hint(str(kind), GOAL_TYPES)}; "
            f"use one of {', '.join(GOAL_TYPES)}",
        )
    if "value" not in data:
        raise _fail(f"{path}.value", "missing; a goal needs a number")
    value = _number(data["value"], f"{path}.value")
    if kind != "threshold" and value < 0:
        raise _fail(f"{path}.value", f"must be >= 0 for a {kind} goal, got {value}")
    # A percentage that would ask for a value below zero can never be met.
    shrinking = (kind == "percent-min-improvement" and not higher_is_better) or (
        kind == "percent-max-degradation" and higher_is_better
    )
    if shrinking and value >= 100:
        raise _fail(
            f"{path}.value",
            f"must be below 100 for a {kind} goal on a "
            f"{'higher' if higher_is_better else 'lower'}-is-better metric, got {value}",
        )
    return MetricGoal(kind, value)


def parse_metric(
    data: Mapping[str, Any],
    json_path: str = "metrics[0]",
    data_config_names: Iterable[str] | None = None,
    base_dir: Any = None,
) -> Metric:
    """Validate one metric's JSON; every error names its JSON path and the fix.

    :param data_config_names: the names in the workflow's ``data_configs`` (``None``: not checked).
    :param base_dir: folder for relative paths of an inline data config.
    """
    path = json_path
    if not isinstance(data, Mapping):
        raise _fail(path, f"expected a metric object, got {type(data).__name__}")
    if "type" not in data or data["type"] in (None, ""):
        raise _fail(
            f"{path}.type",
            f"every metric needs a type; use one of {', '.join(BUILTIN_TYPES)} (or a metric type a plugin registers)",
        )
    kind = data["type"]
    if not isinstance(kind, str):
        raise _fail(f"{path}.type", f"expected a string, got {kind!r}")
    plugin_evaluate = None
    if kind not in BUILTIN_TYPES:
        registered = plugin_metrics()
        plugin_evaluate = registered.get(kind)
        if plugin_evaluate is None:
            known = (*BUILTIN_TYPES, *registered)
            raise _fail(
                f"{path}.type",
                f"unknown metric type {kind!r}{closest_match_hint(kind, known)}; "
                f"use one of {', '.join(known)} or install the plugin that provides it",
            )
    _check_keys(data, _TOP_KEYS, path, "metric")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(f"{path}.name", "every metric needs a name (a non-empty string), e.g. the type")

    user_config = data.get("user_config") or {}
    if not isinstance(user_config, Mapping):
        raise _fail(f"{path}.user_config", f"expected an object, got {user_config!r}")
    if plugin_evaluate is None:
        _check_keys(user_config, _USER_CONFIG_KEYS, f"{path}.user_config", "user_config")

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
                raise _fail(
                    f"{path}.{key}", f'belongs inside sub_types (e.g. "sub_types": [{{"name": "avg", "{key}": ...}}])'
                )
        sub_path_of = lambda i: f"{path}.sub_types[{i}]"  # noqa: E731
    if raw_subs is None:
        if kind not in DEFAULT_SUB_TYPE:
            raise _fail(
                f"{path}.sub_types",
                'missing; a custom or plugin metric needs e.g. [{"name": "score", "higher_is_better": true}]',
            )
        raw_subs = [{"name": DEFAULT_SUB_TYPE[kind]}]
    if not isinstance(raw_subs, list) or not raw_subs:
        raise _fail(f"{path}.sub_types", f"expected a non-empty list of sub types, got {raw_subs!r}")

    plugin_directions = getattr(plugin_evaluate, "higher_is_better", None)
    sub_types: list[SubMetric] = []
    for index, raw in enumerate(raw_subs):
        sub_path = sub_path_of(index)
        if isinstance(raw, str):
            raw = {"name": raw}
        if not isinstance(raw, Mapping):
            raise _fail(sub_path, f'expected {{"name": ...}}, got {raw!r}')
        _check_keys(raw, _SUB_KEYS, sub_path, "sub type")
        sub_name = raw.get("name")
        if not isinstance(sub_name, str) or not sub_name:
            raise _fail(f"{sub_path}.name", "every sub type needs a name")
        given = raw.get("higher_is_better")
        if given is not None and not isinstance(given, bool):
            raise _fail(f"{sub_path}.higher_is_better", f"expected true or false, got {given!r}")
        if kind in BUILTIN_SUB_TYPES:
            allowed = BUILTIN_SUB_TYPES[kind]
            if sub_name not in allowed:
                raise _fail(
                    f"{sub_path}.name",
                    f"unknown {kind} sub type {sub_name!r}"
                    f"{closest_match_hint(sub_name, allowed)}; use one of {', '.join(allowed)}",
                )
            higher = allowed[sub_name]
            if given is not None and given != higher:
                raise _fail(
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
            raise _fail(
                f"{sub_path}.higher_is_better",
                f"required for a {kind} metric: true if larger '{sub_name}' values are better, false otherwise",
            )
        priority = raw.get("priority", -1)
        if isinstance(priority, bool) or not isinstance(priority, numbers.Integral):
            raise _fail(f"{sub_path}.priority", f"expected an integer (1 = most important), got {priority!r}")
        goal = parse_goal(raw["goal"], f"{sub_path}.goal", higher) if raw.get("goal") is not None else None
        metric_config = raw.get("metric_config") or {}
        if not isinstance(metric_config, Mapping):
            raise _fail(f"{sub_path}.metric_config", f"expected an object, got {metric_config!r}")
        if kind == "accuracy":
            _check_keys(metric_config, _ACCURACY_METRIC_CONFIG, f"{sub_path}.metric_config", "metric_config")
            average = metric_config.get("average")
            if average is not None and average not in _AVERAGES:
                raise _fail(
                    f"{sub_path}.metric_config.average",
                    f"unknown average {average!r}"
                    f"{closest_match_hint(str(average), _AVERAGES)}; use one of {', '.join(_AVERAGES)}",
                )
        if any(s.name == sub_name for s in sub_types):
            raise _fail(f"{sub_path}.name", f"sub type '{sub_name}' appears twice in metric '{name}'")
        sub_types.append(SubMetric(sub_name, int(priority), higher, goal, dict(metric_config)))

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
        kwargs["warmup_num"] = _int(*options["warmup_num"], minimum=0)
    if "repeat_test_num" in options:
        kwargs["repeat_test_num"] = _int(*options["repeat_test_num"], minimum=1)
    if "sleep_num" in options:
        value, where = options["sleep_num"]
        kwargs["sleep_num"] = _number(value, where)
        if kwargs["sleep_num"] < 0:
            raise _fail(where, "must be >= 0 (seconds to sleep between runs)")
    for key in ("output_name", "mask_input"):
        if key in options:
            value, where = options[key]
            if not isinstance(value, str):
                raise _fail(where, f"expected the name of a model {key.split('_')[0]} (a string), got {value!r}")
            kwargs[key] = value
    if "pooling" in options:
        value, where = options["pooling"]
        if value is not None and value not in _POOLINGS:
            raise _fail(
                where,
                f"unknown pooling {value!r}{closest_match_hint(str(value), _POOLINGS)}; "
                f"use one of {', '.join(_POOLINGS)}",
            )
        kwargs["pooling"] = None if value == "none" else value
    if "trim_padding" in options:
        value, where = options["trim_padding"]
        if not isinstance(value, bool):
            raise _fail(where, f"expected true or false, got {value!r}")
        if value and kind != "agreement":
            raise _fail(where, f"trim_padding applies to agreement metrics only, not '{kind}'; remove it")
        kwargs["trim_padding"] = value

    data_config = data.get("data_config")
    inline = None
    if isinstance(data_config, Mapping):
        from olive.data.config import DataConfig

        inline = DataConfig.from_json(data_config, json_path=f"{path}.data_config", base_dir=base_dir)
        data_config = inline.name
    elif data_config is not None:
        if not isinstance(data_config, str):
            raise _fail(f"{path}.data_config", f"expected the name of a data config, got {data_config!r}")
        if data_config_names is not None and data_config not in set(data_config_names):
            names = sorted(set(data_config_names))
            raise _fail(
                f"{path}.data_config",
                f"no data config named '{data_config}'"
                f"{closest_match_hint(data_config, names)}; defined: {', '.join(names) or 'none'} "
                "(add it to data_configs)",
            )
    if kind == "accuracy" and data_config is None and "dataloader_func" not in user_config:
        raise _fail(
            f"{path}.data_config",
            "an accuracy metric needs labelled data; name a data config whose "
            "batches carry labels (e.g. an NpzDataContainer with a 'labels' array)",
        )
    if kind == "custom" and not (user_config.get("evaluate_func") or user_config.get("metric_func")):
        raise _fail(
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


def parse_metrics(
    data: Any,
    json_path: str = "evaluators.common.metrics",
    data_config_names: Iterable[str] | None = None,
    base_dir: Any = None,
) -> list[Metric]:
    """Validate an evaluator's ``metrics`` list: unique names, unique positive priorities.

    When no sub metric has a priority, the first one becomes the objective (priority 1), as Microsoft Olive
    does for a single metric.
    """
    if not isinstance(data, list) or not data:
        raise _fail(json_path, "expected a non-empty list of metrics")
    metrics = [parse_metric(item, f"{json_path}[{i}]", data_config_names, base_dir) for i, item in enumerate(data)]
    seen: dict[str, int] = {}
    for index, metric in enumerate(metrics):
        if metric.name in seen:
            raise _fail(
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
                    raise _fail(
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
