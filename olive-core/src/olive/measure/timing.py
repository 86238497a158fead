"""Timing runs of a model: one session alone, or several interleaved, and ratios to a reference.

Every latency Olive reports (the evaluator's ``latency``/``throughput`` metrics and their ``ratio_*`` sub
types, ``OrtSessionParamsTuning``'s table, the benchmarks) is timed here, with one rule:

1. **Settle.** Wait :data:`LATENCY_SETTLE_S` before a session's runs (see its comment).
2. **Warm up.** ``warmup`` untimed runs before the first timed run; in interleaved rounds, at least one
   untimed run each time a session's turn comes again.
3. **Time.** ``repeat`` runs, each timed alone with ``time.perf_counter``, ``sleep_s`` seconds apart.

Interleaved runs visit the sessions in rounds of ``per_round`` runs, in rotating order, so a change in
machine load during the measurement lands on every session alike. A ratio to a reference takes each run
against the reference's median in its own round (:func:`ratios_to_reference`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from olive.measure.sessions import ModelRunError

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime

# Seconds to wait before timing a session. After a run, an onnxruntime session's intra-op threads spin for
# tens of milliseconds; the sessions that just ran (an accuracy metric's, the previous candidate's, the
# other model of an interleaved round) would share the cores with the timed runs. Measured on 2 cores with
# all-MiniLM-L6-v2: fp32 8.6 ms and dynamic int8 8.3 ms timed back to back, against 8.3 ms and 4.4 ms after a
# 50 ms pause (a 5 ms pause is not enough); an int8 model timed right after the agreement metric's sessions
# measured 0.75x fp32, and 0.60x after this pause.
LATENCY_SETTLE_S = 0.1
# Ratios to a reference time the model and the reference in this many alternating rounds (fewer with few
# runs); each switch costs a LATENCY_SETTLE_S pause, about 2 s per evaluation.
PAIRED_ROUNDS = 10
# Fewest timed runs in one round: a round's median needs a few runs to mean anything.
MIN_RUNS_PER_ROUND = 5

PERCENTILES = {"p50": 50.0, "p75": 75.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}


def session_runner(
    session: onnxruntime.InferenceSession,
    feeds: Mapping[str, Any],
    io_bind: bool = False,
    what: str = "the model",
    owner: str | None = None,
) -> Callable[[], None]:
    """A callable that runs ``session`` on ``feeds`` once; a failure is a :class:`ModelRunError` naming ``what``.

    With ``io_bind`` the inputs are bound once up front, so each call leaves out copying them in (what
    onnxruntime's IO binding saves a server that keeps its inputs in place).
    """
    if io_bind and not hasattr(session, "io_binding"):
        # Another runtime's session (an OpenVINO compiled model) has no onnxruntime IO binding to time.
        raise ModelRunError(
            f"io_bind is onnxruntime's IO binding, which {what} does not run on; remove io_bind from the metric",
            owner=owner,
        )
    if io_bind:
        binding = session.io_binding()
        for name, value in feeds.items():
            binding.bind_cpu_input(name, value)
        for output in session.get_outputs():
            binding.bind_output(output.name)

        def once() -> None:
            session.run_with_iobinding(binding)

    else:
        inputs = dict(feeds)

        def once() -> None:
            session.run(None, inputs)

    def run() -> None:
        try:
            once()
        except Exception as exc:
            raise ModelRunError(f"running {what} failed ({type(exc).__name__}: {exc})", owner=owner) from exc

    return run


def timed_runs(
    run: Callable[[], None],
    repeat: int,
    warmup: int = 0,
    sleep_s: float = 0.0,
    settle_s: float = LATENCY_SETTLE_S,
) -> list[float]:
    """Seconds of each of ``repeat`` timed calls of ``run``, after the settle pause and ``warmup`` calls."""
    time.sleep(settle_s)
    for _ in range(warmup):
        run()
    return _timed(run, repeat, sleep_s)


def interleaved_runs(
    runs: Sequence[Callable[[], None]],
    repeat: int,
    warmup: int = 0,
    per_round: int = MIN_RUNS_PER_ROUND,
    sleep_s: float = 0.0,
    settle_s: float = LATENCY_SETTLE_S,
) -> list[list[list[float]]]:
    """``repeat`` timed calls of each of ``runs``, interleaved in rounds of ``per_round`` calls.

    Returns ``rounds[r][i]``: the seconds of ``runs[i]``'s timed calls in round ``r``. Each round visits the
    callables in rotating order, each after the settle pause and untimed calls (``warmup`` in the first
    round, at least one), so none always follows the same neighbour or times another's spinning threads.
    """
    if per_round < 1:
        raise ValueError(f"per_round must be at least 1, got {per_round}")
    rounds: list[list[list[float]]] = []
    done = 0
    untimed = max(1, warmup)
    while done < repeat:
        count = min(per_round, repeat - done)
        seconds: list[list[float]] = [[] for _ in runs]
        shift = len(rounds) % max(1, len(runs))
        for index in [*range(shift, len(runs)), *range(shift)]:
            time.sleep(settle_s)
            for _ in range(untimed):
                runs[index]()
            seconds[index] = _timed(runs[index], count, sleep_s)
        rounds.append(seconds)
        done += count
        untimed = 1
    return rounds


def paired_round_size(repeat: int) -> int:
    """Runs per round when a model is timed against a reference: up to :data:`PAIRED_ROUNDS` rounds of at
    least :data:`MIN_RUNS_PER_ROUND` runs."""
    return max(MIN_RUNS_PER_ROUND, -(-repeat // PAIRED_ROUNDS))


def ratios_by_round(
    rounds: Sequence[Sequence[Sequence[float]]], model: int = 0, reference: int = 1
) -> list[np.ndarray]:
    """Per round, each timed run of ``model`` divided by the median of ``reference``'s runs in that round."""
    import numpy as np

    return [
        np.asarray(times[model], dtype=np.float64) / max(float(np.median(times[reference])), 1e-12) for times in rounds
    ]


def ratios_to_reference(rounds: Sequence[Sequence[Sequence[float]]], model: int = 0, reference: int = 1) -> np.ndarray:
    """Each timed run of ``model`` divided by the median of ``reference``'s runs in the same round.

    A burst of load that slows a few rounds moves those rounds' ratios, not the whole measurement's.
    """
    import numpy as np

    return np.concatenate(ratios_by_round(rounds, model, reference))


#: resamples of the timed rounds behind :func:`ratio_spread` (seeded: the same timings give the same spread)
SPREAD_RESAMPLES = 400


def ratio_spread(
    per_round: Sequence[np.ndarray], ratio: Callable[[np.ndarray], np.ndarray] = lambda r: r
) -> dict[str, float]:
    """How far each :func:`latency_summary` figure of the pooled ratios could move by chance, as a fraction of
    it: the larger side of its 95% interval when the timed rounds are resampled with replacement (a bootstrap
    over rounds, since a burst of load moves a whole round together). ``per_round``: each round's run/reference
    ratios (:func:`ratios_by_round`); ``ratio`` maps them to the reported ratio (throughput inverts them). Two
    models whose figures differ by less than their spreads allow are not told apart by the measurement. With
    one round there is nothing to resample: every spread is 0 (unmeasured)."""
    import numpy as np

    rounds = [ratio(np.asarray(r, dtype=np.float64)) for r in per_round]
    if len(rounds) < 2:
        return {}
    center = latency_summary(np.concatenate(rounds))
    # Rounds padded with NaN to one length, so that all resamples are summarized at once.
    padded = np.full((len(rounds), max(r.size for r in rounds)), np.nan)
    for index, values in enumerate(rounds):
        padded[index, : values.size] = values
    picks = np.random.default_rng(0).integers(0, len(rounds), size=(SPREAD_RESAMPLES, len(rounds)))
    resampled = np.sort(padded[picks].reshape(SPREAD_RESAMPLES, -1), axis=1)  # NaN sorts last
    counts = np.sum(~np.isnan(resampled), axis=1)
    figures = {
        "avg": np.nanmean(resampled, axis=1),
        "min": resampled[:, 0],
        "max": np.take_along_axis(resampled, (counts - 1)[:, None], axis=1)[:, 0],
    }
    for name, q in PERCENTILES.items():
        # np.percentile's linear interpolation, row by row over each row's own count.
        position = q / 100.0 * (counts - 1)
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, counts - 1)
        low = np.take_along_axis(resampled, below[:, None], axis=1)[:, 0]
        high = np.take_along_axis(resampled, above[:, None], axis=1)[:, 0]
        figures[name] = low + (high - low) * (position - below)
    spreads = {}
    for name, value in center.items():
        low, high = np.percentile(figures[name], [2.5, 97.5])
        spreads[name] = float(max(value - low, high - value, 0.0) / max(abs(value), 1e-12))
    return spreads


def latency_summary(values: Sequence[float] | np.ndarray) -> dict[str, float]:
    """``avg``, ``min``, ``max`` and the percentiles of :data:`PERCENTILES` (linear interpolation) of ``values``."""
    import numpy as np

    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        raise ValueError("latency_summary: no timed run to summarize")
    return {
        "avg": float(array.mean()),
        "min": float(array.min()),
        "max": float(array.max()),
        **{name: float(np.percentile(array, q)) for name, q in PERCENTILES.items()},
    }


def _timed(run: Callable[[], None], count: int, sleep_s: float) -> list[float]:
    seconds = []
    for _ in range(count):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
        if sleep_s:
            time.sleep(sleep_s)
    return seconds
