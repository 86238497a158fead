"""``agreement``: the model's outputs compared with the reference (input) model's on the same inputs.

No labels needed. The reference's outputs on a data config are kept for the whole search, so each candidate
runs only itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.data.feeds import check_feeds
from olive.evaluator.metrics.base import Measured, MetricType
from olive.evaluator.metrics.spec import Metric
from olive.exceptions import OliveError
from olive.measure import AGREEMENT_SCORES, OutputVectors, agreement_scores, check_one_sample, trim_right_padding

if TYPE_CHECKING:
    from olive.evaluator.evaluator import MetricRun
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
            )
        kept = run.reference_outputs
        cached = kept.get(ref_key) if ref_key else None
        ref_io = run.reference.get_io_config() if run.reference is not run.model else None
        vectors = OutputVectors(
            pooling=metric.pooling, mask_input=metric.mask_input, owner=f"{metric.json_path}.pooling"
        )
        candidates, references = [], []
        io_config = run.model.get_io_config() if metric.trim_padding else None
        for index, (feeds, _) in enumerate(run.batches(metric, run.model)):
            if io_config is not None:
                check_one_sample(feeds, metric.mask_input, owner=f"{metric.json_path}.trim_padding")
                feeds = trim_right_padding(feeds, metric.mask_input, io_config)
            candidates.append(_vectors(run, run.model, metric, feeds, vectors))
            if cached is not None and index < len(cached):
                references.append(cached[index])
                continue
            ref_feeds = feeds
            if ref_io is not None:
                # the reference may take other input dtypes (e.g. float32 against a float16 candidate)
                ref_name = f"reference model '{Path(run.reference.model_path).name}'"
                ref_feeds = check_feeds(feeds, ref_io, f"metric '{metric.name}'", ref_name, cast=True)
            references.append(_vectors(run, run.reference, metric, ref_feeds, vectors))
        if ref_key is not None:
            kept[ref_key] = references
        try:
            # batch by batch: unpooled samples at their real length differ in shape from one another
            values = agreement_scores(candidates, references)
        except OliveError as exc:
            raise OliveError(
                f"{exc.reason}; the model's and the reference model's outputs must match (set output_name)",
                owner=f"metric '{metric.name}'",
            ) from exc
        meta = run.metadata(
            metric,
            run.model,
            num_samples=int(sum(len(c) for c in candidates)),
            reference_model=str(run.reference.model_path) if run.reference is not run.model else "self",
            synthetic_inputs=data_config is None,
        )
        return values, meta


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
