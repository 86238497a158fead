"""``agreement``: the model's outputs compared with the reference (input) model's on the same inputs.

No labels needed. The reference's outputs on a data config are kept for the whole search, so each candidate
runs only itself.

``served_batch_size`` (a batch size or a list of them, at the metric's top level, in its ``user_config`` or a
sub type's ``metric_config``) measures the model the way a server batches it: the metric's samples are shuffled
with a fixed seed and batched together at each size, padded as the data is (at size 1 with ``trim_padding``, each
at its real length; :func:`olive.measure.served_batches`). Each figure is the worst over the sizes
(:func:`olive.measure.worst_over_batch_sizes`): a model whose output depends on its batch-mates (dynamic int8) is
judged by its worst batching. The result's metadata says which size each figure was measured at
(``worst_at_batch_size``) and every size's own figures (``by_batch_size``). Without it, the data config's batches
are read as they come.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.data.feeds import check_feeds
from olive.evaluator.metrics.base import Measured, MetricType
from olive.evaluator.metrics.spec import Metric
from olive.exceptions import OliveError
from olive.measure import (
    AGREEMENT_SCORES,
    SERVE_SEED,
    OutputVectors,
    agreement_scores,
    check_one_sample,
    served_batches,
    trim_right_padding,
    worst_over_batch_sizes,
)

if TYPE_CHECKING:
    from olive.evaluator.metrics.run import MetricRun
    from olive.model.handler import OliveModelHandler


class AgreementMetric(MetricType):
    """``cosine_mean``, ``cosine_min`` (worst sample), ``max_abs_diff``, ``top1``, from :mod:`olive.measure`."""

    name = "agreement"
    sub_types: ClassVar = AGREEMENT_SCORES
    default_sub_type = "cosine_mean"
    # Deterministic on CPU, but a difference of 1e-4 in a mean over a few dozen samples is below what the
    # sample can tell apart.
    default_tolerance = 1e-4
    takes_trim_padding = True

    def measure(self, run: MetricRun, metric: Metric) -> Measured:
        data_config = run.data_config(metric)
        ref_key = None
        if data_config is not None and run.reference is not run.model:
            ref_key = (
                _file_identity(run.reference),
                (data_config.name, data_config.role),
                metric.output_name,
                metric.pooling,
                metric.mask_input,
                metric.trim_padding,
                metric.user_config.get("batch_size"),
                metric.served_batch_sizes,
            )
        kept = run.reference_outputs
        cached = kept.get(ref_key) if ref_key else None
        vectors = OutputVectors(
            pooling=metric.pooling, mask_input=metric.mask_input, owner=f"{metric.json_path}.pooling"
        )
        runs = _served_runs(run, metric, data_config is not None)
        ref_io = run.reference.get_io_config() if run.reference is not run.model else None
        references: dict[int, list[Any]] = {}
        by_size: dict[int, dict[str, float]] = {}
        counts: dict[int, list[int]] = {}
        for size, batches in runs.items():
            candidates = [_vectors(run, run.model, metric, feeds, vectors) for feeds in batches]
            if cached is not None and size in cached:
                references[size] = cached[size]
            else:
                references[size] = [_reference_vectors(run, metric, feeds, vectors, ref_io) for feeds in batches]
            try:
                # batch by batch: unpooled samples at their real length differ in shape from one another
                by_size[size] = agreement_scores(candidates, references[size])
            except OliveError as exc:
                raise OliveError(
                    f"{exc.reason}; the model's and the reference model's outputs must match (set output_name)",
                    owner=f"metric '{metric.name}'",
                ) from exc
            counts[size] = [len(c) for c in candidates]
        if ref_key is not None:
            kept[ref_key] = references
        values, worst_at = worst_over_batch_sizes(by_size)
        first = next(iter(counts.values()))
        served: dict[str, Any] = {}
        if metric.served_batch_sizes and data_config is not None:
            served = {
                "served_batch_sizes": list(metric.served_batch_sizes),
                # the batch sizes each figure was the worst at, and every size's own figures
                "worst_at_batch_size": worst_at,
                "by_batch_size": {str(size): scores for size, scores in by_size.items()},
                "largest_batch": {str(size): max(c, default=0) for size, c in counts.items()},
                "batching": f"samples shuffled with seed {SERVE_SEED}, batched at each size, padded as the data is",
            }
        else:
            # The data config's batches as they come (or one batch of synthetic inputs): say how big they were.
            served = {"batch_sizes_read": sorted(set(first))}
        meta = run.metadata(
            metric,
            run.model,
            num_samples=int(sum(first)),
            reference_model=str(run.reference.model_path) if run.reference is not run.model else "self",
            synthetic_inputs=data_config is None,
            **served,
        )
        return values, meta


def _served_runs(run: MetricRun, metric: Metric, has_data: bool) -> dict[int, list[dict[str, Any]]]:
    """The feeds of each run, by batch size: the metric's data as it comes (key 0), or served at each of the
    metric's ``served_batch_sizes`` (:func:`olive.measure.served_batches`)."""
    io_config = run.model.get_io_config() if metric.trim_padding else None
    read = [feeds for feeds, _ in run.batches(metric, run.model)]
    if not metric.served_batch_sizes or not has_data:
        if io_config is not None:
            owner = f"{metric.json_path}.trim_padding"
            for feeds in read:
                check_one_sample(feeds, metric.mask_input, owner=owner)
            read = [trim_right_padding(feeds, metric.mask_input, io_config) for feeds in read]
        return {0: read}
    runs = {}
    for size in metric.served_batch_sizes:
        if size == 1 and io_config is not None and read and metric.mask_input not in read[0]:
            check_one_sample(read[0], metric.mask_input, owner=f"{metric.json_path}.trim_padding")
        runs[size] = served_batches(read, size, metric.mask_input if io_config is not None else None, io_config)
    return runs


def _reference_vectors(
    run: MetricRun, metric: Metric, feeds: dict[str, Any], vectors: OutputVectors, ref_io: dict[str, Any] | None
) -> Any:
    ref_feeds = feeds
    if ref_io is not None:
        # the reference may take other input dtypes (e.g. float32 against a float16 candidate)
        ref_name = f"reference model '{Path(run.reference.model_path).name}'"
        ref_feeds = check_feeds(feeds, ref_io, f"metric '{metric.name}'", ref_name, cast=True)
    return _vectors(run, run.reference, metric, ref_feeds, vectors)


def _vectors(
    run: MetricRun, model: OliveModelHandler, metric: Metric, feeds: dict[str, Any], vectors: OutputVectors
) -> Any:
    outputs = run.run_model(model, metric, feeds)
    name = run.output_key(outputs, metric, model)
    return vectors.of({name: outputs[name]}, feeds)


def _file_identity(model: OliveModelHandler) -> tuple:
    path = Path(str(model.model_path))
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns, str(getattr(model, "inference_settings", None)))
