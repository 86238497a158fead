"""What a report shows, read from a run's output folder (or from a ``WorkflowOutput`` in memory).

The report depends on the engine only through the files it writes (``footprint.json``, ``metrics.json``,
``model_config.json``), so it can be rebuilt for any output folder, including one from an older run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs

import olive
from olive.evaluator.goals import ranking_rule
from olive.exceptions import OliveError

FOOTPRINT_FILE = "footprint.json"
METRICS_FILE = "metrics.json"
MODEL_CONFIG_FILE = "model_config.json"
INPUT_MODEL_ID = "input_model"
#: metric keys ``"guard fit-cosine_min"``...: what an accuracy guard measured on the samples it fit on, shown
#: beside the evaluator's figures (measured on samples it did not fit on) so the gap is visible
FIT_PREFIX = "guard fit-"
#: the model attributes in which a pass records its own check of its output: a conversion against its input
#: model, an accuracy guard on the samples it fit on
CONVERSION_CHECK = "conversion_check"
ACCURACY_GUARD = "accuracy_guard"


@attrs.frozen
class Objective:
    key: str
    priority: int
    higher_is_better: bool
    #: differences within it tie (a fraction of the better value when ``relative_tolerance``); 0: exact order
    tolerance: float = 0.0
    relative_tolerance: bool = False


@attrs.frozen
class Step:
    """One pass of a candidate's chain: the footprint node that produced its model."""

    model_id: str
    pass_key: str | None
    pass_name: str | None
    config: dict[str, Any]
    #: the searched params and their values in this run (what the search varied)
    varied: dict[str, Any]


@attrs.frozen
class ReportData:
    """Everything ``report.html`` shows; build it with :func:`load_report_data` or :func:`report_data_from`."""

    workflow_id: str | None
    accelerator: str | None
    objectives: list[Objective]
    best_model_id: str | None
    reason: str | None
    nodes: list[dict[str, Any]]
    output_model: str | None = None
    olive_core_version: str | None = None
    goals: dict[str, str] = attrs.Factory(dict)
    #: the node the metrics compared with (the input model, or the first pass's output when the input model
    #: cannot be evaluated); None in files from runs without an evaluator or older runs
    reference_model_id: str | None = None
    #: plain onnxruntime lines that run the chosen model on its (plugin) execution provider
    deploy: list[str] = attrs.Factory(list)
    #: pass key -> the params the search space held (None: unknown, e.g. an older footprint.json; then the
    #: params whose values differ between the runs of a pass key stand in)
    searched_params: dict[str, list[str]] | None = None
    #: candidates that tie with the chosen one on every objective (the chosen one was tried first)
    tied_model_ids: list[str] = attrs.Factory(list)
    chosen_because: str | None = None
    generated: str = attrs.Factory(lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))

    # ---------------------------------------------------------------------------------------------
    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {node["model_id"]: node for node in self.nodes}

    @property
    def input_node(self) -> dict[str, Any] | None:
        for node in self.nodes:
            if node.get("parent_model_id") is None:
                return node
        return None

    @property
    def baseline(self) -> dict[str, Any] | None:
        """What candidates are compared with: the reference model (see ``reference_model_id``), else the input."""
        reference = self.by_id.get(self.reference_model_id) if self.reference_model_id else None
        return reference if reference is not None else self.input_node

    @property
    def reference_is_input(self) -> bool:
        baseline = self.baseline
        return baseline is None or baseline.get("parent_model_id") is None

    def input_model(self) -> dict[str, Any]:
        """The input model's type, path and (Hugging Face models) task: the task written in the workflow, else the
        one the conversion of the input model resolved (its check records it)."""
        node = self.input_node or {}
        model_json = node.get("model_json") or {}
        task = (model_json.get("config") or {}).get("task")
        for converted in self.nodes:
            check = conversion_check(converted) if converted.get("parent_model_id") == node.get("model_id") else None
            if task is None and check is not None and isinstance(check.get("input"), Mapping):
                task = check["input"].get("task")
        return {"type": model_json.get("type"), "model_path": node.get("model_path"), "task": task}

    @property
    def best(self) -> dict[str, Any] | None:
        return self.by_id.get(self.best_model_id) if self.best_model_id else None

    def candidates(self) -> list[dict[str, Any]]:
        """Complete models of the workflow (the last pass's outputs), in the order tried."""
        return [n for n in self.nodes if n.get("is_candidate")]

    def problem_nodes(self) -> list[dict[str, Any]]:
        """Runs that failed or were pruned without producing a candidate."""
        return [n for n in self.nodes if not n.get("is_candidate") and n.get("status") in ("failed", "pruned")]

    def pass_runs(self) -> list[dict[str, Any]]:
        # A node placing a model on another target is not a pass run.
        return [n for n in self.nodes if n.get("parent_model_id") is not None and not n.get("target_of")]

    def targets(self) -> list[str]:
        """The labels of the targets candidates ran on (provider, device, options), in the order first seen."""
        return list(dict.fromkeys((n.get("target") or {}).get("label") for n in self.nodes if n.get("target")))

    @property
    def ranking_rule(self) -> str:
        """How the chosen model was picked: the objectives in order, each with its tolerance."""
        return ranking_rule([attrs.asdict(o) for o in self.objectives])

    @property
    def tie_note(self) -> str | None:
        """A sentence saying that the winner won by the order tried, when the objectives tied it with others."""
        if not self.tied_model_ids or not self.best_model_id:
            return None
        shown = ", ".join(self.tied_model_ids[:5]) + (", ..." if len(self.tied_model_ids) > 5 else "")
        return (
            f"{len(self.tied_model_ids)} other candidate(s) ({shown}) cannot be told apart from "
            f"{self.best_model_id} by the objectives (every difference is within its tolerance or the timing "
            f"noise measured): {self.best_model_id} was chosen as the first tried, so the same inputs choose it again"
        )

    def metric_keys(self) -> list[str]:
        """Objectives in priority order, then every other metric in the order first seen."""
        keys = [o.key for o in self.objectives]
        for node in self.nodes:
            for key in node.get("metrics") or {}:
                if key not in keys:
                    keys.append(key)
        return keys

    def higher_is_better(self, key: str) -> bool | None:
        for objective in self.objectives:
            if objective.key == key:
                return objective.higher_is_better
        for node in self.nodes:
            entry = (node.get("metrics") or {}).get(key)
            if isinstance(entry, Mapping) and "higher_is_better" in entry:
                return bool(entry["higher_is_better"])
        return None

    def chain(self, node: Mapping[str, Any]) -> list[Step]:
        """The pass runs that produced ``node``, first pass first (a node placing a model on a target is none)."""
        by_id = self.by_id
        # Only files without searched_params need the params that differ between runs (a pass over every node).
        varied = self._varied_params() if self.searched_params is None else {}
        steps: list[Step] = []
        current: Mapping[str, Any] | None = node
        seen: set[str] = set()
        while current is not None and current.get("parent_model_id") is not None:
            if current["model_id"] in seen:  # a malformed file must not loop forever
                break
            seen.add(current["model_id"])
            if current.get("target_of"):
                current = by_id.get(current["parent_model_id"])
                continue
            config = dict(current.get("config") or {})
            if self.searched_params is not None:
                names = self.searched_params.get(current.get("pass_key") or "", [])
            else:
                names = varied.get((current.get("pass_key"), current.get("pass_name")), [])
            steps.append(
                Step(
                    model_id=current["model_id"],
                    pass_key=current.get("pass_key"),
                    pass_name=current.get("pass_name"),
                    config=config,
                    varied={name: config.get(name) for name in names if name in config},
                )
            )
            current = by_id.get(current["parent_model_id"])
        return list(reversed(steps))

    def own_check(self, node: Mapping[str, Any], attribute: str) -> dict[str, Any] | None:
        """The check ``node``'s own pass recorded in ``model_attributes[attribute]``, or None.

        A pass copies its input model's attributes onto its output, so a quantization after a conversion carries
        the conversion's check too; only a check that differs from the parent's is this pass's own."""
        check = _attribute(node, attribute)
        if check is None:
            return None
        parent = self.by_id.get(node.get("parent_model_id") or "")
        return None if parent is not None and _attribute(parent, attribute) == check else check

    def distributions(self) -> list[tuple[str, str | None, list[str]]]:
        """``(distribution, version, pass names)`` of every pass the run used."""
        found: dict[tuple[str, str | None], list[str]] = {}
        for node in self.pass_runs():
            dist = node.get("pass_distribution")
            if not dist:
                continue
            names = found.setdefault((dist, node.get("pass_version")), [])
            if node.get("pass_name") and node["pass_name"] not in names:
                names.append(node["pass_name"])
        return [(dist, version, names) for (dist, version), names in sorted(found.items(), key=lambda i: i[0][0])]

    def _varied_params(self) -> dict[tuple[Any, Any], list[str]]:
        configs: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
        for node in self.pass_runs():
            if isinstance(node.get("config"), Mapping):
                configs.setdefault((node.get("pass_key"), node.get("pass_name")), []).append(node["config"])
        varied: dict[tuple[Any, Any], list[str]] = {}
        for group, items in configs.items():
            names = list(dict.fromkeys(name for config in items for name in config))
            varied[group] = [
                name for name in names if len({json.dumps(c.get(name), sort_keys=True, default=str) for c in items}) > 1
            ]
        return varied


# -------------------------------------------------------------------------------------------------
def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OliveError(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc


def _objectives(raw: Any) -> list[Objective]:
    objectives = []
    for item in raw or []:
        if isinstance(item, Mapping) and "key" in item:
            objectives.append(
                Objective(
                    str(item["key"]),
                    int(item.get("priority", 0)),
                    bool(item.get("higher_is_better", True)),
                    float(item.get("tolerance") or 0.0),
                    bool(item.get("relative_tolerance", False)),
                )
            )
    return sorted(objectives, key=lambda o: o.priority)


def goals_of(workflow: Any) -> dict[str, str]:
    """``{"metric-sub_type": "threshold 0.99"}`` for every goal of a ``WorkflowConfig``'s evaluator."""
    evaluator = getattr(workflow, "evaluator", None)
    goals = {}
    for metric in getattr(evaluator, "metrics", None) or []:
        for sub in getattr(metric, "sub_types", None) or []:
            goal = getattr(sub, "goal", None)
            if goal is not None:
                goals[f"{metric.name}-{sub.name}"] = f"{goal.type} {goal.value:g}"
    return goals


def report_data_from_footprint(
    footprint: Mapping[str, Any],
    output_model: str | None = None,
    olive_core_version: str | None = None,
    goals: Mapping[str, str] | None = None,
    deploy: list[str] | None = None,
) -> ReportData:
    """Build the report's data from the contents of ``footprint.json``."""
    nodes = footprint.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, Mapping) and "model_id" in n for n in nodes):
        raise OliveError("footprint: 'nodes' must be a list of footprint nodes, each with a 'model_id'")
    return ReportData(
        workflow_id=footprint.get("workflow_id"),
        accelerator=footprint.get("accelerator"),
        objectives=_objectives(footprint.get("objectives")),
        best_model_id=footprint.get("best_model_id"),
        reason=footprint.get("reason"),
        nodes=[_with_fit_figures(dict(n)) for n in nodes],
        output_model=output_model,
        olive_core_version=olive_core_version,
        goals=dict(goals or {}),
        reference_model_id=footprint.get("reference_model_id"),
        tied_model_ids=_ids(footprint.get("tied_model_ids"), nodes),
        chosen_because=_short_text(footprint.get("chosen_because")),
        deploy=list(deploy or []),
        searched_params=_searched_params(footprint.get("searched_params")),
    )


def _with_fit_figures(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its model's accuracy-guard figures (``model_attributes["accuracy_guard"]["achieved"]``) as
    metrics keyed ``FIT_PREFIX + measure``, when it has an evaluation to stand beside. Read from a file: anything
    that is not a number is left out."""
    if not node.get("metrics"):
        return node
    guard = _attribute(node, ACCURACY_GUARD)
    achieved = guard.get("achieved") if guard is not None else None
    if not isinstance(achieved, Mapping):
        return node
    figures = {
        f"{FIT_PREFIX}{name}": {"value": float(value), "priority": -1, "higher_is_better": name != "max_abs_diff"}
        for name, value in achieved.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    return {**node, "metrics": {**node["metrics"], **figures}} if figures else node


def _short_text(raw: Any) -> str | None:
    # Read from a file: a sentence, or nothing.
    return raw if isinstance(raw, str) and 0 < len(raw) <= 2000 else None


def _ids(raw: Any, nodes: list[Mapping[str, Any]]) -> list[str]:
    # Read from a file: only ids of nodes the footprint holds.
    known = {str(n["model_id"]) for n in nodes}
    return [str(i) for i in raw if str(i) in known] if isinstance(raw, list) else []


def _searched_params(raw: Any) -> dict[str, list[str]] | None:
    if not isinstance(raw, Mapping):
        return None
    return {str(k): [str(n) for n in v] for k, v in raw.items() if isinstance(v, list)}


def load_report_data(output_dir: str | Path, goals: Mapping[str, str] | None = None) -> ReportData:
    """Read a run's output folder: ``footprint.json`` (required), ``model_config.json`` (when a model was chosen)."""
    output_dir = Path(output_dir)
    footprint_path = output_dir / FOOTPRINT_FILE
    if not footprint_path.is_file():
        raise OliveError(
            f"no {FOOTPRINT_FILE} in '{output_dir}': a report needs the output folder of a run "
            "(written unless the workflow sets no_artifacts)"
        )
    footprint = _read_json(footprint_path)
    if not isinstance(footprint, Mapping):
        raise OliveError(f"{footprint_path}: expected a JSON object")
    model_config: Mapping[str, Any] = {}
    if (output_dir / MODEL_CONFIG_FILE).is_file():
        loaded = _read_json(output_dir / MODEL_CONFIG_FILE)
        model_config = loaded if isinstance(loaded, Mapping) else {}
    output_model = None
    if footprint.get("best_model_id") and (output_dir / "model.onnx").is_file():
        output_model = str((output_dir / "model.onnx").resolve())
    deploy = (
        (model_config.get("target") or {}).get("deploy") if isinstance(model_config.get("target"), Mapping) else None
    )
    return report_data_from_footprint(
        footprint, output_model, model_config.get("olive_core_version") or _core_version(), goals, deploy
    )


def report_data_from_output(output: Any, goals: Mapping[str, str] | None = None) -> ReportData:
    """Build the report's data from a ``WorkflowOutput`` in memory."""
    best = output.get_best_candidate()
    footprint = {
        "workflow_id": None,
        "accelerator": output.accelerator,
        "objectives": output.objectives,
        "best_model_id": best.model_id if best is not None else None,
        "reason": output.reason,
        "reference_model_id": getattr(output, "reference_model_id", None),
        "tied_model_ids": getattr(output, "tied_model_ids", []),
        "chosen_because": getattr(output, "chosen_because", None),
        "nodes": [node.to_json() for node in output.footprint],
        "searched_params": output.searched_params,
    }
    path = output.output_model_path
    return report_data_from_footprint(footprint, str(path) if path else None, _core_version(), goals)


def conversion_check(node: Mapping[str, Any]) -> dict[str, Any] | None:
    """The conversion check ``node``'s model carries (``model_attributes["conversion_check"]``), if any: its own
    pass's or, copied along, an earlier conversion's (:meth:`ReportData.own_check` tells them apart)."""
    return _attribute(node, CONVERSION_CHECK)


def _attribute(node: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    model_json = node.get("model_json")
    config = model_json.get("config") if isinstance(model_json, Mapping) else None
    attributes = config.get("model_attributes") if isinstance(config, Mapping) else None
    value = attributes.get(name) if isinstance(attributes, Mapping) else None
    return dict(value) if isinstance(value, Mapping) else None


def _core_version() -> str:
    return olive.__version__
