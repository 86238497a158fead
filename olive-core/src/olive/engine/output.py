"""What a workflow run returns: the footprint of every model tried, and the chosen one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs


@attrs.define
class FootprintNode:
    """One model the run tried (or a point it pruned or that failed).

    ``status`` is ``"ok"``, ``"failed"`` (``error`` says why) or ``"pruned"`` (``validate_config`` said no).
    ``timings`` holds seconds: ``run`` (0 for a cache hit), ``evaluate``; ``cached`` says whether the pass
    run came from the cache. When latency or throughput was measured it also holds ``measured_on`` (the
    host name) and ``measured_alone`` (True when no other trial worked on that host meanwhile).
    """

    model_id: str
    parent_model_id: str | None = None
    pass_key: str | None = None
    pass_name: str | None = None
    config: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    is_pareto: bool = False
    status: str = "ok"
    error: str | None = None
    timings: dict[str, Any] = attrs.Factory(dict)
    model_path: str | None = None
    model_json: dict[str, Any] | None = None
    cached: bool = False
    is_candidate: bool = False
    meets_goals: bool | None = None
    pass_distribution: str | None = None
    pass_version: str | None = None

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

    def create_model(self) -> Any:
        """A model handler for this node's model (in the cache)."""
        from olive.model.handler import OliveModelHandler

        if self.model_json is None:
            raise ValueError(f"footprint node {self.model_id} has no model ({self.status})")
        return OliveModelHandler.from_json(self.model_json)


@attrs.define
class WorkflowOutput:
    """The result of ``olive.run``.

    ``footprint`` lists every node in the order tried (the input model first); ``best`` is the chosen
    candidate (None when nothing was produced or nothing met the goals; ``reason`` then says why);
    ``output_dir`` holds the written files.
    """

    footprint: list[FootprintNode]
    best: FootprintNode | None = None
    reason: str | None = None
    output_dir: Path | None = None
    objectives: list[dict[str, Any]] = attrs.Factory(list)
    search_space_sizes: dict[str, int] = attrs.Factory(dict)
    searched_params: dict[str, list[str]] = attrs.Factory(dict)
    accelerator: str | None = None
    distributions: dict[str, str] = attrs.Factory(dict)

    def get_best_candidate(self) -> FootprintNode | None:
        return self.best

    def get_output_models(self) -> list[FootprintNode]:
        """Every candidate (a complete model of the workflow) that ran, best first."""
        candidates = [n for n in self.footprint if n.is_candidate and n.status == "ok"]
        if self.best is not None:
            candidates.sort(key=lambda n: n.model_id != self.best.model_id)
        return candidates

    def get_node(self, model_id: str) -> FootprintNode:
        for node in self.footprint:
            if node.model_id == model_id:
                return node
        raise KeyError(model_id)

    @property
    def succeeded(self) -> bool:
        return self.best is not None

    @property
    def output_model_path(self) -> Path | None:
        if self.best is None or self.output_dir is None:
            return None
        path = self.output_dir / "model.onnx"
        return path if path.exists() else None

    def pareto_frontier(self) -> list[FootprintNode]:
        return [n for n in self.footprint if n.is_pareto]
