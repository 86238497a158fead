"""Which data a workflow fits on and which it judges on (:mod:`olive.data.split` says how one set is split).

A data config named by a pass (``"data_config": "calib"``: calibration, sensitivity, a guard's checks) fits;
one named by a metric of the workflow's evaluator judges. A config named by both (and not ``"split": false``)
gives the passes one half of its samples and the metrics the other, so that every figure the workflow reports
and every goal it checks is measured on samples no pass has seen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from olive.data.config import DataConfig
from olive.data.split import FIT, JUDGE, SPLIT_RULE
from olive.engine.plan import load_pass
from olive.exceptions import OliveError

if TYPE_CHECKING:
    from olive.config import PassSpec, WorkflowConfig

__all__ = ["SharedData", "assign_data_roles", "shared_data"]


@attrs.frozen
class SharedData:
    """A data config that passes fit on and metrics judge on."""

    name: str
    passes: tuple[str, ...]
    metrics: tuple[str, ...]
    split: bool

    def describe(self) -> str:
        uses = f"passes {', '.join(self.passes)} fit on it and metrics {', '.join(self.metrics)} judge on it"
        if not self.split:
            return (
                f"data config '{self.name}': {uses}, on the same samples (\"split\": false): the figures measure the "
                "fit, not how the model does on samples it was not fit on"
            )
        return f"data config '{self.name}': {uses}, each on its own samples: {SPLIT_RULE}"


def shared_data(workflow: WorkflowConfig) -> list[SharedData]:
    """Every workflow data config that a pass and a metric of the evaluator both name."""
    if workflow.evaluator is None:
        return []
    judged: dict[str, list[str]] = {}
    for metric in workflow.evaluator.metrics:
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


def assign_data_roles(workflow: WorkflowConfig) -> WorkflowConfig:
    """The workflow with each shared data config split: its passes get the fitting part, the evaluator the judging
    part. Configs used in one role only, or with ``"split": false``, are left whole."""
    split = {shared.name for shared in shared_data(workflow) if shared.split}
    if not split:
        return workflow
    judging = {
        name: config.for_role(JUDGE) if name in split else config for name, config in workflow.data_configs.items()
    }
    fitting = {name: workflow.data_configs[name].for_role(FIT) for name in split}
    passes = {}
    for key, specs in workflow.passes.items():
        passes[key] = []
        for spec in specs:
            data = spec.params.get("data_config")
            shared = isinstance(data, DataConfig) and workflow.data_configs.get(data.name) is data
            if shared and data.name in split and _fits(spec):
                spec = attrs.evolve(spec, params={**spec.params, "data_config": fitting[data.name]})
            passes[key].append(spec)
    return attrs.evolve(workflow, data_configs=judging, passes=passes)
