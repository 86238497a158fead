"""``olive optimize`` / ``olive quantize`` through the click CLI where nothing runs: help, Microsoft Olive's flag
names, and every error that stops the command before a workflow runs (exit code 2, one line).

Runs that optimize a model need the quantization and graph passes: ``e2e/test_optimize.py`` (tox -e e2e), and
Hugging Face folders ``olive-passes-torch/tests/test_optimize_hf.py``.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from olive.cli.main import cli
from olive.data.containers import new_container_registry, use_container_registry
from olive.plugins.registry import PassRegistry, use_registry
from olive.testing.models import bert_like_model, mlp_model, save_model, write_npz_dataset


@pytest.fixture
def no_passes() -> Iterator[None]:
    """No pass distribution and no plugin data container installed (olive-core alone)."""
    with use_registry(PassRegistry(entry_points=False)), use_container_registry(new_container_registry(False)):
        yield


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("bert")
    model = save_model(bert_like_model(seed=0), folder)
    data = write_npz_dataset(folder / "data.npz", model, num_samples=16, sequence_length=8)
    return Path(model.model_path), data


def invoke(*args: str, cwd: Path | None = None):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def test_olive_lists_optimize_and_quantize() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    assert "optimize " in result.stdout and "quantize " in result.stdout


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (
            "optimize",
            (
                "-m, --model_name_or_path",
                "--output_path",
                "--provider",
                "--device",
                "--precision",
                "--act_precision",
                "--use_qdq_format",
                "--block_size",
                "--dim_param",
                "--dim_value",
                "--dry_run",
                "--save_config_file",
                "--keep",
                "--latency-budget",
                "--max-time",
            ),
        ),
        (
            "quantize",
            (
                "-m, --model_name_or_path",
                "--algorithm",
                "--precision",
                "--act_precision",
                "--implementation",
                "-d, --data, --data_name",
                "--max_samples",
                "--batch_size",
                "-o, --output, --output_path",
            ),
        ),
    ],
)
def test_help_names_microsoft_olives_flags(command: str, flags: tuple[str, ...]) -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [command, "--help"])
    assert result.exit_code == 0
    for flag in flags:
        assert flag in result.stdout, flag


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--no-such-flag"], "No such option '--no-such-flag'; see 'olive optimize --help'"),
        (["--block_size", "many"], "'many' is not a valid integer"),
        (["MODEL", "--keep", "cosine_min"], "--keep: 'cosine_min' is not 'metric=value'"),
        (["MODEL", "--keep", "cosine_min<=0.9"], "higher-is-better"),
        (["MODEL", "--algorithm", "gptq"], "--algorithm: 'gptq' is not supported"),
        (["MODEL", "--implementation", "awq"], "--implementation: 'awq' is a Microsoft Olive implementation"),
        (["MODEL", "--precision", "nf4"], "--precision: 'nf4' is a Microsoft Olive precision"),
        (["MODEL", "--precision", "int2"], "--precision: 'int2' is not supported"),
        (["MODEL", "--latency-budget", "soon"], "--latency-budget: 'soon' is neither a ratio"),
        (["MODEL", "--dim_param", "batch"], "--dim_value: --dim_param needs --dim_value too"),
        (["MODEL", "--block_size", "32"], "--block_size: a block size is for --precision int4"),
        (["MODEL", "--act_precision", "int8"], "--act_precision: int8 activations need --use_qdq_format"),
        (["MODEL", "--device", "tpu"], "--device: 'tpu' is not supported"),
        (["MODEL", "--max-time", "0"], "--max-time"),
        (["MODEL", "-t", "feature-extraction"], "--task: --task is for a Hugging Face model folder"),
        ([], "MODEL: no model given"),
    ],
)
def test_a_bad_flag_is_one_line_and_exit_code_2(bert, args: list[str], words: str) -> None:
    model, _ = bert
    line = one_line_error(invoke("optimize", *[str(model) if a == "MODEL" else a for a in args]))
    assert words in line


def test_a_model_that_cannot_be_read_is_exit_code_2(tmp_path) -> None:
    assert "does not exist" in one_line_error(invoke("optimize", str(tmp_path / "nope.onnx")))
    (tmp_path / "bad.onnx").write_bytes(b"\x00not onnx")
    assert "cannot be read as an ONNX model" in one_line_error(invoke("optimize", str(tmp_path / "bad.onnx")))
    other = save_model(mlp_model(), tmp_path / "other").model_path
    line = one_line_error(invoke("optimize", "-m", "sentence-transformers/all-MiniLM-L6-v2", "--dry-run"))
    assert "models are not downloaded from the Hugging Face hub" in line and "--local-dir" in line
    line = one_line_error(invoke("optimize", str(tmp_path / "bad.onnx"), "-m", other))
    assert "two models given" in line


def test_data_that_does_not_fit_the_model_is_exit_code_2(tmp_path, bert) -> None:
    model, _ = bert
    np.savez(tmp_path / "wrong.npz", pixels=np.zeros((2, 3), dtype=np.float32))
    line = one_line_error(invoke("optimize", str(model), "--data", str(tmp_path / "wrong.npz")))
    assert "--data:" in line and "does not provide input(s) 'input_ids'" in line
    line = one_line_error(invoke("optimize", str(model), "-d", str(tmp_path / "missing.npz")))
    assert "is not a file" in line and "hub" not in line
    line = one_line_error(invoke("quantize", str(model), "--data_name", "squad"))
    assert line.startswith("Error: --data: 'squad' is not a file; hub datasets are not downloaded here")
    assert ".npz" in line and ".txt" in line


def test_an_npz_is_checked_by_the_rules_of_olive_run(tmp_path, bert) -> None:
    """Ranks, dtypes and readability as ``olive run --dry-run`` checks them; errors name --data, and a file that
    is not an .npz never gets numpy's advice to unpickle it."""
    model, data = bert
    (tmp_path / "bad.npz").write_text("input_ids,attention_mask\n1,2\n")
    line = one_line_error(invoke("optimize", str(model), "--data", str(tmp_path / "bad.npz"), "--dry-run"))
    assert line.startswith("Error: --data: ") and "is not an .npz archive" in line and "numpy.savez" in line
    assert "pickle" not in line and "data_configs" not in line
    with np.load(data) as archive:
        arrays = {key: archive[key] for key in archive.files}
    np.savez(tmp_path / "floats.npz", **{**arrays, "input_ids": arrays["input_ids"].astype(np.float32)})
    line = one_line_error(invoke("optimize", str(model), "--data", str(tmp_path / "floats.npz"), "--dry-run"))
    assert line.startswith("Error: --data: ") and "input 'input_ids' is float32" in line
    np.savez(tmp_path / "rank3.npz", **{**arrays, "input_ids": arrays["input_ids"][..., None]})
    line = one_line_error(invoke("optimize", str(model), "--data", str(tmp_path / "rank3.npz"), "--dry-run"))
    assert line.startswith("Error: --data: ") and "rank 3" in line


def test_text_data_without_the_text_container_names_its_distribution(tmp_path, bert, no_passes) -> None:
    model, _ = bert
    (tmp_path / "s.txt").write_text("hello world\n")
    line = one_line_error(invoke("optimize", str(model), "--data", str(tmp_path / "s.txt")))
    assert "TextDataContainer" in line and "olive-passes-torch" in line and "pip install" in line


def test_without_the_pass_distributions_fusion_is_left_out_and_int8_says_what_to_install(bert, no_passes) -> None:
    model, data = bert
    result = invoke("optimize", str(model), "--data", str(data), "--dry-run")
    line = one_line_error(result)
    assert "--precision: precision int8 needs OnnxDynamicQuantization" in line
    assert "olive-passes-quant; install it with: pip install" in line
    line = one_line_error(invoke("optimize", str(model), "--fusion", "--precision", "fp32", "--dry-run"))
    assert "--fusion: transformer fusion left out" in line and "olive-passes-graph" in line
    line = one_line_error(invoke("optimize", str(model), "--precision", "fp32", "--dry-run"))
    assert "--precision: precision fp32 on a transformer needs OrtTransformersOptimization" in line
    assert "olive-passes-graph; install it with: pip install" in line


@pytest.mark.parametrize(
    ("providers", "words"),
    [
        (
            ["OpenVINOExecutionProvidr"],
            "'OpenVINOExecutionProvidr' is not an execution provider (did you mean 'OpenVINOExecutionProvider'?)",
        ),
        (["CPUExecutionProvider", "CPUExecutionProvidr"], "(did you mean 'CPUExecutionProvider'?)"),
        (["cpuexecutionprovider"], "(names are case-sensitive: use 'CPUExecutionProvider')"),
    ],
)
def test_an_unknown_provider_is_exit_code_2_naming_what_is_available(bert, providers, words) -> None:
    model, _ = bert
    flags = [arg for name in providers for arg in ("--provider", name)]
    line = one_line_error(invoke("optimize", str(model), *flags, "--dry-run"))
    assert line.startswith("Error: --provider: ") and words in line
    assert "available here: " in line and "CPUExecutionProvider" in line.split("available here: ")[1]


def test_quantize_refuses_what_only_optimize_does(bert) -> None:
    model, _ = bert
    assert "nothing to do" in one_line_error(invoke("quantize", "-m", str(model), "--precision", "fp32"))
    assert "supports 'rtn'" in one_line_error(invoke("quantize", "-m", str(model), "--algorithm", "awq"))
    line = one_line_error(invoke("quantize", "-m", str(model), "--fusion", "--dry-run"))
    assert (
        line.startswith("Error: --fusion: olive quantize never rewrites the graph")
        and "olive optimize --fusion" in line
    )


def test_a_hugging_face_folder_without_its_plugin_names_the_distribution(tmp_path) -> None:
    from olive.model.types import new_model_type_registry, use_model_type_registry

    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with use_model_type_registry(new_model_type_registry(entry_points=False)):
        line = one_line_error(invoke("optimize", str(tmp_path), "--dry-run"))
    assert line.startswith("Error: MODEL: ") and "olive-passes-torch" in line and "pip install" in line


def test_a_typo_in_a_local_path_is_not_taken_for_a_hub_id(tmp_path, monkeypatch) -> None:
    save_model(mlp_model(), tmp_path / "model")
    monkeypatch.chdir(tmp_path)
    line = one_line_error(invoke("optimize", "model/modle.onnx", "--dry-run"))
    assert line == (
        "Error: MODEL: 'model/modle.onnx' does not exist: 'model' has no 'modle.onnx' (did you mean 'model.onnx'?); "
        "give an ONNX file or a Hugging Face model folder"
    )
    assert "hub" not in line
    line = one_line_error(invoke("optimize", "modle/model.onnx", "--dry-run"))
    assert "the current folder has no 'modle' (did you mean 'model'?)" in line
    # A name that is not here and reads like a hub id still says how to get it.
    assert "--local-dir" in one_line_error(invoke("optimize", "Qwen/Qwen2.5-0.5B-Instruct", "--dry-run"))


@pytest.mark.parametrize("header", [True, False])
def test_a_numeric_csv_is_answered_with_the_command_that_saves_it_as_npz(tmp_path, no_passes, header) -> None:
    # A float-input model and a table of numbers: samples, not text; nothing asks for a tokenizer or a plugin.
    folder = tmp_path / "my data"
    folder.mkdir()
    model = save_model(mlp_model(in_features=4, hidden=8, out_features=2), folder / "mlp").model_path
    rows = np.random.default_rng(0).standard_normal((40, 4)).astype(np.float32)
    table = folder / "samples.csv"
    lines = [",".join(f"{v:.6f}" for v in row) for row in rows]
    table.write_text("\n".join((["a,b,c,d"] if header else []) + lines) + "\n")
    error = one_line_error(invoke("optimize", str(model), "--data", str(table)))
    assert "'samples.csv' holds numbers" in error and ".npz" in error
    assert "tokenizer" not in error.split("(a .csv")[0] and "olive-passes-torch" not in error
    command = error.split("Save it once as one: ", 1)[1].split("; then give --data ", 1)[0]
    # The command works as pasted into bash (the folder has a space in its name).
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    saved = np.load(folder / "samples.npz")
    np.testing.assert_allclose(saved["input"], rows, atol=1e-6)
    # With that file there, the command shown next writes another, never over it.
    again = one_line_error(invoke("optimize", str(model), "--data", str(table)))
    assert "samples-1.npz" in again and "np.savez('" + str(folder / "samples.npz") + "'" not in again
    # And the file it wrote is data --data takes: the command goes past the data checks.
    result = invoke("optimize", str(model), "--data", str(folder / "samples.npz"), "--dry-run")
    assert "samples.npz" not in (result.stderr or ""), result.output


@pytest.mark.parametrize("mistake", ["cosine_min", "cosine_min<=0.9", "max_abs_diff>=0.1", "top1=1.2x"])
def test_the_keep_an_error_shows_works_as_pasted_into_bash(tmp_path, bert, mistake: str) -> None:
    from olive.optimize.keep import parse_keep

    model, _ = bert
    line = one_line_error(invoke("optimize", str(model), "--keep", mistake))
    shown = re.findall(r"--keep (\S+?)[,;)]?(?:\s|$)", line)
    assert shown, line  # each of these mistakes is answered with a keep to write instead
    for spelled in shown:
        # bash passes it on as one word and creates no file (unquoted, >= and <= redirect).
        done = subprocess.run(
            ["bash", "-c", f"printf '%s\\n' --keep {spelled}"], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.stdout.splitlines() == ["--keep", spelled], (line, done.stdout)
        assert not list(tmp_path.iterdir()), line
        parse_keep(spelled)


def test_keep_equals_reads_at_the_value_or_better() -> None:
    from olive.optimize.keep import Keep, parse_keep

    assert parse_keep("cosine_min=0.97") == Keep("cosine_min", ">=", 0.97)
    assert parse_keep("max_abs_diff=0.01") == Keep("max_abs_diff", "<=", 0.01)
    assert parse_keep("perplexity=1.02x") == Keep("perplexity", "<=", 1.02, relative=True)
    assert parse_keep("top1_agreement=0.98") == parse_keep("top1_agreement>=0.98")


def _peft_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 8}', encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("adapter", "words"),
    [
        ("legal", "--adapter: 'legal' is not NAME=PATH; give each adapter a name and its PEFT folder"),
        ("=ADAPTER", "is not NAME=PATH; give each adapter a name"),
        ("-x=ADAPTER", "the name '-x' names the adapter's file and what a server activates; use letters"),
        ("legal=MISSING", "adapter 'legal' has no folder at "),
        ("legal=EMPTY", "has no adapter_config.json, so it is not a PEFT adapter folder"),
    ],
)
def test_a_bad_adapter_flag_is_exit_code_2_naming_the_adapter_and_the_fix(bert, tmp_path, adapter, words) -> None:
    model, _ = bert
    (tmp_path / "empty").mkdir()
    paths = {
        "ADAPTER": str(_peft_folder(tmp_path / "a")),
        "MISSING": str(tmp_path / "nope"),
        "EMPTY": str(tmp_path / "empty"),
    }
    for key, path in paths.items():
        adapter = adapter.replace(key, path)
    line = one_line_error(invoke("optimize", str(model), "--adapter", adapter, "--dry-run"))
    assert words in line


def test_an_adapter_given_twice_or_for_a_model_that_is_not_a_decoder_is_exit_code_2(bert, tmp_path) -> None:
    model, _ = bert
    a, b = _peft_folder(tmp_path / "a"), _peft_folder(tmp_path / "b")
    twice = one_line_error(invoke("optimize", str(model), "--adapter", f"x={a}", "--adapter", f"x={b}", "--dry-run"))
    assert "a second adapter named 'x'; give each adapter its own name" in twice
    line = one_line_error(invoke("optimize", str(model), "--adapter", f"x={a}", "--dry-run"))
    assert "--adapter: " in line and "is not a decoder" in line and "merge_and_unload" in line
