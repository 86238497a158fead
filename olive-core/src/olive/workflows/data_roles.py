"""Which data a workflow fits on and which it judges on (:mod:`olive.data.split` says how one set is split).

A data config named by a pass (``"data_config": "calib"``: calibration, sensitivity, a guard's checks) fits;
one named by a metric of the workflow's evaluator that reads the model's outputs judges. A config named by both
(and not ``"split": false``) gives the passes one half of its samples and those metrics the other, so that
every figure the workflow reports and every goal it checks is measured on samples no pass has seen.

A metric that only times or sizes the model (``latency``, ``throughput``, ``size_on_disk``) judges nothing: it
takes the data whole and never causes a split. Data too small to split runs unsplit with one warning that its
quality figures measure the fit, as the workflow ran in Microsoft Olive; ``olive optimize`` makes it an error
instead (``split_required``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from olive.data.check import known_sample_count
from olive.data.config import DataConfig
from olive.data.split import FIT, JUDGE, MIN_SAMPLES_PER_ROLE, SPLIT_RULE, too_few_samples
from olive.engine.evaluation import TIMING_METRICS
from olive.engine.plan import load_pass
from olive.exceptions import OliveError

if TYPE_CHECKING:
    from olive.config import PassSpec, WorkflowConfig

__all__ = ["INPUT_ONLY_METRICS", "SharedData", "assign_data_roles", "shared_data"]

#: Metric types that read their data only as inputs to time (or not at all), never judging the outputs.
INPUT_ONLY_METRICS = (*TIMING_METRICS, "size_on_disk")


@attrs.frozen
class SharedData:
    """A data config that passes fit on and metrics judge on."""

    name: str
    passes: tuple[str, ...]
    metrics: tuple[str, ...]
    split: bool
    #: the samples it holds when they are too few to split (the workflow then fits and judges on all of them)
    too_few: int | None = None

    def describe(self) -> str:
        uses = f"passes {', '.join(self.passes)} fit on it and metrics {', '.join(self.metrics)} judge on it"
        if self.too_few is not None:
            return (
                f"data config '{self.name}': {uses}, on the same samples: it holds {too_few_samples(self.too_few)}, "
                "so its quality figures measure the fit, not how the model does on samples it was not fit on; give "
                'more samples, give the metrics a data config of their own, or set "split": false to say so'
            )
        if not self.split:
            return (
                f"data config '{self.name}': {uses}, on the same samples (\"split\": false): the figures measure the "
                "fit, not how the model does on samples it was not fit on"
            )
        return f"data config '{self.name}': {uses}, each on its own samples: {SPLIT_RULE}"


def shared_data(workflow: WorkflowConfig) -> list[SharedData]:
    """Every workflow data config that a pass fits on and a metric of the evaluator judges on."""
    if workflow.evaluator is None:
        return []
    judged: dict[str, list[str]] = {}
    for metric in workflow.evaluator.metrics:
        if metric.type in INPUT_ONLY_METRICS:
            continue
        if metric.data_config is not None and metric.data_config in workflow.data_configs:
            judged.setdefault(metric.data_config, []).append(metric.name)
    fitted: dict[str, list[str]] = {}
    for key, specs in workflow.passes.items():
        for spec in specs:
            data = spec.params.get("data_config")
            if isinstance(data, DataConfig) and workflow.data_configs.get(data.name) is data and _fits(spec):
                fitted.setdefault(data.name, [])
                if key not in fitted[data.name]:
                    fitted[data.name].append(key)
    return [
        SharedData(name, tuple(fitted[name]), tuple(judged[name]), workflow.data_configs[name].split)
        for name in workflow.data_configs
        if name in fitted and name in judged
    ]


def _fits(spec: PassSpec) -> bool:
    """Whether the pass fits on its data (``Pass.fits_on_data``); a pass that cannot be loaded counts as fitting,
    and the plan reports why it cannot."""
    try:
        return bool(getattr(load_pass(spec).pass_class, "fits_on_data", True))
    except OliveError:
        return True


def assign_data_roles(
    workflow: WorkflowConfig, split_required: bool = False
) -> tuple[WorkflowConfig, tuple[SharedData, ...]]:
    """The workflow with each shared data config split (its passes get the fitting part, the judging metrics the
    judging part, the metrics that only time or size the whole), and the shared configs as split.

    Configs used in one role only, or with ``"split": false``, are left whole. So is one whose samples can be
    counted now (an ``.npz``'s headers) and are too few to split, unless ``split_required``: then it stays split
    and the data check refuses it (:func:`olive.data.check.check_workflow_data`). Where they can only be counted
    once loaded, the parts read every sample with a warning, or refuse when ``split_required``.
    """
    shared = []
    for found in shared_data(workflow):
        count = known_sample_count(workflow.data_configs[found.name]) if found.split and not split_required else None
        if count is not None and count < 2 * MIN_SAMPLES_PER_ROLE:
            found = attrs.evolve(found, split=False, too_few=count)
        shared.append(found)
    split = {found.name for found in shared if found.split}
    if not split:
        return workflow, tuple(shared)
    data_configs = dict(workflow.data_configs)
    fitting = {}
    for name in split:
        whole = attrs.evolve(workflow.data_configs[name], split_required=split_required)
        data_configs[name] = whole.for_role(JUDGE)
        fitting[name] = whole.for_role(FIT)
    metrics = []
    for metric in workflow.evaluator.metrics if workflow.evaluator is not None else []:
        if metric.type in INPUT_ONLY_METRICS and metric.data_config in split:
            # Under a key of its own (the config keeps its name): the judging part is not what it times.
            key = f"{metric.data_config} (whole)"
            data_configs[key] = workflow.data_configs[metric.data_config]
            metric = attrs.evolve(metric, data_config=key)
        metrics.append(metric)
    passes = {}
    for key, specs in workflow.passes.items():
        passes[key] = []
        for spec in specs:
            data = spec.params.get("data_config")
            shared_here = isinstance(data, DataConfig) and workflow.data_configs.get(data.name) is data
            if shared_here and data.name in split and _fits(spec):
                spec = attrs.evolve(spec, params={**spec.params, "data_config": fitting[data.name]})
            passes[key].append(spec)
    evaluator = workflow.evaluator
    if evaluator is not None:
        evaluator = attrs.evolve(evaluator, metrics=metrics)
    return attrs.evolve(workflow, data_configs=data_configs, passes=passes, evaluator=evaluator), tuple(shared)
