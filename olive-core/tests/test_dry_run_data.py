"""``olive run --dry-run`` reads the workflow's ``.npz`` data and checks it against the input model: a file that
does not fit is exit code 2 with one line that names the data config, before anything runs, and never
suggests loading pickled data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from engine_support import agreement_metric, base_workflow, with_evaluator

from olive.cli.main import cli

pytestmark = pytest.mark.usefixtures("engine_registry")

# The MLP of engine_support takes 'input', float32, shape [batch, 16].
GOOD = {"input": np.zeros((4, 16), np.float32)}


def _dry_run(tmp_path: Path, arrays: dict | None = None, raw: bytes | None = None, **data_options) -> object:
    data = tmp_path / "data.npz"
    if raw is not None:
        data.write_bytes(raw)
    else:
        np.savez(data, **arrays)
    workflow = with_evaluator(base_workflow(tmp_path), agreement_metric(goal=0.9), data=data, **data_options)
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(workflow))
    return CliRunner().invoke(cli, ["run", str(config), "--dry-run"])


def test_data_that_fits_passes_the_dry_run(tmp_path: Path) -> None:
    result = _dry_run(tmp_path, GOOD)
    assert result.exit_code == 0, result.output
    assert "config is valid" in result.output


@pytest.mark.parametrize(
    ("arrays", "expected"),
    [
        ({"inputs": np.zeros((4, 16), np.float32)}, r"does not provide input\(s\) 'input'.*is 'inputs' meant to be"),
        ({"input": np.zeros((4, 2, 16), np.float32)}, r"input 'input' has shape \[1, 2, 16\] \(rank 3\).*rank 2"),
        ({"input": np.zeros((4, 12), np.float32)}, r"size 12 on axis 1 but the input model fixes it to 16"),
        ({"input": np.zeros((4, 16), np.int64)}, r"input 'input' is int64 but the input model takes float32"),
        (
            {"input": np.zeros((4, 16), np.float32), "labels": np.zeros(3)},
            r"disagree on the number of samples \(first axis\) \(input: 4, labels: 3\)",
        ),
    ],
    ids=["names", "rank", "fixed-dim", "dtype", "lengths"],
)
def test_data_that_does_not_fit_the_model_is_exit_2_at_dry_run(tmp_path: Path, arrays: dict, expected: str) -> None:
    import re

    result = _dry_run(tmp_path, arrays)
    assert result.exit_code == 2, result.output
    assert "config is valid" not in result.output
    line = result.stderr.strip()
    assert "\n" not in line
    assert line.startswith("Error: data_configs[0].load_dataset_config.data_path: "), line
    assert re.search(expected, line), line


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"input,label\n1,2\n", "is not an .npz archive"),
        (None, "holds Python objects (dtype object)"),
    ],
    ids=["text-file", "object-array"],
)
def test_an_unreadable_data_file_is_exit_2_and_never_suggests_unpickling(
    tmp_path: Path, raw: bytes | None, expected: str
) -> None:
    arrays = None if raw is not None else {"input": np.array([{"a": 1}] * 4, dtype=object)}
    if arrays is not None:
        np.savez(tmp_path / "data.npz", **arrays)  # numpy writes object arrays pickled
        raw = (tmp_path / "data.npz").read_bytes()
    result = _dry_run(tmp_path, raw=raw)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert "numpy.savez" in result.stderr
    assert "pickle" not in result.output.lower() and "allow_pickle" not in result.output


def test_the_real_run_stops_on_the_same_check_before_any_pass_runs(tmp_path: Path) -> None:
    data = tmp_path / "data.npz"
    data.write_text("not an archive")
    workflow = with_evaluator(base_workflow(tmp_path), agreement_metric(goal=0.9), data=data)
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "wf.json")])
    assert result.exit_code == 2, result.output
    assert "is not an .npz archive" in result.stderr and "pickle" not in result.output.lower()
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "cache").exists()


def test_the_batch_size_counts_against_a_fixed_batch_dimension(tmp_path: Path) -> None:
    from olive.testing.models import mlp_model, save_model

    np.savez(tmp_path / "data.npz", **GOOD)
    workflow = with_evaluator(
        base_workflow(tmp_path),
        agreement_metric(goal=0.9),
        data=tmp_path / "data.npz",
        dataloader_config={"batch_size": 4},
    )
    proto = mlp_model(seed=0)
    proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1  # batch fixed to 1
    workflow["input_model"]["model_path"] = save_model(proto, tmp_path / "fixed").model_path
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "wf.json"), "--dry-run"])
    assert result.exit_code == 2, result.output
    assert "size 4 on axis 0 but the input model fixes it to 1" in result.stderr


@pytest.mark.parametrize("width", ["40", "200"])
def test_the_dry_run_table_cuts_no_pass_name(tmp_path: Path, width: str) -> None:
    workflow = base_workflow(
        tmp_path,
        passes={"add_matmuls": {"type": "AddMatMuls"}, "scale": {"type": "ScaleOutput"}},
        search_strategy={"execution_order": "joint", "sampler": "sequential"},
    )
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "wf.json"), "--dry-run"], env={"COLUMNS": width})
    assert result.exit_code == 0, result.output
    words = {w.strip(",:;") for w in result.output.split()}
    assert {"add_matmuls", "AddMatMuls", "ScaleOutput"} <= words, result.output
    assert "…" not in result.output
