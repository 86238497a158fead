"""A running pass's progress reports: shown under the search's bar, carried from process workers, else dropped."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engine_support import base_workflow, make_registry, searched

import olive
from olive.engine.progress import SearchProgress
from olive.hardware.accelerator import AcceleratorSpec
from olive.passes import Pass, PassConfigParam
from olive.passes import progress as pass_progress
from olive.passes.onnx.common import model_proto_to_olive_model
from olive.passes.progress import PassProgress
from olive.plugins.registry import use_registry
from olive.search.search_parameter import Categorical


class CountsSteps(Pass):
    """Copies the model, reporting ``steps`` steps of progress; ``what`` names the process that ran it."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "steps": PassConfigParam(type_=int, default_value=4, search_defaults=Categorical([3, 4])),
        }

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        for step in range(config.steps + 1):
            self.report_progress(step, config.steps, f"steps in {os.getpid()}")
        return model_proto_to_olive_model(model.load_model(), output_model_path)


def _registry() -> Any:
    registry = make_registry()
    registry.register(CountsSteps, name="CountsSteps")
    return registry


def _workflow(tmp_path: Path, executor: dict | None) -> dict:
    strategy: dict[str, Any] = {"execution_order": "joint", "sampler": "sequential"}
    if executor is not None:
        strategy["executor"] = executor
    return base_workflow(
        tmp_path, passes={"count": {"type": "CountsSteps", "steps": searched(3, 4)}}, search_strategy=strategy
    )


def test_a_report_without_a_listener_does_nothing(tmp_path: Path) -> None:
    assert pass_progress.listener() is None
    pass_progress.report_progress(1, 2, "things")
    with use_registry(_registry()):
        output = olive.run(base_workflow(tmp_path, passes={"count": {"type": "CountsSteps"}}))
    assert output.best is not None and pass_progress.listener() is None


def test_reports_reach_the_listener_from_the_engines_process_and_from_process_workers(tmp_path: Path) -> None:
    for name, executor in {"inline": None, "process": {"type": "process", "max_workers": 1}}.items():
        seen: list[PassProgress] = []
        with use_registry(_registry()), pass_progress.listening(seen.append):
            output = olive.run(_workflow(tmp_path / name, executor))
        assert output.best is not None, name
        assert {e.owner for e in seen} == {"CountsSteps"}, name
        # Both trials' last reports arrive (a loop's last report is never dropped), totals known.
        assert [(e.done, e.total) for e in seen if e.done == e.total] == [(3, 3), (4, 4)], name
        pids = {int(e.what.rsplit(" ", 1)[1]) for e in seen}
        assert (pids == {os.getpid()}) == (executor is None), (name, pids)


def test_the_search_bar_shows_a_running_pass_as_a_line_under_it() -> None:
    seen: list[PassProgress] = []
    with pass_progress.listening(seen.append):
        bar = SearchProgress(enabled=True)
        bar.start("search", 2)
        try:
            pass_progress.report_progress(3, 5, "layers", owner="Builder")
            line = [t for t in bar._progress.tasks if "Builder" in t.description]
            assert [(t.description.strip(), t.completed, t.total) for t in line] == [("Builder: layers", 3, 5)]
            bar.advance("ok")
            assert not [t for t in bar._progress.tasks if "Builder" in t.description]
        finally:
            bar.stop()
        # The listener before the bar still heard the report, and is the listener again.
        assert seen == [PassProgress(3, 5, "layers", "Builder")]
        assert pass_progress.listener() == seen.append


def test_a_display_that_is_off_listens_to_nothing() -> None:
    bar = SearchProgress(enabled=False)
    bar.start("search", 2)
    assert pass_progress.listener() is None
    bar.stop()
