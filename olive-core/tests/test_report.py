"""report.html: built from a real run's output folder, self-contained, escaped, one chart point per candidate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from engine_support import (
    AddMatMuls,
    ScaleOutput,
    agreement_metric,
    base_workflow,
    size_metric,
    with_evaluator,
    write_calibration,
)

import olive
from olive.engine.footprint import FootprintNode
from olive.exceptions import OliveError
from olive.plugins.registry import PassRegistry, use_registry
from olive.report import REPORT_FILE, load_report_data, write_report
from olive.report.chart import Point, front_2d, nice_ticks

MALICIOUS = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>"


class _Page(HTMLParser):
    """Every start tag with its attributes, and the text, of a page."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, tag: str, cls: str | None = None) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and (cls is None or cls in a.get("class", "").split())]


@pytest.fixture(scope="module")
def registry() -> PassRegistry:
    registry = PassRegistry(entry_points=False)
    registry.register(AddMatMuls, name="AddMatMuls", distribution="olive-test-passes", version="1.2.3")
    registry.register(ScaleOutput, name="ScaleOutput", distribution="olive-test-passes", version="1.2.3")
    return registry


@pytest.fixture(scope="module")
def workflow(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A searched workflow: AddMatMuls (3 points) then ScaleOutput (4 points), size and agreement."""
    tmp_path = tmp_path_factory.mktemp("report")
    workflow = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls", "marker": MALICIOUS}, "scale": {"type": "ScaleOutput"}},
        search_strategy={"execution_order": "joint", "sampler": "sequential"},
        evaluate_input_model=True,
    )
    data = write_calibration(tmp_path / "calib.npz")
    return with_evaluator(workflow, size_metric(), agreement_metric(0.9), data=data)


@pytest.fixture(scope="module")
def run_output(registry: PassRegistry, workflow: dict[str, Any]) -> Iterator[tuple[Any, Path]]:
    with use_registry(registry):
        output = olive.run(workflow)
    yield output, Path(output.output_dir)


def test_every_run_writes_the_report_with_its_goals(run_output: tuple[Any, Path]) -> None:
    # olive.run itself wrote it: the fixture never calls write_report
    _, out_dir = run_output
    text = (out_dir / REPORT_FILE).read_text(encoding="utf-8")
    assert "<svg" in text
    assert "cosine_mean" in text and "0.9" in text


def _candidates(output: Any) -> list[Any]:
    return [n for n in output.footprint if n.is_candidate and n.status == "ok"]


def test_report_from_a_real_output_folder_has_one_point_per_candidate(run_output: tuple[Any, Path]) -> None:
    output, out_dir = run_output
    path = write_report(out_dir)
    assert path == out_dir / REPORT_FILE
    page = _Page(path.read_text(encoding="utf-8"))
    candidates = _candidates(output)
    assert len(candidates) == 12  # 3 AddMatMuls points x 4 ScaleOutput points
    assert len(page.find("svg")) == 1
    points = page.find("circle", "candidate")
    assert sorted(p["data-model-id"] for p in points) == sorted(n.model_id for n in candidates)
    assert {p["data-model-id"] for p in page.find("circle", "pareto")} == {
        n.model_id for n in candidates if n.is_pareto
    }
    assert [p["data-model-id"] for p in page.find("circle", "chosen")] == [output.best.model_id]
    # the truncated/negated models miss the agreement goal and are drawn as such
    missed = {n.model_id for n in candidates if n.meets_goals is False}
    assert missed and {p["data-model-id"] for p in page.find("circle", "missed-goals")} == missed
    assert len(page.find("rect", "baseline")) == 1


def test_report_table_lists_baseline_and_every_candidate_with_chain_and_metrics(run_output: tuple[Any, Path]) -> None:
    output, out_dir = run_output
    text = write_report(out_dir).read_text(encoding="utf-8")
    page = _Page(text)
    rows = page.find("tr", "candidate")
    assert sorted(r["data-model-id"] for r in rows) == sorted(n.model_id for n in _candidates(output))
    assert [r["data-model-id"] for r in page.find("tr", "baseline")] == ["input_model"]
    assert [r["data-model-id"] for r in page.find("tr", "chosen")] == [output.best.model_id]
    body = " ".join(page.text)
    # the pass chain and the searched values of the chosen model
    best = output.best
    parent = output.get_node(best.parent_model_id)
    assert f"scale=={best.config['scale']}".replace("==", "=") in body.replace(" ", "")
    assert f"n={parent.config['n']}" in body.replace(" ", "")
    # the measured values, and the plugin distribution with its version
    assert f"{best.metric_values()['agree-cosine_mean']:.6g}" in body
    assert "olive-test-passes" in body and "1.2.3" in body
    assert "olive-core" in body and olive.__version__ in body


def test_report_is_self_contained(run_output: tuple[Any, Path]) -> None:
    _, out_dir = run_output
    text = write_report(out_dir).read_text(encoding="utf-8")
    page = _Page(text)
    assert "http://" not in text and "https://" not in text
    assert not page.find("script") and not page.find("link") and not page.find("img") and not page.find("iframe")
    assert all("src" not in attrs and "href" not in attrs for _, attrs in page.tags)


def test_report_escapes_strings_from_the_config(run_output: tuple[Any, Path]) -> None:
    output, out_dir = run_output
    assert all(n.config["marker"] == MALICIOUS for n in output.footprint if n.pass_key == "add")
    text = write_report(out_dir).read_text(encoding="utf-8")
    page = _Page(text)
    assert "<script>" not in text and "<img" not in text
    assert not page.find("script") and not page.find("img")
    # the text survives, as text (inside the config's JSON)
    assert json.dumps(MALICIOUS) in "".join(page.text)


def test_report_from_workflow_output_in_memory_matches_the_files(run_output: tuple[Any, Path], tmp_path: Path) -> None:
    output, out_dir = run_output
    from_memory = _Page(write_report(tmp_path, output).read_text(encoding="utf-8"))
    from_files = _Page(write_report(out_dir).read_text(encoding="utf-8"))
    ids = sorted(p["data-model-id"] for p in from_memory.find("circle", "candidate"))
    assert ids == sorted(p["data-model-id"] for p in from_files.find("circle", "candidate"))
    assert not list(tmp_path.glob(".*.tmp"))


def test_goals_of_the_workflow_are_stated(
    run_output: tuple[Any, Path], registry: PassRegistry, workflow: dict[str, Any]
) -> None:
    from olive.workflows.config import load_workflow_config

    output, out_dir = run_output
    data = load_report_data(out_dir)
    assert data.best_model_id == output.best.model_id
    with use_registry(registry):
        config = load_workflow_config(workflow)
    text = write_report(out_dir, workflow=config).read_text(encoding="utf-8")
    assert "agree-cosine_mean: threshold 0.9" in " ".join(_Page(text).text)


def _node(**fields: Any) -> dict[str, Any]:
    return FootprintNode(**fields).to_json()


def test_failed_and_pruned_runs_and_no_chosen_model_are_shown(tmp_path: Path) -> None:
    metrics = {"size-bytes": {"value": 100.0, "priority": 1, "higher_is_better": False}}
    footprint = {
        "workflow_id": "w",
        "accelerator": "cpu-CPUExecutionProvider",
        "objectives": [{"key": "size-bytes", "priority": 1, "higher_is_better": False}],
        "best_model_id": None,
        "reason": "no candidate met the goals: <b>size</b>",
        "nodes": [
            _node(model_id="input_model", metrics=metrics),
            _node(
                model_id="q-1",
                parent_model_id="input_model",
                pass_key="q",
                pass_name="Q",
                config={"a": 1},
                status="failed",
                error="RuntimeError: </td><b>boom</b>",
                is_candidate=True,
            ),
            _node(
                model_id="q-pruned-2",
                parent_model_id="input_model",
                pass_key="q",
                pass_name="Q",
                config={"a": 2},
                status="pruned",
                error="validate_config returned False",
            ),
        ],
    }
    (tmp_path / "footprint.json").write_text(json.dumps(footprint))
    page = _Page(write_report(tmp_path).read_text(encoding="utf-8"))
    body = " ".join(page.text)
    assert "No model was chosen" in body and "no candidate met the goals: <b>size</b>" in body
    assert not page.find("b")
    assert [r["data-model-id"] for r in page.find("tr", "failed")] == ["q-1"]
    assert [r["data-model-id"] for r in page.find("tr", "pruned")] == ["q-pruned-2"]
    assert "RuntimeError: </td><b>boom</b>" in body
    assert not page.find("circle", "candidate")  # nothing measured, nothing plotted


def test_candidates_without_finite_values_are_left_out_of_the_chart(tmp_path: Path) -> None:
    def metrics(size: float, agree: float) -> dict[str, Any]:
        return {
            "size-bytes": {"value": size, "priority": 1, "higher_is_better": False},
            "agree-cosine_mean": {"value": agree, "priority": 2, "higher_is_better": True},
        }

    nodes = [_node(model_id="input_model", metrics=metrics(100.0, 1.0))]
    for name, size in (("a", 50.0), ("b", float("nan")), ("c", 70.0)):
        nodes.append(
            _node(
                model_id=name,
                parent_model_id="input_model",
                pass_key="p",
                pass_name="P",
                config={},
                metrics=metrics(size, 0.99),
                is_candidate=True,
                is_pareto=name == "a",
            )
        )
    (tmp_path / "footprint.json").write_text(json.dumps({"best_model_id": "a", "nodes": nodes}))
    page = _Page(write_report(tmp_path).read_text(encoding="utf-8"))
    assert sorted(p["data-model-id"] for p in page.find("circle", "candidate")) == ["a", "c"]
    assert sorted(r["data-model-id"] for r in page.find("tr", "candidate")) == ["a", "b", "c"]


def test_missing_footprint_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(OliveError, match=r"no footprint\.json in .*no_artifacts"):
        write_report(tmp_path)
    assert not (tmp_path / REPORT_FILE).exists()


def test_broken_footprint_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "footprint.json").write_text("{not json")
    with pytest.raises(OliveError, match=r"footprint\.json"):
        write_report(tmp_path)
    (tmp_path / "footprint.json").write_text(json.dumps({"nodes": [{"no_id": 1}]}))
    with pytest.raises(OliveError, match="model_id"):
        write_report(tmp_path)
    assert not list(tmp_path.glob("*.html")) and not list(tmp_path.glob(".*.tmp"))


def test_front_2d_keeps_only_points_nothing_beats() -> None:
    points = [Point("a", 1, 5, ""), Point("b", 2, 2, ""), Point("c", 3, 3, ""), Point("d", 4, 1, "")]
    assert [p.model_id for p in front_2d(points, x_higher=False, y_higher=False)] == ["a", "b", "d"]
    assert [p.model_id for p in front_2d(points, x_higher=True, y_higher=True)] == ["a", "c", "d"]


def test_the_front_line_is_drawn_over_the_points_and_named_only_when_drawn() -> None:
    from olive.report.chart import scatter_svg

    two = [Point("a", 1, 5, "", pareto=True), Point("b", 2, 2, "", pareto=True), Point("c", 3, 3, "")]
    svg = scatter_svg(two, "x", "y", x_higher=False, y_higher=False)
    # Last: drawn before the points, a front of nearby points was hidden under them.
    assert svg.index('class="front"') > max(svg.rindex('class="candidate'), 0)
    one = [Point("a", 1, 1, "", pareto=True), Point("b", 2, 2, "")]
    assert 'class="front"' not in scatter_svg(one, "x", "y", x_higher=False, y_higher=False)


def test_the_legend_names_the_dashed_line_only_where_the_chart_has_one(tmp_path: Path) -> None:
    def metrics(size: float, agree: float) -> dict[str, Any]:
        return {
            "size-bytes": {"value": size, "priority": 1, "higher_is_better": False},
            "agree-cosine_mean": {"value": agree, "priority": 2, "higher_is_better": True},
        }

    def page_for(candidates: dict[str, tuple[float, float]]) -> str:
        nodes = [_node(model_id="input_model", metrics=metrics(100.0, 1.0))]
        for name, (size, agree) in candidates.items():
            fields = {"parent_model_id": "input_model", "pass_key": "p", "pass_name": "P", "config": {}}
            nodes.append(_node(model_id=name, metrics=metrics(size, agree), is_candidate=True, **fields))
        (tmp_path / "footprint.json").write_text(json.dumps({"best_model_id": "a", "nodes": nodes}))
        return " ".join(_Page(write_report(tmp_path).read_text(encoding="utf-8")).text)

    assert "dashed line" in page_for({"a": (50.0, 0.98), "b": (70.0, 0.99)})
    # One candidate better on both: a front of one point, no line, nothing to name.
    assert "dashed line" not in page_for({"a": (50.0, 0.99), "b": (70.0, 0.98)})


def test_nice_ticks_are_round_and_cover_the_range() -> None:
    assert nice_ticks(0.93, 3.87) == [1.0, 2.0, 3.0]
    assert nice_ticks(0.0, 10.0) == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert nice_ticks(0.9981, 1.0004) == [0.9985, 0.999, 0.9995, 1.0]
    assert nice_ticks(5.0, 5.0) == [5.0]


def test_the_report_states_the_ranking_rule_with_each_tolerance(run_output: tuple[Any, Path]) -> None:
    _, out_dir = run_output
    page = _Page((out_dir / REPORT_FILE).read_text(encoding="utf-8"))
    text = " ".join("".join(page.text).split())
    # size_on_disk ranks exactly; agreement ties within its default absolute tolerance.
    assert (
        "Ranking: by size-bytes (lower is better, exact), then agree-cosine_mean (higher is better, within 0.0001 "
        "ties); a tie falls through to the next priority, and a tie on all of them to the candidate tried first; "
        "candidates that meet every goal first."
    ) in text
    footprint = json.loads((out_dir / "footprint.json").read_text())
    assert {o["key"]: o["tolerance"] for o in footprint["objectives"]} == {
        "size-bytes": 0.0,
        "agree-cosine_mean": 1e-4,
    }
