"""``olive optimize`` on a decoder folder, offline: the trained tiny Qwen2 and a text file in, an int4 folder out that
onnxruntime-genai serves, its perplexity on text the guard never fit on within the keep; the text a pass or a metric
reads for its part of a split data config."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner
from conftest import genai_greedy
from olive_passes_genai.text_windows import read_samples

from olive.data.config import DataConfig
from olive.data.split import FIT, JUDGE

PROMPT = "The function returns a list of the names"


def _optimize(*args: str):
    from olive.cli.main import cli

    return CliRunner().invoke(cli, ["optimize", *args], catch_exceptions=False)


def _values(metrics):
    return {key: entry["value"] for key, entry in metrics.items()}


def test_olive_optimize_builds_a_guarded_int4_decoder_judged_on_text_the_guard_never_saw(
    trained_dir, held_out_file, tmp_path
):
    out, cache = tmp_path / "out", tmp_path / "cache"
    result = _optimize(str(trained_dir), "--data", str(held_out_file), "-o", str(out), "--cache-dir", str(cache))
    assert result.exit_code == 0, result.output
    said = result.output
    assert "Search: build (ModelBuilder) > quantize (OnnxGuardedInt4)" in said
    assert "the guard fits on its half, perplexity and agreement are measured on the other" in said
    assert "decode: " in said and "x the float model's tokens/s (the two timed in alternating rounds)" in said
    assert "perplexity: " in said and "on held-out text (the half of --data the guard did not fit on)" in said
    assert "the guard's own check on the text it fit on: perplexity_ratio" in said

    # What it printed is what it measured: the int4 model's perplexity within 2% of the float build's.
    recorded = json.loads((out / "metrics.json").read_text())
    best, fp32 = _values(recorded["best"]), _values(recorded["reference"]["metrics"])
    ratio = best["perplexity-perplexity"] / fp32["perplexity-perplexity"]
    assert ratio <= 1.02, (best, fp32)
    assert f"({ratio:.4f}x the float model's; keep <= 1.02x)" in said
    assert best["size-bytes"] < 0.6 * fp32["size-bytes"]
    assert best["speed-ratio_decode_tokens_per_s"] > 0

    # The guard fit on the fitting part of the data config the metrics judge on.
    footprint = (out / "footprint.json").read_text()
    assert "from data config 'data' (its fit part)" in footprint

    # The folder is served as it is.
    _, tokens = genai_greedy(out, PROMPT, 8)
    assert len(tokens) == 8
    assert {"genai_config.json", "tokenizer.json", "model.onnx"} <= {p.name for p in out.iterdir()}

    # The workflow it wrote reruns from the cache.
    workflow = out / "optimize_workflow.json"
    assert json.loads(workflow.read_text())["passes"]["quantize"]["type"] == "OnnxGuardedInt4"
    from olive.cli.main import cli

    again = CliRunner().invoke(cli, ["run", str(workflow)], catch_exceptions=False)
    assert again.exit_code == 0 and "(2 from cache)" in again.output, again.output


def test_without_data_olive_optimize_says_what_agreement_on_random_tokens_is_worth(qwen2_dir, tmp_path):
    out = tmp_path / "out"
    result = _optimize(str(qwen2_dir), "-o", str(out), "--cache-dir", str(tmp_path / "cache"))
    assert result.exit_code == 0, result.output
    assert "quantize (OnnxKQuantQuantization)" in result.output
    assert "agreement on random token ids says little about text; give --data FILE" in result.output
    assert "  top1_agreement: " in result.output and "on random token ids (no --data)" in result.output
    # Perplexity on random tokens would be a number about nothing: none is measured.
    assert "  perplexity: " not in result.output


def test_without_olive_passes_genai_a_decoder_is_one_exit_2_line_naming_it(qwen2_dir, held_out_file, tmp_path):
    env = {**os.environ, "OLIVE_DISABLE_PLUGINS": "olive-passes-genai"}
    command = [sys.executable, "-m", "olive.cli.main", "optimize", str(qwen2_dir), "--data", str(held_out_file)]
    done = subprocess.run([*command, "-o", str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert "is a decoder" in lines[0] and "ModelBuilder is offered by olive-passes-genai; install it with" in lines[0]
    assert not (tmp_path / "o").exists()


def test_a_split_text_config_gives_a_pass_and_a_metric_disjoint_halves_of_its_lines(qwen2_dir, tmp_path):
    lines = 40
    from olive.data.containers import bind_input_model

    path = tmp_path / "text.txt"
    path.write_text("".join(f"sample {i}: " + "word " * (i % 7 + 1) + "\n" for i in range(lines)))
    config = DataConfig.from_json(
        {"name": "text", "type": "TextDataContainer", "load_dataset_config": {"data_path": str(path)}}
    )
    config = bind_input_model(config, str(qwen2_dir))
    whole = read_samples(config, None, "test")
    fit = read_samples(config.for_role(FIT), None, "test")
    judge = read_samples(config.for_role(JUDGE), None, "test")
    assert len(whole) == lines and len(fit) == len(judge) == lines // 2
    assert not set(fit) & set(judge) and sorted(fit + judge) == sorted(whole)
    # The same rule every time: a rerun is served from the cache.
    assert read_samples(config.for_role(FIT), None, "test") == fit
