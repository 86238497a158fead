"""``MetricType``: one kind of metric, with how its config is read and how its values are measured.

The parse that every type shares (name, sub types and their goals, options, data) is written here once; a
type says what differs through class attributes and a few methods, and its ``measure`` is the only place its
numbers are computed.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.config_errors import (
    SCRIPT_KINDS,
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
from olive.evaluator.metrics.spec import Metric, SubMetric, parse_goal
from olive.exceptions import ModelLoadError, OliveError, WorkflowConfigError, closest_match_hint
from olive.measure.pooling import POOLINGS
from olive.measure.sessions import check_inference_settings

if TYPE_CHECKING:
    from olive.evaluator.metrics.run import MetricRun

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
OPTION_KEYS = (
    "warmup_num",
    "repeat_test_num",
    "sleep_num",
    "output_name",
    "pooling",
    "mask_input",
    "trim_padding",
    "served_batch_size",
)
# Older Olive files give one sub type at the top level with these keys.
_SINGLE_SUB_KEYS = ("higher_is_better", "goal", "priority", "metric_config")
TOP_KEYS = (
    "name",
    "type",
    "sub_types",
    "data_config",
    "user_config",
    "backend",
    *OPTION_KEYS,
    "sub_type",
    *_SINGLE_SUB_KEYS,
)
SUB_KEYS = ("name", "priority", "higher_is_better", "goal", "metric_config", "tolerance")
USER_CONFIG_KEYS = (
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
    *OPTION_KEYS,
)
_PATH_KEYS = ("user_script", "script_dir", "data_dir")
_FUNCTION_KEYS = ("evaluate_func", "metric_func", "post_processing_func", "dataloader_func")
# "none" compares the outputs as they are.
_POOLINGS = (*POOLINGS, "none")

Values = dict[str, float]
Measured = tuple[Values, dict[str, Any]]


class MetricType:
    """One metric type: built in (``latency``...) or registered by a plugin, looked up by :attr:`name`.

    A subclass sets the class attributes that describe its sub types and implements :meth:`measure`; the
    other methods have the defaults most types want.
    """

    #: the ``type`` a workflow names.
    name: str = ""
    #: the sub types it measures and whether higher is better; None: any name, with its direction given.
    sub_types: ClassVar[Mapping[str, bool] | None] = None
    #: the sub type measured when a metric names none (None: the metric must name its sub types).
    default_sub_type: ClassVar[str | None] = None
    #: the ranking tolerance of a sub type that gives none, and whether it is a fraction of the better value.
    default_tolerance: ClassVar[float] = 0.0
    relative_tolerance: ClassVar[bool] = False
    #: whether ``trim_padding`` and ``served_batch_size`` mean something for this type (agreement's).
    takes_trim_padding: ClassVar[bool] = False

    # ------------------------------------------------------------------------------------------ parse

    def parse(
        self,
        data: Mapping[str, Any],
        path: str,
        data_config_names: Iterable[str] | None = None,
        base_dir: str | Path | None = None,
    ) -> Metric:
        """Validate one metric's JSON whose ``type`` is this one; every error names its JSON path and the fix."""
        check_keys(data, TOP_KEYS, path, "metric key")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise config_error(f"{path}.name", "every metric needs a name (a non-empty string), e.g. the type")
        user_config = expect(data.get("user_config") or {}, Mapping, f"{path}.user_config", "an object")
        self.check_user_config(user_config, f"{path}.user_config", base_dir)
        if data.get("backend") is not None:
            choice(data["backend"], BACKENDS, f"{path}.backend", "backend")
        raw_subs, sub_path_of = self._raw_sub_types(data, path)
        sub_types: list[SubMetric] = []
        for index, raw in enumerate(raw_subs):
            sub_types.append(self._sub_type(raw, sub_path_of(index), sub_types, name))
        options = self._options(data, user_config, sub_types[0].metric_config, path, sub_path_of(0))
        data_config, inline = _data_config(data.get("data_config"), path, data_config_names, base_dir)
        self.check(data_config, user_config, path)
        return Metric(
            name=name,
            type=self.name,
            sub_types=sub_types,
            data_config=data_config,
            user_config=dict(user_config),
            inline_data_config=inline,
            json=dict(data),
            json_path=path,
            **options,
        )

    def check_user_config(self, user_config: Mapping[str, Any], path: str, base_dir: str | Path | None) -> None:
        """The keys and values of ``user_config`` (Microsoft Olive's metric options)."""
        check_keys(user_config, USER_CONFIG_KEYS, path, "user_config key")
        for key in _PATH_KEYS:
            if user_config.get(key) is not None:
                user_path(user_config[key], json_path(path, key), base_dir, kind=SCRIPT_KINDS.get(key))
        for key in _FUNCTION_KEYS:
            value = user_config.get(key)
            if value is not None and not callable(value):
                expect(value, str, json_path(path, key), "the name of a function in user_script")
        for key in ("evaluate_func_kwargs", "metric_func_kwargs", "func_kwargs"):
            if user_config.get(key) is not None:
                expect(user_config[key], Mapping, json_path(path, key), "an object of keyword arguments")
        for name, kwargs in (user_config.get("func_kwargs") or {}).items():
            if kwargs is not None:
                where = json_path(json_path(path, "func_kwargs"), name)
                expect(kwargs, Mapping, where, "an object of keyword arguments")
        for key in ("io_bind", "shared_kv_buffer"):
            if user_config.get(key) is not None:
                expect(user_config[key], bool, json_path(path, key), "true or false")
        if user_config.get("batch_size") is not None:
            whole_number(user_config["batch_size"], json_path(path, "batch_size"), minimum=1, maximum=MAX_BATCH_SIZE)
        input_specs(user_config, path)
        _check_settings(user_config.get("inference_settings"), json_path(path, "inference_settings"))

    def direction(self, sub_name: str, given: bool | None, path: str) -> bool:
        """Whether higher values of sub type ``sub_name`` are better; ``given``: the config's
        ``higher_is_better``. A type with fixed sub types checks the name; otherwise the config must say."""
        if self.sub_types is not None:
            choice(sub_name, self.sub_types, f"{path}.name", f"{self.name} sub type")
            higher = self.sub_types[sub_name]
            if given is not None and given != higher:
                raise config_error(
                    f"{path}.higher_is_better",
                    f"{self.name} {sub_name} is {'higher' if higher else 'lower'}-is-better; remove higher_is_better",
                )
            return higher
        if given is None:
            raise config_error(
                f"{path}.higher_is_better",
                f"required for a {self.name} metric: true if larger '{sub_name}' values are better, false otherwise",
            )
        return given

    def check_sub_config(self, metric_config: Mapping[str, Any], path: str) -> None:
        """A sub type's ``metric_config``: by default the metric's options only."""
        check_keys(metric_config, OPTION_KEYS, path, "metric_config key")

    def check(self, data_config: str | None, user_config: Mapping[str, Any], path: str) -> None:
        """Checks across the metric's keys, once the rest is valid (the data a type needs...)."""

    # ------------------------------------------------------------------------------------------ measure

    def measure(self, run: MetricRun, metric: Metric) -> Measured:
        """``({sub type: value}, metadata)`` of ``run.model``; ``run`` holds its sessions and data."""
        raise NotImplementedError(f"metric type {self.name!r} does not say how it is measured")

    # ------------------------------------------------------------------------------------------ the parse's parts

    def _raw_sub_types(self, data: Mapping[str, Any], path: str) -> tuple[list[Any], Callable[[int], str]]:
        raw_subs = data.get("sub_types")
        if raw_subs is None and "sub_type" in data:
            # Older files give one sub type at the top level.
            single = {k: data[k] for k in _SINGLE_SUB_KEYS if k in data} | {"name": data["sub_type"]}
            return [single], lambda i: path
        for key in ("sub_type", *_SINGLE_SUB_KEYS):
            if key in data:
                raise config_error(
                    f"{path}.{key}", f'belongs inside sub_types (e.g. "sub_types": [{{"name": "avg", "{key}": ...}}])'
                )
        if raw_subs is None:
            if self.default_sub_type is None:
                raise config_error(
                    f"{path}.sub_types",
                    'missing; a custom or plugin metric needs e.g. [{"name": "score", "higher_is_better": true}]',
                )
            raw_subs = [{"name": self.default_sub_type}]
        expect(raw_subs, list, f"{path}.sub_types", "a list of sub types")
        if not raw_subs:
            raise config_error(f"{path}.sub_types", 'empty; give at least one sub type, e.g. [{"name": "avg"}]')
        return raw_subs, lambda i: f"{path}.sub_types[{i}]"

    def _sub_type(self, raw: Any, path: str, before: list[SubMetric], metric_name: str) -> SubMetric:
        if isinstance(raw, str):
            raw = {"name": raw}
        expect(raw, Mapping, path, '{"name": ...}')
        check_keys(raw, SUB_KEYS, path, "sub type key")
        sub_name = raw.get("name")
        if not isinstance(sub_name, str) or not sub_name:
            raise config_error(f"{path}.name", "every sub type needs a name")
        given = raw.get("higher_is_better")
        if given is not None:
            expect(given, bool, f"{path}.higher_is_better", "true or false")
        higher = self.direction(sub_name, given, path)
        priority = whole_number(raw.get("priority", -1), f"{path}.priority")
        goal = parse_goal(raw["goal"], f"{path}.goal", higher) if raw.get("goal") is not None else None
        metric_config = expect(raw.get("metric_config") or {}, Mapping, f"{path}.metric_config", "an object")
        self.check_sub_config(metric_config, f"{path}.metric_config")
        if any(s.name == sub_name for s in before):
            raise config_error(f"{path}.name", f"sub type '{sub_name}' appears twice in metric '{metric_name}'")
        tolerance = self.default_tolerance
        if raw.get("tolerance") is not None:
            tolerance = number(raw["tolerance"], f"{path}.tolerance", minimum=0)
        if self.relative_tolerance and tolerance >= 1:
            raise config_error(
                f"{path}.tolerance",
                f"is a fraction of the better value for {self.name} (0.05 = 5%); use a number below 1, "
                f"got {tolerance:g}",
            )
        return SubMetric(sub_name, priority, higher, goal, dict(metric_config), tolerance, self.relative_tolerance)

    def _options(
        self,
        data: Mapping[str, Any],
        user_config: Mapping[str, Any],
        first_metric_config: Mapping[str, Any],
        path: str,
        first_sub_path: str,
    ) -> dict[str, Any]:
        # Top level wins over user_config, which wins over the first sub type's metric_config.
        found: dict[str, tuple[Any, str]] = {}
        for key in OPTION_KEYS:
            for source, where in (
                (data, path),
                (user_config, f"{path}.user_config"),
                (first_metric_config, f"{first_sub_path}.metric_config"),
            ):
                if key in source:
                    found[key] = (source[key], f"{where}.{key}")
                    break
        options = {key: convert(*found[key]) for key, convert in _OPTIONS.items() if key in found}
        if options.get("trim_padding") and not self.takes_trim_padding:
            raise config_error(
                found["trim_padding"][1],
                f"trim_padding applies to agreement metrics only, not '{self.name}'; remove it",
            )
        if "served_batch_size" in found and not self.takes_trim_padding:
            raise config_error(
                found["served_batch_size"][1],
                f"served_batch_size applies to agreement metrics only, not '{self.name}'; remove it (a data config's "
                "dataloader_config.batch_size sets the batches other metrics read)",
            )
        if "served_batch_size" in found:
            options["served_batch_sizes"] = options.pop("served_batch_size")
        return options


def _pooling(value: Any, where: str) -> str | None:
    if value is not None:
        choice(value, _POOLINGS, where, "pooling")
    return None if value == "none" else value


# How each option's value is checked and converted, in the order they are checked.
_OPTIONS: dict[str, Callable[[Any, str], Any]] = {
    "warmup_num": lambda value, where: whole_number(value, where, minimum=0, maximum=MAX_WARMUP_NUM),
    "repeat_test_num": lambda value, where: whole_number(value, where, minimum=1, maximum=MAX_REPEAT_TEST_NUM),
    "sleep_num": lambda value, where: number(value, where, minimum=0, maximum=MAX_SLEEP_NUM),
    "output_name": lambda value, where: expect(value, str, where, "the name of a model output (a string)"),
    "mask_input": lambda value, where: expect(value, str, where, "the name of a model mask (a string)"),
    "pooling": _pooling,
    "trim_padding": lambda value, where: expect(value, bool, where, "true or false"),
    "served_batch_size": lambda value, where: _batch_sizes(value, where),
}


def _batch_sizes(value: Any, where: str) -> tuple[int, ...]:
    """``32`` or ``[1, 8, 32]`` -> the batch sizes, ascending, each once."""
    values = value if isinstance(value, list) else [value]
    if not values:
        raise config_error(where, "empty; give a batch size (e.g. 32) or a list of them (e.g. [1, 8, 32])")
    sizes = [
        whole_number(v, f"{where}[{i}]" if isinstance(value, list) else where, minimum=1, maximum=MAX_BATCH_SIZE)
        for i, v in enumerate(values)
    ]
    return tuple(sorted(set(sizes)))


def _check_settings(settings: Any, where: str) -> None:
    if isinstance(settings, Mapping) and "onnx" in settings:
        # Microsoft Olive keys a metric's settings by framework: {"onnx": {...}}
        check_keys(settings, ("onnx",), where, "framework")
        settings, where = settings["onnx"], json_path(where, "onnx")
    if settings is not None:
        try:
            check_inference_settings(settings, where)
        except ModelLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner=exc.owner) from None


def _data_config(
    data_config: Any, path: str, data_config_names: Iterable[str] | None, base_dir: str | Path | None
) -> tuple[str | None, DataConfig | None]:
    """The name of the metric's data config, and the config itself when the metric gives it inline."""
    if isinstance(data_config, Mapping):
        inline = DataConfig.from_json(data_config, json_path=f"{path}.data_config", base_dir=base_dir)
        return inline.name, inline
    if data_config is None:
        return None, None
    expect(data_config, str, f"{path}.data_config", "the name of a data config (or a data config object)")
    if data_config_names is not None and data_config not in set(data_config_names):
        names = sorted(set(data_config_names))
        raise config_error(
            f"{path}.data_config",
            f"no data config named '{data_config}'"
            f"{closest_match_hint(data_config, names)}; defined: {', '.join(names) or 'none'} "
            "(add it to data_configs)",
        )
    return data_config, None


def user_values(raw: Any, metric: Metric, what: str) -> Values:
    """The values a user's or plugin's function returned: a number (one sub type) or ``{sub type: number}``."""

    def value_of(value: Any, sub: str) -> float:
        if isinstance(value, Mapping) and "value" in value:
            value = value["value"]
        value = getattr(value, "value", value)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise OliveError(
                f"metric '{metric.name}' ({metric.json_path}): {what} returned {value!r} for '{sub}'; return a number"
            ) from None

    if isinstance(raw, numbers.Real) or (hasattr(raw, "item") and getattr(raw, "ndim", 1) == 0):
        if len(metric.sub_types) != 1:
            raise OliveError(
                f"metric '{metric.name}' ({metric.json_path}): {what} returned one number but the metric has "
                f"sub types {', '.join(s.name for s in metric.sub_types)}; return a dict keyed by sub type"
            )
        return {metric.sub_types[0].name: value_of(raw, metric.sub_types[0].name)}
    if isinstance(raw, Mapping):
        values: Values = {}
        for key, value in raw.items():
            # a MetricResult-style key "name-sub" is accepted too
            sub = key[len(metric.name) + 1 :] if key.startswith(f"{metric.name}-") else key
            values[sub] = value_of(value, sub)
        return values
    raise OliveError(
        f"metric '{metric.name}' ({metric.json_path}): {what} returned {type(raw).__name__}; return a number or a "
        "dict of sub type -> number"
    )
