"""A workflow written by a program: the attrs structure of the workflow file's JSON form.

``olive optimize`` builds a :class:`WorkflowDocument`, writes :meth:`WorkflowDocument.to_json` (the project's
one cattrs converter, :data:`olive.config.structure.converter`) to ``optimize_workflow.json`` and hands the same
object to :func:`olive.workflows.prepare.prepare`. The sections whose content belongs to a plugin (a pass's
params, a metric, a data config) stay in their JSON form: their own classes check them, in the one loader
that checks a workflow file too, so the run and ``olive run`` of the written file get equal configs. The input
model is the handler that already read the model (:attr:`InputModelEntry.handler`): it is not built, nor its
file read, again.
"""

from __future__ import annotations

from typing import Any

import attrs
from cattrs.gen import make_dict_unstructure_fn, override

from olive.config.structure import converter
from olive.model.handler import OliveModelHandler

__all__ = ["AcceleratorEntry", "InputModelEntry", "SearchEntry", "SystemEntry", "WorkflowDocument"]


@attrs.frozen
class InputModelEntry:
    """``input_model``: its type and path (and a Hugging Face model's task); ``handler``, when given, is the
    handler those fields describe, whose reads are kept (never written)."""

    type: str
    model_path: str
    task: str | None = None
    #: a Hugging Face model's PEFT adapters, name -> folder
    adapters: dict[str, str] = attrs.field(factory=dict)
    handler: OliveModelHandler | None = attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class AcceleratorEntry:
    """A device and its providers: a provider's name, or ``[name, {option: value}]``."""

    device: str
    execution_providers: list[Any]


@attrs.frozen
class SystemEntry:
    type: str
    accelerators: list[AcceleratorEntry]


@attrs.frozen
class SearchEntry:
    """``search_strategy``: the keys a written workflow sets (every other one keeps its default)."""

    execution_order: str
    sampler: str
    max_samples: int
    seed: int
    max_time: float | None = None
    stop_when_goals_met: bool = False


@attrs.frozen
class WorkflowDocument:
    """A whole workflow, in the order its file lists the keys. ``passes``, ``data_configs`` and the evaluators'
    metrics are the plugins' JSON forms."""

    workflow_id: str
    input_model: InputModelEntry
    systems: dict[str, SystemEntry]
    target: str
    data_configs: list[dict[str, Any]]
    evaluators: dict[str, dict[str, Any]]
    evaluator: str
    evaluate_input_model: bool
    passes: dict[str, dict[str, Any]]
    search_strategy: SearchEntry
    cache_dir: str | None = None
    output_dir: str = "output"
    log_severity_level: int = 1

    def to_json(self) -> dict[str, Any]:
        """The workflow file's content (a fresh dict: changing it changes nothing here)."""
        return converter.unstructure(self)


# A key left at its default that a reader would not miss is not written (``task``, ``max_time``...); the
# handler is what was read, not part of the file.
for _cls, _overrides in (
    (
        InputModelEntry,
        {
            "task": override(omit_if_default=True),
            "adapters": override(omit_if_default=True),
            "handler": override(omit=True),
        },
    ),
    (SearchEntry, {"max_time": override(omit_if_default=True), "stop_when_goals_met": override(omit_if_default=True)}),
    (WorkflowDocument, {"cache_dir": override(omit_if_default=True)}),
):
    converter.register_unstructure_hook(_cls, make_dict_unstructure_fn(_cls, converter, **_overrides))
