"""``olive optimize`` and ``olive quantize`` end to end on the tiny test models: real passes (olive-passes-quant and
olive-passes-graph, installed in tox -e e2e), real onnxruntime sessions, the real command.

The headline journey runs the ``olive`` script in a subprocess, as a user would; the other cases invoke the click
command in-process (the same code, without a new interpreter each time). Flag-to-workflow mapping is checked on
``--dry-run``'s printed workflow, which ``olive.workflows.run.prepare`` has validated against the installed passes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

from olive.cli.main import cli
from olive.testing.models import bert_like_model, mlp_model, save_model, write_npz_dataset
from olive.testing.processes import run_watched


def olive(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("olive")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "olive.cli.main"]
    # Hung only after five minutes without output (the progress bar counts), however busy the machine.
    return run_watched([*command, *args], env={**os.environ, "COLUMNS": "160"}, cwd=cwd, stalled_after=300)


def invoke(*args: str) -> Any:
    return CliRunner(env={"COLUMNS": "160"}).invoke(cli, list(args), catch_exceptions=False)


def one_line_error(result: Any, code: int) -> str:
    """The one error line (last on stderr; a run's progress bar may come before it)."""
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]


def printed_workflow(stdout: str) -> dict[str, Any]:
    """The workflow --dry-run prints (a JSON object from a line "{" to the line "}")."""
    lines = stdout.splitlines()
    start = lines.index("{")
    end = start + lines[start:].index("}")
    return json.loads("\n".join(lines[start : end + 1]))


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("bert")
    model = save_model(bert_like_model(seed=0, num_layers=2, hidden_size=64, num_heads=4), folder)
    data = write_npz_dataset(folder / "data.npz", model, num_samples=16, sequence_length=16, seed=1)
    return Path(model.model_path), data


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("mlp")
    model = save_model(mlp_model(seed=0, in_features=64, hidden=128, out_features=32), folder)
    data = write_npz_dataset(folder / "data.npz", model, num_samples=16, seed=1)
    return Path(model.model_path), data


# --------------------------------------------------------------------------------------------- the journey
def test_optimize_a_transformer_with_data_then_rerun_its_workflow_from_the_cache(tmp_path, bert) -> None:
    model, data = bert
    out, cache = tmp_path / "out", tmp_path / "cache"
    first = olive("optimize", str(model), "--data", str(data), "-o", str(out), "--cache-dir", str(cache))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Traceback" not in first.stderr
    assert (
        "Search: quantize (OnnxAccuracyGuardedQuantization); up to 8 candidate(s), stopping at the first that keeps "
        "every keep" in first.stdout
    )
    assert "Note:   --data: half to fit (passes), half to judge (metrics and goals)" in first.stdout
    assert "Note:   no transformer fusion: a default from benchmarks/bench_optimize.py, not measured on this CPU" in (
        first.stdout
    )
    assert "Goal:   the fastest model that keeps cosine_min>=0.97 and cosine_mean>=0.99" in first.stdout
    assert "Chosen model, against the input model:" in first.stdout
    for words in (
        "latency: ",
        "x the input's median (the two timed in alternating rounds, ±",
        "size: ",
        " MiB -> ",  # the table's unit
        "agreement with the input on 8 held-out sample(s), the worst over batch sizes 1 and 32 (at 32: one batch of "
        "8, every sample): cosine_min ",
        "the guard's own check on the 8 sample(s) it fit on at batch sizes 1 and 32: cosine_min ",
    ):
        assert words in first.stdout, words
    for name in ("model.onnx", "report.html", "footprint.json", "optimize_workflow.json", "model_config.json"):
        assert (out / name).is_file(), name
    footprint = read(out / "footprint.json")
    assert sum(1 for n in footprint["nodes"] if n["is_candidate"]) == 1
    best = next(n for n in footprint["nodes"] if n["model_id"] == footprint["best_model_id"])
    assert best["pass_name"] == "OnnxAccuracyGuardedQuantization" and best["meets_goals"]
    assert best["metrics"]["agreement-cosine_min"]["value"] >= 0.97
    assert {o["key"] for o in footprint["objectives"]} >= {"latency-ratio_p50", "agreement-cosine_min", "size-bytes"}
    model_bytes = (out / "model.onnx").read_bytes()

    again = olive("run", str(out / "optimize_workflow.json"))
    assert again.returncode == 0, again.stdout + again.stderr
    rerun = read(out / "footprint.json")
    runs = [n for n in rerun["nodes"] if n["pass_key"] and n["status"] == "ok" and not n.get("target_of")]
    assert runs and all(n["cached"] for n in runs)
    assert rerun["best_model_id"] == footprint["best_model_id"]
    assert (out / "model.onnx").read_bytes() == model_bytes


def test_dry_run_prints_the_workflow_and_its_search_size_and_writes_nothing(tmp_path, bert) -> None:
    model, data = bert
    out, cache = tmp_path / "out", tmp_path / "cache"
    result = invoke(
        "optimize", str(model), "-d", str(data), "--output_path", str(out), "--cache-dir", str(cache), "--dry_run"
    )
    assert result.exit_code == 0, result.output
    workflow = printed_workflow(result.stdout)
    assert workflow["passes"]["quantize"]["type"] == "OnnxAccuracyGuardedQuantization"
    assert workflow["output_dir"] == str(out) and workflow["cache_dir"] == str(cache)
    assert "total search space: 8 point(s)" in result.stdout
    assert not out.exists() and not cache.exists()


@pytest.mark.parametrize("flag", ["--save_config_file", "--save-config"])
def test_save_config_file_writes_the_workflow_and_runs_nothing(tmp_path, mlp, flag: str) -> None:
    model, data = mlp
    out = tmp_path / "out"
    result = invoke("optimize", "-m", str(model), "--data", str(data), "-o", str(out), flag)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [".olive-output.json", "optimize_workflow.json"]
    workflow = read(out / "optimize_workflow.json")
    assert workflow["input_model"]["model_path"] == str(model)
    assert f"olive run {out / 'optimize_workflow.json'}" in result.stdout


@pytest.mark.int8_kernel
def test_without_data_agreement_is_measured_on_synthetic_inputs(tmp_path, mlp) -> None:
    model, _ = mlp
    out = tmp_path / "out"
    result = invoke("optimize", str(model), "-o", str(out), "--cache-dir", str(tmp_path / "cache"))
    assert result.exit_code == 0, result.output
    assert "Note:   no --data: agreement is measured on synthetic inputs" in result.stdout
    assert "(agreement on synthetic inputs; give --data to judge it on real samples)" in result.stdout
    # Synthetic inputs are not held-out samples, and a worst case over them promises nothing about real ones.
    assert "synthetic sample(s): cosine_min " in result.stdout and "held-out" not in result.stdout
    assert "an unseen sample does worse" not in result.stdout
    footprint = read(out / "footprint.json")
    best = next(n for n in footprint["nodes"] if n["model_id"] == footprint["best_model_id"])
    assert best["pass_name"] == "OnnxDynamicQuantization" and best["config"]["quant_preprocess"] is False
    workflow = read(out / "optimize_workflow.json")
    assert workflow["data_configs"] == []
    assert all("data_config" not in m for m in workflow["evaluators"]["optimize"]["metrics"])
    ops = {n.op_type for n in onnx.load(out / "model.onnx").graph.node}
    assert "MatMulInteger" in ops or "DynamicQuantizeMatMul" in ops


def test_a_keep_no_candidate_meets_exits_1_naming_the_closest_and_its_latency(tmp_path, mlp) -> None:
    model, _ = mlp
    out = tmp_path / "out"
    result = invoke(
        "optimize",
        str(model),
        "--precision",
        "int4",
        "--block_size",
        "16",
        "--keep",
        "cosine_min>=0.999999",
        "-o",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    line = one_line_error(result, 1)
    assert (
        "no candidate keeps cosine_min>=0.999999: the closest (OnnxBlockWiseRtnQuantization) reached cosine_min 0."
        in (line)
    )
    assert "x the input's latency; loosen --keep" in line
    assert f"Workflow: {out / 'optimize_workflow.json'}" in result.stdout
    assert not (out / "model.onnx").exists()  # nothing was chosen, nothing is passed off as the result


def test_a_classifiers_first_run_on_40_samples_chooses_a_model(tmp_path) -> None:
    # top1>=0.99 on 40 samples allowed no flipped prediction, and the run ended with no model.
    proto = mlp_model(in_features=16, hidden=64, out_features=10)
    proto.graph.output[0].name = "logits"
    proto.graph.node[-1].output[0] = "logits"
    model = save_model(proto, tmp_path / "mlp")
    data = write_npz_dataset(tmp_path / "samples.npz", model, num_samples=40)
    out = tmp_path / "out"
    result = invoke(
        "optimize", model.model_path, "--data", str(data), "-o", str(out), "--cache-dir", str(tmp_path / "c")
    )
    assert result.exit_code == 0, result.output
    assert "top1 is kept at 0.97, not 0.99: on 40 judged sample(s)" in result.stdout
    assert "every sample judges" in result.stdout and "half to fit" not in result.stdout
    assert (out / "model.onnx").is_file()
    # A keep no candidate meets with top1 alone names the keep that brings in the accuracy guard.
    strict = invoke(
        "optimize",
        model.model_path,
        "--data",
        str(data),
        "--keep",
        "top1=1",
        "-o",
        str(tmp_path / "strict"),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert "add --keep cosine_mean=0.99 to bring in the accuracy guard" in one_line_error(strict, 1)


def test_a_budget_no_candidate_meets_while_every_keep_is_met_suggests_a_larger_budget(tmp_path, mlp) -> None:
    model, data = mlp
    result = invoke(
        "optimize", str(model), "--data", str(data), "--keep", "cosine_min>=0.5", "--latency-budget", "0.0001",
        "-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    line = one_line_error(result, 1)
    assert "keep cosine_min>=0.5, but none ran within 0.0001x the input's latency: the fastest of them" in line
    assert "raise --latency-budget to " in line and "loosen --keep" not in line


def test_the_accuracy_guard_keeps_nodes_in_float_for_a_strict_keep(tmp_path) -> None:
    # A planted outlier channel makes one FFN projection ruin plain int8; the guard keeps it in float.
    model = save_model(bert_like_model(seed=0, plant_outlier_layer=1), tmp_path / "model")
    data = write_npz_dataset(tmp_path / "data.npz", model, num_samples=16, sequence_length=16, seed=1)
    out = tmp_path / "out"
    result = invoke(
        "quantize",
        "-m",
        model.model_path,
        "-d",
        str(data),
        "--keep",
        "cosine_mean>=0.999",
        "-o",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert result.exit_code == 0, result.output
    config = read(out / "model_config.json")["config"]
    guard = config["model_attributes"]["accuracy_guard"]
    assert guard["target_met"] and guard["fp32_nodes"]
    assert [p["pass_name"] for p in read(out / "model_config.json")["produced_by"]] == [
        "OnnxAccuracyGuardedQuantization"
    ]


def test_a_latency_budget_searches_the_guard_target(tmp_path, bert) -> None:
    model, data = bert
    out = tmp_path / "out"
    result = invoke(
        "optimize",
        str(model),
        "--data",
        str(data),
        "--latency-budget",
        "20",
        "--fusion",
        "-o",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert result.exit_code == 0, result.output
    assert "Goal:   the model that agrees best within 20x the input's latency" in result.stdout
    footprint = read(out / "footprint.json")
    guards = [n for n in footprint["nodes"] if n["pass_name"] == "OnnxAccuracyGuardedQuantization"]
    targets = {tuple(n["config"]["target_value"]) for n in guards}
    assert len(targets) == 7 and (0.97, 0.99) in targets
    assert sum(1 for n in footprint["nodes"] if n["pass_name"] == "OnnxSensitivityAnalysis") == 1
    objectives = [o["key"] for o in footprint["objectives"]]
    assert objectives[:2] == ["agreement-cosine_min", "agreement-cosine_mean"]
    best = next(n for n in footprint["nodes"] if n["model_id"] == footprint["best_model_id"])
    best_min = best["metrics"]["agreement-cosine_min"]["value"]
    assert all(best_min >= n["metrics"]["agreement-cosine_min"]["value"] for n in guards if n.get("meets_goals"))


def test_max_time_stops_the_search(tmp_path, bert) -> None:
    model, data = bert
    out = tmp_path / "out"
    result = invoke(
        "optimize", str(model), "--data", str(data), "--max-time", "0.001", "-o", str(out), "--cache-dir",
        str(tmp_path / "cache"),
    )  # fmt: skip
    line = one_line_error(result, 1)
    assert "the search limits (max_time=0.001s) stopped the search" in line
    assert "Search:   --max-time 0.001 s stopped the search after 0 of its 8 candidate(s)" in result.stdout
    assert not (out / "model.onnx").exists()


@pytest.mark.parametrize(
    ("args", "op_types"),
    [
        (["--precision", "int4", "--block_size", "16"], {"MatMulNBits"}),
        (["--precision", "fp16"], {"Cast"}),
        (["--use_qdq_format", "--data", "DATA", "--keep", "cosine_min>=0.9"], {"QuantizeLinear", "DequantizeLinear"}),
        (["--act_precision", "uint8", "--data", "DATA", "--keep", "cosine_min>=0.9"], {"QuantizeLinear", "QGemm"}),
    ],
)
def test_each_precision_makes_its_kind_of_model(tmp_path, mlp, args: list[str], op_types: set[str]) -> None:
    model, data = mlp
    out = tmp_path / "out"
    args = [str(data) if a == "DATA" else a for a in args]
    result = invoke("optimize", str(model), *args, "-o", str(out), "--cache-dir", str(tmp_path / "cache"))
    assert result.exit_code == 0, result.output
    ops = {n.op_type for n in onnx.load(out / "model.onnx").graph.node}
    assert op_types <= ops, ops


def test_quantize_takes_microsoft_olives_flags_and_leaves_the_graph_alone(tmp_path, bert) -> None:
    model, data = bert
    out = tmp_path / "quantized"
    result = invoke(
        "quantize",
        "-m",
        str(model),
        "--algorithm",
        "rtn",
        "--precision",
        "int8",
        "--implementation",
        "ort",
        "-d",
        str(data),
        "--max_samples",
        "16",
        "--batch_size",
        "1",
        "-o",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
    )
    assert result.exit_code == 0, result.output
    footprint = read(out / "footprint.json")
    assert [n["pass_name"] for n in footprint["nodes"] if n["pass_key"]] == ["OnnxAccuracyGuardedQuantization"]
    workflow = read(out / "optimize_workflow.json")
    assert workflow["data_configs"][0]["load_dataset_config"]["max_samples"] == 16
    guard = read(out / "model_config.json")["config"]["model_attributes"]["accuracy_guard"]
    # the fitting half of the 16 (the other half judges)
    assert guard["num_samples"] == 8


@pytest.mark.parametrize(
    ("args", "check"),
    [
        (["--no-fusion"], lambda w: list(w["passes"]) == ["quantize"]),
        (["--fusion"], lambda w: "only_onnxruntime" not in w["passes"]["fuse"]),
        (["--precision", "uint8"], lambda w: w["passes"]["quantize"]["precision"] == "uint8"),
        (
            ["--use_qdq_encoding"],
            lambda w: (
                (w["passes"]["quantize"]["type"], w["passes"]["quantize"]["quant_format"])
                == ("OnnxStaticQuantization", "QDQ")
            ),
        ),
        (["--batch_size", "2"], lambda w: w["data_configs"][0]["dataloader_config"] == {"batch_size": 2}),
        (["--max_samples", "16"], lambda w: w["passes"]["quantize"]["max_samples"] == 16),
        (["--keep", "top1>=0.9"], lambda w: w["passes"]["quantize"]["type"] == "OnnxDynamicQuantization"),
        (
            ["--provider", "CPUExecutionProvider"],
            lambda w: w["systems"]["target"]["accelerators"][0]["execution_providers"] == ["CPUExecutionProvider"],
        ),
        (
            ["--provider", "all"],
            lambda w: w["systems"]["target"]["accelerators"][0]["execution_providers"][0] == "CPUExecutionProvider",
        ),
        (["--max_time", "60"], lambda w: w["search_strategy"]["max_time"] == 60),
    ],
)
def test_each_flag_reaches_the_workflow(tmp_path, bert, args: list[str], check: Any) -> None:
    model, data = bert
    result = invoke("optimize", str(model), "--data", str(data), *args, "--dry-run")
    assert result.exit_code == 0, result.output
    assert check(printed_workflow(result.stdout))


@pytest.mark.parametrize(
    ("args", "size"),
    [
        # int8 on the CPU: unfused; the guard's seven targets, from the keeps' own, until one holds, then static
        # int8 at the keeps' own (served at batch 32 too, where dynamic int8 depends on the batch-mates)
        ([], 8),
        (["--fusion"], 8),
        (["--latency-budget", "0.8"], 7),  # seven guard targets
        (["--precision", "int4"], 2),  # fused or not
        (["--precision", "fp16"], 2),
        (["--precision", "fp32"], 2),
        (["--use_qdq_format"], 1),
        (["--act_precision", "uint8"], 1),
        (["--keep", "top1>=0.9"], 1),
    ],
)
def test_the_search_is_only_what_optimize_means_to_search(bert, args: list[str], size: int) -> None:
    # Every param a pass searches by default is pinned, or the search would quietly multiply.
    model, data = bert
    result = invoke("optimize", str(model), "--data", str(data), *args, "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"total search space: {size} point(s)" in result.stdout
    guarded = "--latency-budget" not in args and "top1>=0.9" not in args and size == 8
    assert (f"; up to {size} candidate(s)" if guarded else f"; {size} candidate(s)") in result.stdout


def test_dims_size_the_synthetic_inputs(tmp_path, bert) -> None:
    model, _ = bert
    result = invoke("optimize", str(model), "--dim_param", "batch,sequence", "--dim_value", "1,24", "--dry-run")
    assert result.exit_code == 0, result.output
    metrics = printed_workflow(result.stdout)["evaluators"]["optimize"]["metrics"]
    assert all(m["user_config"]["input_shapes"] == [[1, 24]] * 3 for m in metrics if m["type"] != "size_on_disk")


@pytest.mark.parametrize(
    ("args", "owner", "words"),
    [
        (["--provider", "NoSuchExecutionProvider"], "--provider", ""),
        (["--device", "gpu"], "--provider", "CUDAExecutionProvider"),
        (["--task", "feature-extraction"], "--task", "is for a Hugging Face model folder"),
    ],
)
def test_a_target_or_task_that_cannot_be_used_is_exit_code_2(bert, args, owner, words) -> None:
    model, data = bert
    line = one_line_error(invoke("optimize", str(model), "--data", str(data), *args, "--dry-run"), 2)
    assert line.startswith(f"Error: {owner}: ") and words in line


def test_files_olive_did_not_write_are_never_overwritten(tmp_path, mlp) -> None:
    model, _ = mlp
    out = tmp_path / "out"
    out.mkdir()
    (out / "optimize_workflow.json").write_text("mine")
    line = one_line_error(invoke("optimize", str(model), "-o", str(out), "--cache-dir", str(tmp_path / "c")), 2)
    assert "optimize_workflow.json, which Olive did not write" in line
    assert (out / "optimize_workflow.json").read_text() == "mine"
    (out / "optimize_workflow.json").unlink()
    (out / "model.onnx").write_text("mine too")
    line = one_line_error(invoke("optimize", str(model), "-o", str(out), "--cache-dir", str(tmp_path / "c")), 2)
    assert "model.onnx, which Olive did not write" in line
    assert not (out / "optimize_workflow.json").exists()


def test_verbose_shows_the_traceback_of_an_error(bert) -> None:
    model, _ = bert
    result = invoke("optimize", str(model), "--keep", "cosine>=1", "-v")
    assert result.exit_code == 2
    assert "Traceback" in result.stderr and result.stderr.strip().splitlines()[-1].startswith("Error: --keep:")


def test_npz_data_keyed_by_input_name_is_checked_against_the_model(tmp_path, bert) -> None:
    model, _ = bert
    np.savez(tmp_path / "partial.npz", input_ids=np.ones((2, 8), dtype=np.int64))
    line = one_line_error(invoke("optimize", str(model), "--data", str(tmp_path / "partial.npz")), 2)
    assert line.startswith("Error: --data: ") and "does not provide input(s) 'attention_mask', 'token_type_ids'" in line


def test_provider_all_names_what_it_searches_and_what_it_leaves_out(bert) -> None:
    # olive-core knows the OpenVINO plugin provider, which this environment does not install.
    model, data = bert
    result = invoke("optimize", str(model), "--data", str(data), "--provider", "all", "--dry-run")
    assert result.exit_code == 0, result.output
    [note] = [line for line in result.stdout.splitlines() if line.startswith("Note:   --provider all")]
    assert note.startswith(
        "Note:   --provider all on cpu: CPUExecutionProvider; left out: OpenVINOExecutionProvider (not installed: "
        "pip install onnxruntime-ep-openvino)"
    ), note
    assert note.endswith("(olive eps lists them)")
