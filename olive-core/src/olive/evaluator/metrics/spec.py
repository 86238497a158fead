"""What a parsed metric is: :class:`Metric`, its :class:`SubMetric` quantities and their :class:`MetricGoal`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from olive.config_errors import check_keys, choice, config_error, expect, number
from olive.data.config import DataConfig
from olive.evaluator.result import joint_key

GOAL_TYPES = ("threshold", "min-improvement", "percent-min-improvement", "max-degradation", "percent-max-degradation")

WARMUP_NUM = 10
REPEAT_TEST_NUM = 20
SLEEP_NUM = 0

# Keys of Microsoft Olive's metric schema that are accepted and have no effect here (a metric's, its user_config's).
WITHOUT_EFFECT = ("backend",)
USER_CONFIG_WITHOUT_EFFECT = ("shared_kv_buffer",)


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
    # Agreement only: the batch sizes the model is served at (``served_batch_size``): the samples are shuffled
    # with a fixed seed and batched together at each, and each figure is the worst over them. Empty: the data
    # config's batches as they come.
    served_batch_sizes: tuple[int, ...] = ()
    inline_data_config: DataConfig | None = attrs.field(default=None, eq=False, repr=False)
    json: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    json_path: str = attrs.field(default="metric", eq=False, repr=False)

    def keys(self) -> list[str]:
        return [joint_key(self.name, sub.name) for sub in self.sub_types]


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
