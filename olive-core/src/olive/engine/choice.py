"""Choosing a run's best model: Pareto flags, goals, ranking by the objectives, and why nothing was chosen."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from olive.engine.results import Status
from olive.evaluator.goals import (
    indistinguishable,
    pareto_frontier,
    rank_candidates,
    tolerances_of,
    unmet_goals,
    why_chosen,
)

if TYPE_CHECKING:
    from olive.engine.footprint import FootprintNode
    from olive.engine.output import WorkflowOutput
    from olive.evaluator.result import MetricResult


def rank(
    nodes: Sequence[FootprintNode], results: Mapping[str, MetricResult], objectives: Sequence[dict[str, Any]]
) -> list[FootprintNode]:
    """``nodes`` best first by the objectives (priority 1 first, each with its tolerance: differences within it
    are ties that the next priority decides); unmeasured nodes keep their order, last."""
    measured = [n for n in nodes if n.model_id in results]
    if not objectives or not measured:
        return list(nodes)
    order = rank_candidates(
        {n.model_id: results[n.model_id] for n in measured},
        [o["key"] for o in objectives],
        tolerances=tolerances_of(objectives),
    )
    by_id = {n.model_id: n for n in measured}
    return [by_id[i] for i in order] + [n for n in nodes if n.model_id not in by_id]


def choose_best(
    output: WorkflowOutput,
    results: Mapping[str, MetricResult],
    thresholds: Mapping[str, float],
    stopped_by: str | None,
) -> None:
    """Set ``output.best`` (and each candidate's ``is_pareto``), or ``output.reason`` when none can be chosen."""
    candidates = [n for n in output.footprint if n.is_candidate and n.status is Status.OK]
    if not candidates:
        output.reason = _nothing_produced(output.footprint, stopped_by)
        return
    keys = [o["key"] for o in output.objectives]
    measured = {n.model_id: results[n.model_id] for n in candidates if n.model_id in results}
    if keys and measured:
        frontier = pareto_frontier(measured, keys)
        for node in candidates:
            node.is_pareto = node.model_id in frontier
    pool = candidates
    if thresholds:
        pool = [n for n in candidates if n.meets_goals]
        if not pool:
            closest = rank(candidates, results, output.objectives)[0]
            misses = "; ".join(unmet_goals(results[closest.model_id], thresholds))
            output.reason = (
                f"no candidate met the goals: {len(candidates)} candidate(s) tried; the best, "
                f"{closest.model_id}, has {misses} (see footprint.json)"
            )
            return
    output.best = rank(pool, results, output.objectives)[0]
    if keys and output.best.model_id in measured:
        pool_results = {n.model_id: measured[n.model_id] for n in pool if n.model_id in measured}
        tolerances = tolerances_of(output.objectives)
        # Said beside the winner: the objectives could not tell these apart from it, so it won by the order tried.
        output.tied_model_ids = indistinguishable(pool_results, output.best.model_id, keys, tolerances)
        # A table rounds values that decided by a few bytes or a percent of noise: say what really decided.
        output.chosen_because = why_chosen(pool_results, output.best.model_id, keys, tolerances)


def _nothing_produced(footprint: Sequence[FootprintNode], stopped_by: str | None) -> str:
    failed = [n for n in footprint if n.status is Status.FAILED]
    pruned = [n for n in footprint if n.status is Status.PRUNED]
    if failed:
        return (
            f"no model was produced: {len(failed)} pass run(s) failed"
            + (f" and {len(pruned)} point(s) were pruned" if pruned else "")
            + f"; first error: {failed[0].pass_key}: {failed[0].error}"
        )
    if pruned:
        # Each reason already names its pass (the error's owner).
        reasons = list(dict.fromkeys(node.error for node in pruned if node.error))
        shown = "; ".join(reasons[:3])
        more = f" (and {len(reasons) - 3} other reason(s) in footprint.json)" if len(reasons) > 3 else ""
        return (
            f"no model was produced: all {len(pruned)} search point(s) were rejected by their pass's config checks"
            + (f"; {shown}{more}" if shown else "")
        )
    return (
        f"no model was produced: the search limits ({stopped_by or 'max_samples'}) stopped the "
        "search before a complete model was produced"
    )
