"""Two roles for data: a data config that a pass fits on and a metric judges on gives each its own samples
(:mod:`olive.data.split`), deterministically, stratified by real length, and says so; too few samples is one
clear error where the split is required (``olive optimize``), and elsewhere both roles read every sample with one
warning; ``"split": false`` opts out; a metric that only times or sizes reads the data whole and splits nothing."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from engine_support import agreement_metric, base_workflow, with_evaluator

import olive
from olive.cli.main import cli
from olive.data.split import MIN_SAMPLES_PER_ROLE, TooFewSamplesError, split_indices
from olive.exceptions import OliveError, WorkflowConfigError
from olive.workflows.run import prepare

pytestmark = pytest.mark.usefixtures("engine_registry")


def _numbered(path: Path, rows: int) -> Path:
    """MLP inputs whose first value is the sample's number, so a sample can be told from its data."""
    inputs = np.random.default_rng(0).standard_normal((rows, 16)).astype(np.float32)
    inputs[:, 0] = np.arange(rows)
    np.savez(path, input=inputs)
    return path


def _shared_workflow(tmp_path: Path, rows: int = 32, **data_options) -> dict:
    data = _numbered(tmp_path / "data.npz", rows)
    workflow = base_workflow(tmp_path, passes={"fit": {"type": "FitOnData", "data_config": "calib"}})
    return with_evaluator(workflow, agreement_metric(goal=0.5), data=data, **data_options)


def _first_values(config) -> list[float]:
    return [float(v) for inputs, _ in config.create_dataloader(batch_size=1) for v in inputs["input"][:, 0]]


def test_split_is_disjoint_complete_deterministic_and_stratified_by_length() -> None:
    rng = np.random.default_rng(1)
    lengths = [int(n) for n in rng.integers(3, 120, size=41)]
    fit, judge = split_indices(lengths)
    assert not set(fit) & set(judge)
    assert sorted(fit + judge) == list(range(41))
    assert (len(fit), len(judge)) == (21, 20)
    assert split_indices(lengths) == (fit, judge)
    assert split_indices(lengths, seed=1) != (fit, judge)
    # Dealt pairwise in length order: the two parts' lengths, sorted, never drift apart by more than a pair.
    fit_lengths, judge_lengths = sorted(lengths[i] for i in fit), sorted(lengths[i] for i in judge)
    by_length = sorted(lengths)
    for k, (a, b) in enumerate(zip(fit_lengths, judge_lengths, strict=False)):
        assert by_length[2 * k] <= min(a, b) and max(a, b) <= by_length[2 * k + 1]


def test_split_needs_enough_samples_for_both_parts() -> None:
    with pytest.raises(TooFewSamplesError, match=r"15 sample\(s\), too few .*at least 16: 8 each"):
        split_indices([1] * (2 * MIN_SAMPLES_PER_ROLE - 1))
    fit, judge = split_indices([1] * (2 * MIN_SAMPLES_PER_ROLE))
    assert len(fit) == len(judge) == MIN_SAMPLES_PER_ROLE


def test_a_shared_data_config_gives_the_pass_one_half_and_the_metrics_the_other(tmp_path: Path) -> None:
    prepared = prepare(_shared_workflow(tmp_path))
    fitting = prepared.workflow.passes["fit"][0].params["data_config"]
    judging = prepared.workflow.data_configs["calib"]
    assert (fitting.role, judging.role) == ("fit", "judge")
    fit, judge = _first_values(fitting), _first_values(judging)
    assert len(fit) == len(judge) == 16
    assert sorted(fit + judge) == [float(i) for i in range(32)]
    # The two parts are different data to the caches too.
    assert fitting.content_hash() != judging.content_hash()
    [shared] = prepared.shared_data
    assert (shared.name, shared.passes, shared.metrics, shared.split) == ("calib", ("fit",), ("agree",), True)

    output = olive.run(prepared)
    assert output.best is not None
    seen = json.loads((Path(output.get_node(output.best.model_id).model_path).parent / "seen.json").read_text())
    assert seen == fit
    # The agreement was measured on the judging half only.
    assert output.best.samples == {"agree": 16}


def test_split_false_fits_and_judges_on_every_sample_and_says_what_that_measures(tmp_path: Path) -> None:
    prepared = prepare(_shared_workflow(tmp_path, rows=8, split=False))
    fitting = prepared.workflow.passes["fit"][0].params["data_config"]
    assert fitting is prepared.workflow.data_configs["calib"]
    assert _first_values(fitting) == [float(i) for i in range(8)]
    [shared] = prepared.shared_data
    assert "measure the fit" in shared.describe()


def test_data_used_in_one_role_only_is_not_split(tmp_path: Path) -> None:
    workflow = _shared_workflow(tmp_path, rows=8)
    workflow["data_configs"].append({**workflow["data_configs"][0], "name": "judge"})
    workflow["evaluators"]["common"]["metrics"][0]["data_config"] = "judge"
    prepared = prepare(workflow)
    assert prepared.shared_data == ()
    assert _first_values(prepared.workflow.passes["fit"][0].params["data_config"]) == [float(i) for i in range(8)]
    assert len(_first_values(prepared.workflow.data_configs["judge"])) == 8


def test_too_few_samples_to_split_is_exit_2_where_the_split_is_required(tmp_path: Path) -> None:
    # olive optimize prepares its workflow so: its one data file is split or the command stops.
    with pytest.raises(WorkflowConfigError) as caught:
        prepare(_shared_workflow(tmp_path, rows=10), split_required=True)
    message = str(caught.value)
    assert message.startswith("data_configs[0]: passes fit on it and metrics judge on it"), message
    assert "holds 10 sample(s)" in message and '"split": false' in message and "data config of their own" in message
    assert not (tmp_path / "out").exists()


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("olive")]


def test_too_few_samples_to_split_runs_unsplit_with_one_warning_that_the_figures_measure_the_fit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A Microsoft Olive workflow that ran there runs here: both roles see every sample, and it is said once.
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(_shared_workflow(tmp_path, rows=10)))
    result = CliRunner().invoke(cli, ["run", str(config), "--dry-run"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "data: data config 'calib': passes fit fit on it and metrics agree judge on it, on the same samples" in text
    assert "holds 10 sample(s), too few to split" in text and "quality figures measure the fit" in text

    prepared = prepare(_shared_workflow(tmp_path, rows=10))
    fitting = prepared.workflow.passes["fit"][0].params["data_config"]
    assert fitting is prepared.workflow.data_configs["calib"] and fitting.role is None
    [shared] = prepared.shared_data
    assert (shared.split, shared.too_few) == (False, 10)
    with caplog.at_level(logging.WARNING, logger="olive"):
        output = olive.run(prepared)
    assert output.best is not None
    seen = json.loads((Path(output.get_node(output.best.model_id).model_path).parent / "seen.json").read_text())
    assert seen == [float(i) for i in range(10)]
    assert output.best.samples == {"agree": 10}
    [warning] = _warnings(caplog)
    assert "data config 'calib'" in warning and "holds 10 sample(s)" in warning and "measure the fit" in warning


def _script_workflow(tmp_path: Path, rows: int) -> dict:
    """The shared workflow with its samples made by a user script: counted only once loaded."""
    (tmp_path / "user_data.py").write_text(
        "import numpy as np\n"
        "def load(data_dir=None):\n"
        f"    inputs = np.random.default_rng(0).standard_normal(({rows}, 16)).astype(np.float32)\n"
        f"    inputs[:, 0] = np.arange({rows})\n"
        "    return [({'input': row}, None) for row in inputs]\n"
    )
    workflow = _shared_workflow(tmp_path, rows=rows)
    workflow["data_configs"] = [
        {
            "name": "calib",
            "type": "DataContainer",
            "user_script": str(tmp_path / "user_data.py"),
            "load_dataset_config": {"type": "load"},
        }
    ]
    return workflow


def test_data_counted_only_once_loaded_is_read_whole_with_one_warning_when_too_few(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    prepared = prepare(_script_workflow(tmp_path, rows=6))
    fitting = prepared.workflow.passes["fit"][0].params["data_config"]
    judging = prepared.workflow.data_configs["calib"]
    assert (fitting.role, judging.role) == ("fit", "judge")
    with caplog.at_level(logging.WARNING, logger="olive"):
        assert _first_values(fitting) == _first_values(judging) == [float(i) for i in range(6)]
        output = olive.run(prepared)
    assert output.best is not None and output.best.samples == {"agree": 6}
    [warning] = _warnings(caplog)
    assert "data config 'calib'" in warning and "holds 6 sample(s)" in warning and "measure the fit" in warning
    # Where the split is required, loading refuses.
    prepared = prepare(_script_workflow(tmp_path, rows=6), split_required=True)
    with pytest.raises(OliveError, match=r"holds 6 sample\(s\), too few to split"):
        _first_values(prepared.workflow.data_configs["calib"])


def test_a_metric_that_only_times_or_sizes_takes_the_data_whole_and_causes_no_split(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Microsoft Olive's static quantization example: calibration and a latency metric on one 6-sample config.
    data = _numbered(tmp_path / "data.npz", 6)
    workflow = base_workflow(tmp_path, passes={"fit": {"type": "FitOnData", "data_config": "calib"}})
    latency = {"name": "latency", "type": "latency", "data_config": "calib", "sub_types": [{"name": "avg"}]}
    size = {"name": "size", "type": "size_on_disk", "data_config": "calib", "sub_types": [{"name": "bytes"}]}
    workflow = with_evaluator(workflow, latency, size, data=data)
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(workflow))
    with caplog.at_level(logging.WARNING, logger="olive"):
        result = CliRunner().invoke(cli, ["run", str(config)])
    assert result.exit_code == 0, result.output
    assert "too few" not in result.output and "measure the fit" not in result.output
    assert not [w for w in _warnings(caplog) if "calib" in w]
    prepared = prepare(workflow)
    assert prepared.shared_data == ()
    assert prepared.workflow.data_configs["calib"].role is None
    output = olive.run(prepared)
    seen = json.loads((Path(output.get_node(output.best.model_id).model_path).parent / "seen.json").read_text())
    assert seen == [float(i) for i in range(6)]


def test_beside_a_judging_metric_a_timing_metric_still_reads_the_data_whole(tmp_path: Path) -> None:
    workflow = _shared_workflow(tmp_path, rows=32)
    latency = {"name": "latency", "type": "latency", "data_config": "calib", "sub_types": [{"name": "avg"}]}
    workflow["evaluators"]["common"]["metrics"].append(latency)
    prepared = prepare(workflow)
    [shared] = prepared.shared_data
    assert shared.metrics == ("agree",)
    metrics = {metric.name: metric for metric in prepared.workflow.evaluator.metrics}
    timed = prepared.workflow.data_configs[metrics["latency"].data_config]
    judged = prepared.workflow.data_configs[metrics["agree"].data_config]
    assert (timed.name, timed.role, judged.role) == ("calib", None, "judge")
    assert len(_first_values(timed)) == 32 and len(_first_values(judged)) == 16
    output = olive.run(prepared)
    assert output.best is not None and output.best.samples["agree"] == 16


def test_dry_run_states_the_split_rule(tmp_path: Path) -> None:
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(_shared_workflow(tmp_path)))
    result = CliRunner().invoke(cli, ["run", str(config), "--dry-run"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "data: data config 'calib': passes fit fit on it and metrics agree judge on it, each on its own" in text
    assert "ordered by real length" in text and "seed 0" in text


def test_split_must_be_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(WorkflowConfigError, match=r"data_configs\[0\]\.split: expected true or false"):
        prepare(_shared_workflow(tmp_path, split="yes"))


def test_a_pass_that_reads_samples_only_as_examples_gets_them_whole_and_causes_no_split(tmp_path: Path) -> None:
    workflow = _shared_workflow(tmp_path, rows=8)
    workflow["passes"] = {"convert": {"type": "ReadExamples", "data_config": "calib"}}
    prepared = prepare(workflow)
    assert prepared.shared_data == ()
    assert _first_values(prepared.workflow.passes["convert"][0].params["data_config"]) == [float(i) for i in range(8)]
    assert prepared.workflow.data_configs["calib"].role is None
    # Beside a pass that fits, it still reads every sample, and only the fitting pass gets the fitting half.
    workflow = _shared_workflow(tmp_path, rows=32)
    workflow["passes"] = {
        "convert": {"type": "ReadExamples", "data_config": "calib"},
        "fit": {"type": "FitOnData", "data_config": "calib"},
    }
    prepared = prepare(workflow)
    [shared] = prepared.shared_data
    assert shared.passes == ("fit",)
    assert prepared.workflow.passes["convert"][0].params["data_config"].role is None
    assert prepared.workflow.passes["fit"][0].params["data_config"].role == "fit"
