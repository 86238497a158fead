"""The footprint of a run: one node per model tried (or point pruned, or trial failed), in the order tried."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from olive.engine.keys import digest
from olive.engine.results import Status
from olive.model.handler import OliveModelHandler
from olive.model.types import model_from_json

if TYPE_CHECKING:
    from olive.plugins.identity import PassIdentity

INPUT_MODEL_ID = "input_model"


@attrs.define
class FootprintNode:
    """One model the run tried (or a point it pruned or that failed).

    ``status`` is ``"ok"``, ``"failed"`` (``error`` says why) or ``"pruned"`` (``validate_config`` said no).
    ``timings`` holds seconds: ``run`` (0 for a cache hit), ``evaluate``; ``cached`` says whether the pass
    run came from the cache. When latency or throughput was measured it also holds ``measured_on`` (the
    host name) and ``measured_alone`` (True when no other trial worked on that host meanwhile).

    ``target`` says where an evaluated model ran (provider, device, options, and for a plugin provider the
    nodes it left to another). With several targets, the model of a pass run is evaluated on each through a
    node of its own: ``target_of`` names the pass run's node, and ``model_json`` carries the target's
    ``inference_settings``.
    """

    model_id: str
    parent_model_id: str | None = None
    pass_key: str | None = None
    pass_name: str | None = None
    config: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    is_pareto: bool = False
    status: Status = attrs.field(default=Status.OK, converter=Status)
    error: str | None = None
    timings: dict[str, Any] = attrs.Factory(dict)
    model_path: str | None = None
    model_json: dict[str, Any] | None = None
    cached: bool = False
    is_candidate: bool = False
    meets_goals: bool | None = None
    pass_distribution: str | None = None
    pass_version: str | None = None
    #: where the model was evaluated: provider, device, options and the inference_settings that deploy it
    target: dict[str, Any] | None = None
    #: set on a node that places the model of node ``target_of`` on another target (no pass ran)
    target_of: str | None = None
    #: metric name -> the number of samples it was measured on (the judging part when a data config is split)
    samples: dict[str, int] = attrs.Factory(dict)
    #: metric name -> the batch sizes it was served at, the size each figure was the worst at, each size's figures
    batch_sizes: dict[str, dict[str, Any]] = attrs.Factory(dict)

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FootprintNode:
        fields = attrs.fields_dict(cls)
        return cls(**{k: v for k, v in data.items() if k in fields})

    def metric_values(self) -> dict[str, float]:
        """``{"metric-sub_type": value}`` of this model's metrics."""
        return {
            key: value["value"] if isinstance(value, dict) else value for key, value in (self.metrics or {}).items()
        }

    def create_model(self) -> OliveModelHandler:
        """A model handler for this node's model (in the cache)."""
        if self.model_json is None:
            raise ValueError(f"footprint node {self.model_id} has no model ({self.status})")
        return model_from_json(self.model_json)


class Footprint:
    """The nodes of one run in the order tried, with the look-ups the engine records them by.

    A pass run is one node however many search points reach it: ``(pass_key, run key)`` finds it again.
    """

    def __init__(self) -> None:
        self.nodes: list[FootprintNode] = []
        self._by_id: dict[str, FootprintNode] = {}
        self._runs: dict[tuple[str, str], FootprintNode] = {}

    def add(self, node: FootprintNode) -> FootprintNode:
        self.nodes.append(node)
        self._by_id[node.model_id] = node
        return node

    def get(self, model_id: str) -> FootprintNode | None:
        return self._by_id.get(model_id)

    def run(self, pass_key: str, key: str) -> FootprintNode | None:
        """The node of a pass run recorded earlier in this run, if any."""
        return self._runs.get((pass_key, key))

    def open_run(
        self, pass_key: str, key: str, identity: PassIdentity, version: str | None, parent_id: str, config: Any
    ) -> FootprintNode:
        """A new node for the run ``key`` of the pass at ``pass_key`` on the model ``parent_id``."""
        node = FootprintNode(
            model_id=f"{pass_key}-{key[:12]}",
            parent_model_id=parent_id,
            pass_key=pass_key,
            pass_name=identity.name,
            config=config,
            pass_distribution=identity.distribution,
            pass_version=version,
        )
        self._runs[(pass_key, key)] = node
        return self.add(node)

    def pruned(self, pass_key: str, pass_name: str, parent_id: str, config: Any, reason: str) -> FootprintNode:
        """The node of a point whose config of the pass at ``pass_key`` was rejected (one per config)."""
        model_id = f"{pass_key}-pruned-{digest({'parent': parent_id, 'config': config})[:12]}"
        return self.get(model_id) or self.add(
            FootprintNode(
                model_id=model_id,
                parent_model_id=parent_id,
                pass_key=pass_key,
                pass_name=pass_name,
                config=config if isinstance(config, dict) else None,
                status=Status.PRUNED,
                error=reason,
            )
        )

    def trial_failed(self, pass_key: str, parent_id: str, point: dict[str, Any], error: str) -> FootprintNode:
        """A node for a point whose trial ended outside any pass (its worker died)."""
        return self.add(
            FootprintNode(
                model_id=f"{pass_key}-trial-{digest({'parent': parent_id, 'point': point})[:12]}",
                parent_model_id=parent_id,
                pass_key=pass_key,
                config={"point": point},
                status=Status.FAILED,
                error=error,
            )
        )
