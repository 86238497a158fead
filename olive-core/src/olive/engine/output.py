"""What a workflow run returns: the footprint of every model tried, and the chosen one.

``output_writer`` writes it into ``output_dir``; this module only holds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from olive.engine.footprint import FootprintNode
from olive.engine.results import Status

__all__ = ["FootprintNode", "WorkflowOutput"]


@attrs.define
class WorkflowOutput:
    """The result of ``olive.run``.

    ``footprint`` lists every node in the order tried (the input model first); ``best`` is the chosen
    candidate (None when nothing was produced or nothing met the goals; ``reason`` then says why);
    ``output_dir`` holds the written files; ``reference_model_id`` is the node the metrics compared with.
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
    #: The node whose model the metrics compared with: the input model, or (for an input model onnxruntime
    #: cannot run, such as a Hugging Face one) the first pass's output; None without an evaluator.
    reference_model_id: str | None = None
    #: candidates that tie with ``best`` on every objective (within each tolerance and the timings' measured
    #: noise): ``best`` won only by being tried first
    tied_model_ids: list[str] = attrs.Factory(list)
    #: what set ``best`` before the next best, objective by objective
    #: (:func:`olive.evaluator.goals.why_chosen`)
    chosen_because: str | None = None

    def get_best_candidate(self) -> FootprintNode | None:
        return self.best

    def get_output_models(self) -> list[FootprintNode]:
        """Every candidate (a complete model of the workflow) that ran, best first."""
        candidates = [n for n in self.footprint if n.is_candidate and n.status is Status.OK]
        if self.best is not None:
            candidates.sort(key=lambda n: n.model_id != self.best.model_id)
        return candidates

    def get_node(self, model_id: str) -> FootprintNode:
        for node in self.footprint:
            if node.model_id == model_id:
                return node
        raise KeyError(model_id)

    def lineage(self, node: FootprintNode) -> list[FootprintNode]:
        """The pass runs that produced ``node``, first pass first (a node placing a model on a target is none)."""
        chain = []
        current: FootprintNode | None = node
        while current is not None and current.parent_model_id is not None:
            if current.target_of is None:
                chain.append(current)
            current = self.get_node(current.parent_model_id)
        return list(reversed(chain))

    @property
    def output_model_path(self) -> Path | None:
        if self.best is None or self.output_dir is None:
            return None
        path = self.output_dir / "model.onnx"
        return path if path.exists() else None

    def pareto_frontier(self) -> list[FootprintNode]:
        return [n for n in self.footprint if n.is_pareto]
