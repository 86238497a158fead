"""``search_strategy``: how a workflow searches, and where its trials run (``search_strategy.executor``)."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import attrs

from olive.config.fields import one_of, real, typed, whole
from olive.config.structure import converter, note_without_effect, structure_fields, valid_keys
from olive.config_errors import SEED_MAX, check_keys, choice, config_error, expect, json_path, whole_number
from olive.search.samplers import BUILTIN_SAMPLERS

logger = logging.getLogger(__name__)

# Workers and trials in flight: beyond these a machine runs out of processes before the search does.
MAX_WORKERS = 1024
MAX_PENDING = 100_000
EXECUTION_ORDERS = ("joint", "pass-by-pass")
START_METHODS = ("fork", "forkserver", "spawn")
# The executors trials run on, and the keys each reads (olive.engine.executors builds them).
EXECUTORS: dict[str, tuple[str, ...]] = {
    "sequential": ("type",),
    "process": ("type", "max_workers", "max_pending", "start_method"),
    "ray": ("type", "address", "num_cpus_per_trial", "max_pending"),
}
EXECUTOR_TYPES = tuple(EXECUTORS)
# Microsoft Olive's search_algorithm names and the samplers that do the same.
_OLD_ALGORITHMS = {"exhaustive": "sequential", "random": "random", "tpe": "tpe"}
SAMPLERS = tuple(BUILTIN_SAMPLERS)


@attrs.frozen
class ExecutorConfig:
    """Where search trials run (``search_strategy.executor``; a bare name is the ``type``).

    - ``sequential`` (default): one after another in this process.
    - ``process``: ``max_workers`` local worker processes (default: one per CPU); ``start_method`` ``fork``
      (default where available: workers inherit in-process passes), ``forkserver`` or ``spawn``.
    - ``ray``: Ray tasks; ``address`` ``"auto"``, ``"ray://host:port"`` or null (start a local Ray);
      ``num_cpus_per_trial`` CPUs Ray reserves per trial. Needs ``olive-core[ray]``.
    - ``max_pending``: trials handed out before their results are in (default: twice the workers).
    """

    type: str = attrs.field(default="sequential", validator=one_of(EXECUTOR_TYPES))
    max_workers: int | None = attrs.field(default=None, validator=whole(1, MAX_WORKERS, optional=True))
    address: str | None = attrs.field(
        default=None, validator=typed(str, '"auto", "ray://host:port" or null', optional=True)
    )
    num_cpus_per_trial: float = attrs.field(
        default=1, converter=lambda v: 1 if v is None else v, validator=real(above=0, maximum=MAX_WORKERS)
    )
    max_pending: int | None = attrs.field(default=None, validator=whole(1, MAX_PENDING, optional=True))
    start_method: str | None = attrs.field(default=None, validator=one_of(START_METHODS, optional=True))


def _structure_executor(value: Any, cls: type[ExecutorConfig]) -> ExecutorConfig:
    if isinstance(value, str):
        value = {"type": value}
    expect(value, dict, "", 'an object like {"type": "process", "max_workers": 2}')
    kind = choice(value.get("type", "sequential"), EXECUTOR_TYPES, "type")
    check_keys(value, EXECUTORS[kind], "")
    return structure_fields(value, cls)


@attrs.frozen
class SearchStrategyConfig:
    """How to search (present iff the workflow has ``search_strategy``).

    - ``execution_order``: ``joint`` searches the product of every pass's space, each point a full chain;
      ``pass-by-pass`` searches one pass at a time and feeds the best model to the next pass.
    - ``sampler``: ``sequential``, ``random``, ``tpe`` or a plugin sampler; ``sampler_config`` its options.
    - ``max_samples``: points run per search (the joint search, or each pass's search); 0 = all. Pruned and
      INVALID points do not count.
    - ``max_iter``: points run in the whole workflow; ``max_time``: seconds after which no new point starts.
    - ``stop_when_goals_met``: stop a search at the first model that meets every goal.
    - ``executor``: where trials run (:class:`ExecutorConfig`); results do not depend on it.

    Microsoft Olive's ``search_algorithm`` (exhaustive | random | tpe) and ``search_algorithm_config``
    (``num_samples``, ``seed``) are read as ``sampler``, ``max_samples`` and ``seed``, with a warning.
    """

    execution_order: str = attrs.field(default="joint", validator=one_of(EXECUTION_ORDERS))
    # Plugin samplers are checked against the registry before the run (olive.workflows.prepare).
    sampler: str = attrs.field(default="sequential", validator=typed(str, f"one of {', '.join(SAMPLERS)}"))
    sampler_config: dict[str, Any] = attrs.field(
        factory=dict, converter=lambda v: dict(v) if isinstance(v, dict) else v, validator=typed(dict, "an object")
    )
    max_samples: int = attrs.field(default=0, validator=whole(0))
    seed: int | None = attrs.field(default=0, validator=whole(0, SEED_MAX, optional=True))
    stop_when_goals_met: bool = attrs.field(default=False, validator=typed(bool, "true or false"))
    max_iter: int | None = attrs.field(default=None, validator=whole(0, optional=True))
    max_time: float | None = attrs.field(default=None, validator=real(0, optional=True))
    executor: ExecutorConfig = attrs.field(factory=ExecutorConfig)

    _legacy_keys: ClassVar[tuple[str, ...]] = ("search_algorithm", "search_algorithm_config")
    #: accepted and without effect here (the workflow's one warning names them)
    ignored_keys: ClassVar[tuple[str, ...]] = ("output_model_num", "include_pass_params")

    def __attrs_post_init__(self) -> None:
        if not self.sampler:
            raise config_error("sampler", f"empty; use one of {', '.join(SAMPLERS)}")
        factory = BUILTIN_SAMPLERS.get(self.sampler)
        if factory is not None:
            _check_sampler_options(self.sampler_config, self.sampler, getattr(factory, "OPTIONS", {}))


def _check_sampler_options(options: dict[str, Any], sampler: str, allowed: dict[str, Any]) -> None:
    check_keys(options, allowed, "sampler_config", what=f"option of the {sampler} sampler")
    for key, option in options.items():
        kind, words = allowed[key]
        where = json_path("sampler_config", key)
        if isinstance(kind, int):
            whole_number(option, where, minimum=kind, maximum=words)
        else:
            expect(option, kind, where, words)


def _structure_search(value: Any, cls: type[SearchStrategyConfig]) -> SearchStrategyConfig:
    if value is True:
        return cls()
    expect(value, dict, "", 'an object like {"execution_order": "joint", "sampler": "tpe"} (or false)')
    check_keys(value, valid_keys(cls) + list(cls.ignored_keys), "")
    note_without_effect(value, cls.ignored_keys)
    fields = {k: v for k, v in value.items() if k not in cls.ignored_keys and k not in cls._legacy_keys}
    if any(key in value for key in cls._legacy_keys):
        fields = {**fields, **_from_search_algorithm(value)}
    if fields.get("executor") is None:
        fields.pop("executor", None)
    return structure_fields(fields, cls)


def _from_search_algorithm(value: dict[str, Any]) -> dict[str, Any]:
    """Microsoft Olive's ``search_algorithm`` / ``search_algorithm_config`` as ``sampler`` etc."""
    logger.warning(
        "search_strategy.search_algorithm / search_algorithm_config are deprecated; "
        "use search_strategy.sampler (sequential | random | tpe) and max_samples."
    )
    if "sampler" in value:
        raise config_error("search_algorithm", "given together with 'sampler'; keep only 'sampler'")
    result: dict[str, Any] = {}
    if "search_algorithm" in value:
        result["sampler"] = _OLD_ALGORITHMS[
            choice(value["search_algorithm"], tuple(_OLD_ALGORITHMS), "search_algorithm")
        ]
    old = expect(value.get("search_algorithm_config") or {}, dict, "search_algorithm_config", "an object")
    check_keys(old, ("num_samples", "seed"), "search_algorithm_config")
    if "num_samples" in old:
        result["max_samples"] = whole_number(old["num_samples"], "search_algorithm_config.num_samples", minimum=0)
    if old.get("seed") is not None:
        result["seed"] = whole_number(old["seed"], "search_algorithm_config.seed", minimum=0, maximum=SEED_MAX)
    return result


converter.register_structure_hook(ExecutorConfig, _structure_executor)
converter.register_structure_hook(SearchStrategyConfig, _structure_search)
