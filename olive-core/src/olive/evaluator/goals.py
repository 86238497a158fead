"""Goals, Pareto frontier and ranking over evaluation results.

A goal is resolved once against the input model's result (the baseline) into an absolute threshold:

====================== =============================== ===============================
goal type               higher is better                lower is better
====================== =============================== ===============================
threshold               value >= v                      value <= v
min-improvement         value >= base + v               value <= base - v
percent-min-improvement value >= base * (1 + v/100)     value <= base * (1 - v/100)
max-degradation         value >= base - v               value <= base + v
percent-max-degradation value >= base * (1 - v/100)     value <= base * (1 + v/100)
====================== =============================== ===============================
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from olive.evaluator.result import joint_key
from olive.exceptions import OliveError

if TYPE_CHECKING:
    from olive.evaluator.metric import Metric, MetricGoal
    from olive.evaluator.result import MetricResult


def goal_threshold(goal: MetricGoal, higher_is_better: bool, baseline: float | None) -> float:
    """The absolute value ``goal`` asks for, given the baseline value (needed for all but ``threshold``)."""
    if goal.type == "threshold":
        return goal.value
    if baseline is None:
        raise OliveError(
            f"a '{goal.type}' goal is relative to the input model, which has no result; set "
            "evaluate_input_model to true or use a 'threshold' goal"
        )
    sign = 1.0 if higher_is_better else -1.0
    if goal.type == "min-improvement":
        return baseline + sign * goal.value
    if goal.type == "max-degradation":
        return baseline - sign * goal.value
    # Percentages are of the baseline's magnitude, so a negative baseline still moves the right way.
    step = abs(baseline) * goal.value / 100.0
    if goal.type == "percent-min-improvement":
        return baseline + sign * step
    if goal.type == "percent-max-degradation":
        return baseline - sign * step
    raise OliveError(f"unknown goal type '{goal.type}'")


def resolve_goals(metrics: Sequence[Metric], baseline: MetricResult | None) -> dict[str, float]:
    """``{"metric-sub_type": threshold}`` for every sub metric with a goal."""
    thresholds: dict[str, float] = {}
    for metric in metrics:
        for sub in metric.sub_types:
            if sub.goal is None:
                continue
            key = joint_key(metric.name, sub.name)
            base = None
            if baseline is not None and key in baseline:
                base = baseline[key].value
            elif sub.goal.type != "threshold":
                raise OliveError(
                    f"goal of {key} ({sub.goal.type}) is relative to the input model, but the input model has no "
                    f"'{key}' result; set evaluate_input_model to true or use a 'threshold' goal"
                )
            thresholds[key] = goal_threshold(sub.goal, sub.higher_is_better, base)
    return thresholds


def _meets(value: float, threshold: float, higher_is_better: bool) -> bool:
    return value >= threshold if higher_is_better else value <= threshold


def unmet_goals(result: MetricResult, thresholds: Mapping[str, float]) -> list[str]:
    """One line per goal ``result`` misses, e.g. ``"latency-avg = 3.1 (needs <= 2.4)"``."""
    lines = []
    for key, threshold in thresholds.items():
        sub = result.get(key)
        if sub is None:
            lines.append(f"{key} was not measured (needs a value for its goal)")
        elif not _meets(sub.value, threshold, sub.higher_is_better):
            lines.append(f"{key} = {sub.value:.6g} (needs {'>=' if sub.higher_is_better else '<='} {threshold:.6g})")
    return lines


def meets_goals(result: MetricResult, thresholds: Mapping[str, float]) -> bool:
    """True when ``result`` meets every threshold (a missing value meets none)."""
    return not unmet_goals(result, thresholds)


def objectives_of(metrics: Sequence[Metric]) -> list[str]:
    """Keys of the sub metrics with priority > 0, most important (priority 1) first."""
    ranked = [
        (sub.priority, joint_key(metric.name, sub.name))
        for metric in metrics
        for sub in metric.sub_types
        if sub.priority > 0
    ]
    return [key for _, key in sorted(ranked)]


def _objectives_from_results(results: Mapping[str, MetricResult]) -> list[str]:
    ranked: dict[str, int] = {}
    for result in results.values():
        for key, sub in result.items():
            if sub.priority > 0:
                ranked[key] = sub.priority
    return sorted(ranked, key=lambda k: ranked[k])


def _score_vector(result: MetricResult, objectives: Sequence[str]) -> tuple[float, ...] | None:
    # Flip lower-is-better values so that larger is always better.
    vector = []
    for key in objectives:
        sub = result.get(key)
        if sub is None:
            return None
        vector.append(sub.value if sub.higher_is_better else -sub.value)
    return tuple(vector)


def pareto_frontier(results: Mapping[str, MetricResult], objectives: Iterable[str] | None = None) -> set[str]:
    """Ids of the results no other result dominates (at least as good on every objective, better on one).

    :param objectives: metric keys to compare; default: every sub metric with priority > 0. A result
        lacking any objective is left out.
    """
    keys = list(objectives) if objectives is not None else _objectives_from_results(results)
    if not keys:
        return set(results)
    vectors = {model_id: _score_vector(result, keys) for model_id, result in results.items()}
    vectors = {model_id: vector for model_id, vector in vectors.items() if vector is not None}
    frontier = set()
    for model_id, vector in vectors.items():
        dominated = any(
            all(o >= v for o, v in zip(other, vector, strict=True)) and other != vector
            for other_id, other in vectors.items()
            if other_id != model_id
        )
        if not dominated:
            frontier.add(model_id)
    return frontier


@attrs.frozen
class Tolerance:
    """How far apart two values of an objective must be to rank differently.

    ``relative``: ``value`` is a fraction of the better of the two (latency, throughput); otherwise an
    absolute difference (scores). ``0`` ranks in exact order.
    """

    value: float = 0.0
    relative: bool = False

    def ties(self, best: float, other: float, noise: float = 0.0) -> bool:
        """Whether ``other`` cannot be told apart from ``best`` (both oriented so that larger is better).

        ``noise``: the relative spread the two measurements share (:func:`measured_noise`); a relative tolerance
        widens to it, so two latencies the rounds could not tell apart tie even past the tolerance. An exact
        tolerance (0) stays exact: it asks for Microsoft Olive's order.
        """
        if self.value <= 0:
            return other == best
        allowed = self.value * abs(best) if self.relative else self.value
        if self.relative:
            allowed = max(allowed, noise * abs(best))
        return best - other <= allowed

    def describe(self) -> str:
        if self.value <= 0:
            return "exact"
        if self.relative:
            return f"within {self.value * 100:g}% ties"
        return f"within {self.value:g} ties"


EXACT = Tolerance()


def tolerances_of(objectives: Iterable[Mapping[str, Any]]) -> dict[str, Tolerance]:
    """``{key: Tolerance}`` from objective records (``{"key", "tolerance", "relative_tolerance"}``)."""
    return {
        str(o["key"]): Tolerance(float(o.get("tolerance") or 0.0), bool(o.get("relative_tolerance", False)))
        for o in objectives
        if "key" in o
    }


def ranking_rule(objectives: Sequence[Mapping[str, Any]]) -> str:
    """The rule :func:`rank_candidates` applies, in words, e.g. for the report and the CLI."""
    if not objectives:
        return "no objective: the first candidate is chosen"
    tolerances = tolerances_of(objectives)
    parts = []
    for objective in sorted(objectives, key=lambda o: int(o.get("priority", 0))):
        key = str(objective["key"])
        direction = "higher" if objective.get("higher_is_better", True) else "lower"
        tolerance = tolerances.get(key, EXACT)
        tie = tolerance.describe()
        if tolerance.value > 0 and tolerance.relative and key.rpartition("-")[2].startswith("ratio_"):
            tie += " or within the timed rounds' spread"
        parts.append(f"{key} ({direction} is better, {tie})")
    rule = "by " + ", then ".join(parts)
    if any(t.value > 0 for t in tolerances.values()):
        rule += "; a tie falls through to the next priority, and a tie on all of them to the candidate tried first"
    return rule + "; candidates that meet every goal first"


def measured_noise(result: MetricResult, key: str) -> float:
    """The relative spread of ``result``'s value for ``key`` (:attr:`SubMetricResult.noise`), 0 if unmeasured."""
    sub = result.get(key)
    return sub.noise if sub is not None else 0.0


def _pair_noise(noises: Mapping[str, Sequence[float]], first: str, second: str, index: int) -> float:
    # Two independent measurements: their spreads add in quadrature.
    return math.hypot(noises[first][index], noises[second][index])


def _pick_best(
    ids: list[str],
    vectors: Mapping[str, tuple[float, ...]],
    tolerances: Sequence[Tolerance],
    noises: Mapping[str, Sequence[float]],
) -> str:
    # Narrow down priority by priority to the candidates that tie with the best one on it. Whatever is left
    # after the last priority no objective tells apart, so the first tried wins: picking the best raw value
    # there would let timing noise choose, and the same inputs would give another winner on the next run.
    pool = list(ids)
    for index, tolerance in enumerate(tolerances):
        if len(pool) == 1:
            break
        leader = max(pool, key=lambda i: vectors[i][index])
        best = vectors[leader][index]
        pool = [i for i in pool if tolerance.ties(best, vectors[i][index], _pair_noise(noises, leader, i, index))]
    return pool[0]


def indistinguishable(
    results: Mapping[str, MetricResult],
    best_id: str,
    objectives: Sequence[str],
    tolerances: Mapping[str, Tolerance] | None = None,
) -> list[str]:
    """Ids of the results (other than ``best_id``) that tie with it on every objective, tolerances and
    measured noise included: the ranking had nothing but their order tried to choose between them."""
    if not objectives or best_id not in results:
        return []
    keys = list(objectives)
    per_key = [(tolerances or {}).get(key, EXACT) for key in keys]
    vectors = {i: _score_vector(r, keys) for i, r in results.items()}
    noises = {i: [measured_noise(r, key) for key in keys] for i, r in results.items()}
    best = vectors[best_id]
    if best is None or all(t.value <= 0 for t in per_key):
        return []
    tied = []
    for other_id, other in vectors.items():
        if other_id == best_id or other is None:
            continue
        if all(
            per_key[k].ties(max(best[k], other[k]), min(best[k], other[k]), _pair_noise(noises, best_id, other_id, k))
            for k in range(len(keys))
        ):
            tied.append(other_id)
    return tied


def _told_apart(first: float, second: float) -> tuple[str, str]:
    """``first`` and ``second`` with the fewest significant digits (4 at least) that show them differ: a size
    that decided by 80 bytes must not read as the same number twice. Whole numbers (bytes, counts) are whole."""
    first, second = float(first), float(second)
    if first.is_integer() and second.is_integer() and max(abs(first), abs(second)) < 1e15:
        return f"{int(first):,}", f"{int(second):,}"
    for digits in range(4, 16):
        shown = f"{first:.{digits}g}", f"{second:.{digits}g}"
        if shown[0] != shown[1]:
            return shown
    return shown


def why_chosen(
    results: Mapping[str, MetricResult],
    best_id: str,
    objectives: Sequence[str],
    tolerances: Mapping[str, Tolerance] | None = None,
) -> str | None:
    """What set ``best_id`` before the next best of ``results``, objective by objective, in words; None with
    nothing to compare. Each tie is said with what made it one (the tolerance or the timing's spread), and the
    objective that decided with both values, shown to the digits that tell them apart."""
    keys = list(objectives)
    if not keys or best_id not in results:
        return None
    vectors = {i: _score_vector(r, keys) for i, r in results.items()}
    others = {i: r for i, r in results.items() if i != best_id and vectors[i] is not None}
    if vectors[best_id] is None or not others:
        return None
    runner_up = rank_candidates(others, keys, tolerances=tolerances)[0]
    per_key = [(tolerances or {}).get(key, EXACT) for key in keys]
    noises = {i: [measured_noise(results[i], key) for key in keys] for i in (best_id, runner_up)}
    best, other = vectors[best_id], vectors[runner_up]
    parts = []
    for index, key in enumerate(keys):
        shown = _told_apart(results[best_id][key].value, results[runner_up][key].value)
        noise = _pair_noise(noises, best_id, runner_up, index)
        tolerance = per_key[index]
        high, low = max(best[index], other[index]), min(best[index], other[index])
        # Decided only where the chosen one is the better of the two: the ranking narrows to what ties with each
        # objective's leader, so two that both tie with it may stand further apart than the tolerance.
        if not tolerance.ties(high, low, noise) and best[index] > other[index]:
            parts.append(f"{key} decided ({shown[0]} against {shown[1]})")
            break
        if not tolerance.ties(high, low, noise):
            parts.append(f"both tied with the best on {key} ({shown[0]} against {shown[1]})")
            continue
        if tolerance.relative and tolerance.value > 0 and high - low > tolerance.value * abs(high):
            made_by = f"within the timed rounds' spread of {noise * 100:.0f}%"
        else:
            made_by = tolerance.describe().removesuffix(" ties") if tolerance.value > 0 else "equal"
        parts.append(f"tied on {key} ({shown[0]} against {shown[1]}, {made_by})")
    else:
        parts.append("tied on every objective, so the candidate tried first")
    return f"chosen over {runner_up}: " + "; ".join(parts)


def rank_candidates(
    results: Mapping[str, MetricResult],
    objectives: Iterable[str] | None = None,
    thresholds: Mapping[str, float] | None = None,
    tolerances: Mapping[str, Tolerance] | None = None,
) -> list[str]:
    """Ids best first: by the priority-1 objective, ties broken by priority 2, and so on.

    With ``tolerances``, values of an objective closer than its tolerance to the best one are ties, so the
    next priority decides between them (the best is picked, then the best of the rest...); a relative
    tolerance widens to the measured noise of paired timings (:func:`measured_noise`), and results that tie
    on every objective keep the order of ``results`` (the order tried), so timing noise never picks the
    winner. Without, the order is exact (lexicographic), as Microsoft Olive ranks. With ``thresholds``, results
    meeting every goal come before those that do not. Results lacking an objective come last.
    """
    keys = list(objectives) if objectives is not None else _objectives_from_results(results)
    per_key = [(tolerances or {}).get(key, EXACT) for key in keys]
    vectors = {model_id: _score_vector(result, keys) for model_id, result in results.items()}
    noises = {model_id: [measured_noise(result, key) for key in keys] for model_id, result in results.items()}
    ranked: list[str] = []
    for met in (True, False):
        group = [
            model_id
            for model_id in results
            if (meets_goals(results[model_id], thresholds) if thresholds else True) == met
        ]
        measured = [model_id for model_id in group if vectors[model_id] is not None]
        while measured:
            best = _pick_best(measured, vectors, per_key, noises)
            ranked.append(best)
            measured.remove(best)
        ranked.extend(model_id for model_id in group if vectors[model_id] is None)
    return ranked
