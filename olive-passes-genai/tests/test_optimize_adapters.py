"""Adapters measured as served and ``olive optimize --adapter``: the metrics with an adapter active (perplexity,
agreement with PyTorch with the same adapter merged, decode speed against no adapter) on a float build that carries
the adapter inputs; one command that builds the base once, writes one adapter file per adapter and prints each
adapter's figures; an adapter that does not fit is exit 2 naming it and the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from olive_passes_genai import metrics

from olive.exceptions import OliveError
from olive.testing.adapters import adapter_text, merged_greedy, save_adapter
from olive.testing.decoders import save_decoder

PROMPT = "The function returns a list of the names"


@pytest.fixture(scope="module")
def adapted(trained_dir, tmp_path_factory):
    """The trained tiny Qwen2, two adapters of it trained on different text, each's own text as a file."""
    root = tmp_path_factory.mktemp("adapted")
    found = {"base": trained_dir}
    for name, seed in (("a", 0), ("b", 1)):
        found[name] = save_adapter(root / name, trained_dir, seed=seed)
        text = root / f"{name}.txt"
        text.write_text(adapter_text(seed).replace("\n\n", "\n") + "\n", encoding="utf-8")
        found[f"{name}_text"] = text
    return found


@pytest.fixture(scope="module")
def float_build(adapted, tmp_path_factory, cpu):
    """ModelBuilder fp32 with extract_adapters: the base with adapter inputs, and a.onnx_adapter, b.onnx_adapter."""
    from olive.model.types import handler_from_config
    from olive.plugins.registry import get_registry

    model = handler_from_config(
        {
            "type": "HfModel",
            "model_path": str(adapted["base"]),
            "adapters": {"a": str(adapted["a"]), "b": str(adapted["b"])},
        }
    )
    model.validate()
    builder = get_registry().get_pass_class("ModelBuilder")(cpu, {"precision": "fp32", "extract_adapters": True})
    return builder.run(model, str(tmp_path_factory.mktemp("float") / "out"))


def _metric(text: Path, **options):
    return {"name": "m", "user_config": {"data_path": str(text), "max_windows": 4, **options}}


def test_extract_adapters_in_the_build_gives_a_base_that_runs_every_adapter_and_none(adapted, float_build):
    import onnx

    folder = Path(float_build.folder)
    assert {"a.onnx_adapter", "b.onnx_adapter", "genai_config.json", "model.onnx"} <= {p.name for p in folder.iterdir()}
    # Nothing of the build with adapter a built in is left beside it.
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]
    graph = onnx.load(str(folder / "model.onnx"), load_external_data=False).graph
    assert len([i for i in graph.input if ".lora_" in i.name]) == 16
    records = float_build.model_attributes["adapters"]
    assert records["a"]["file"] == "a.onnx_adapter" and records["b"]["path"] == str(adapted["b"])


def test_perplexity_with_an_adapter_active_is_that_adapters_and_lower_on_its_own_text(adapted, float_build):
    on_a = _metric(adapted["a_text"])
    none = metrics.perplexity(float_build, on_a, None)["perplexity"]
    with_a = metrics.perplexity(float_build, {**on_a, "user_config": {**on_a["user_config"], "adapter": "a"}}, None)
    with_b = metrics.perplexity(float_build, {**on_a, "user_config": {**on_a["user_config"], "adapter": "b"}}, None)
    # Adapter a learnt this text: it predicts it better than the base and than adapter b, which learnt other text.
    assert with_a["perplexity"] < none and with_a["perplexity"] < with_b["perplexity"], (with_a, with_b, none)


def test_agreement_with_an_adapter_is_against_pytorch_with_that_adapter_merged(adapted, float_build):
    metric = _metric(adapted["a_text"], adapter="a")
    # The float build with a active is PyTorch with a merged, position for position.
    same = metrics.top1_agreement(float_build, metric, None, float_build)["top1_agreement"]
    kl = metrics.next_token_kl(float_build, metric, None, float_build)["next_token_kl"]
    assert same >= 0.995 and kl < 1e-4, (same, kl)
    # Against PyTorch with b merged instead, it disagrees: the reference really is the merged adapter.
    other = metrics.top1_agreement(
        float_build, _metric(adapted["a_text"], adapter="a", adapter_path=str(adapted["b"])), None
    )
    assert other["top1_agreement"] < same
    greedy = metrics.greedy_match(float_build, _metric(adapted["a_text"], adapter="a", num_prompts=3), None)
    assert greedy == {"greedy_match": 1.0, "greedy_prefix": 1.0}


def test_decode_speed_with_an_adapter_is_a_ratio_to_the_same_model_with_none(adapted, float_build):
    metric = _metric(adapted["a_text"], adapter="a", repeat=4, max_new_tokens=8, prompt_tokens=16)
    speed = metrics.decode_tokens_per_s(float_build, metric, None, None)
    # No reference model given: the ratio is still measured, against the base with no adapter, not 1.0 by rule.
    assert speed["ratio_decode_tokens_per_s"] != 1.0 and 0 < speed["ratio_decode_tokens_per_s"] < 10
    assert speed["decode_tokens_per_s"] > 1


def test_an_adapter_the_model_does_not_have_is_an_error_naming_the_ones_it_has(adapted, float_build, qwen2_fp32):
    with pytest.raises(OliveError, match=r"no adapter 'c' \(its adapters: a, b\)"):
        metrics.perplexity(float_build, _metric(adapted["a_text"], adapter="c"), None)
    with pytest.raises(OliveError, match=r"no adapter 'a' \(its adapters: none"):
        metrics.perplexity(qwen2_fp32, _metric(adapted["a_text"], adapter="a"), None)


# --------------------------------------------------------------------------------------------- olive optimize
def _optimize(*args: str):
    from olive.cli.main import cli

    return CliRunner().invoke(cli, ["optimize", *[str(a) for a in args]], catch_exceptions=False)


def _values(metrics_json):
    return {key: entry["value"] for key, entry in metrics_json.items()}


def test_olive_optimize_with_two_adapters_builds_the_base_once_and_writes_and_measures_each(
    adapted, held_out_file, tmp_path
):
    import onnxruntime_genai as og

    out = tmp_path / "out"
    result = _optimize(
        adapted["base"],
        "--adapter",
        f"a={adapted['a']}",
        "--adapter",
        f"b={adapted['b']}",
        "--data",
        held_out_file,
        "-o",
        out,
        "--cache-dir",
        tmp_path / "cache",
    )
    assert result.exit_code == 0, result.output
    said = result.output
    assert "Search: build (ModelBuilder) > quantize (OnnxGuardedInt4)" in said
    assert "2 adapter(s) (a, b): the base is built once" in said
    # The guard held its goal with each adapter active too.
    guard = next(line for line in said.splitlines() if "the guard's own check" in line)
    assert ", with a active " in guard and ", with b active " in guard, guard
    # One int4 base, one adapter file per adapter.
    assert {"a.onnx_adapter", "b.onnx_adapter", "model.onnx", "genai_config.json"} <= {p.name for p in out.iterdir()}
    workflow = json.loads((out / "optimize_workflow.json").read_text())
    assert workflow["input_model"]["adapters"] == {"a": str(adapted["a"]), "b": str(adapted["b"])}

    # What it printed for each adapter is what it measured, against the float build with the same adapter.
    recorded = json.loads((out / "metrics.json").read_text())
    best, fp32 = _values(recorded["best"]), _values(recorded["reference"]["metrics"])
    for name in ("a", "b"):
        ratio = best[f"perplexity@{name}-perplexity"] / fp32[f"perplexity@{name}-perplexity"]
        top1 = best[f"top1_agreement@{name}-top1_agreement"]
        decode = best[f"speed@{name}-ratio_decode_tokens_per_s"]
        assert fp32[f"top1_agreement@{name}-top1_agreement"] >= 0.995  # the float build is PyTorch with it merged
        line = next(line for line in said.splitlines() if line.startswith(f"  {name}: perplexity "))
        assert f"({ratio:.4f}x the float model's with it)" in line
        assert f"top1_agreement {top1:.4f} with PyTorch with it merged" in line
        assert f"decode {decode:.2f}x the tokens/s with no adapter" in line
        assert f"adapters.load('{out / f'{name}.onnx_adapter'}', '{name}')" in said
    # The adapters change what the model computes, each its own way.
    assert best["perplexity@a-perplexity"] != best["perplexity@b-perplexity"] != best["perplexity-perplexity"]

    # Served as printed: the int4 base switches between them per request.
    model = og.Model(str(out))
    adapters = og.Adapters(model)
    for name in ("a", "b"):
        adapters.load(str(out / f"{name}.onnx_adapter"), name)
    ids = [int(i) for i in og.Tokenizer(model).encode(PROMPT)]

    def generate(name):
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(ids) + 8, do_sample=False)
        generator = og.Generator(model, params)
        if name:
            generator.set_active_adapter(adapters, name)
        generator.append_tokens(ids)
        tokens = []
        while not generator.is_done():
            generator.generate_next_token()
            tokens.append(int(generator.get_next_tokens()[0]))
        return tokens

    got = {name: generate(name) for name in (None, "a", "b")}
    assert len({tuple(t) for t in got.values()}) == 3, got
    # int4 keeps the adapter's effect: a's greedy tokens start as PyTorch's with a merged.
    assert got["a"][:2] == merged_greedy(adapted["base"], adapted["a"], ids, 8)[:2]


def test_an_adapter_of_another_base_is_exit_2_naming_the_adapter_and_the_fix(adapted, held_out_file, tmp_path):
    other = save_decoder(tmp_path / "other", "qwen2", hidden_size=96, num_heads=4, num_kv_heads=2)
    wrong = save_adapter(tmp_path / "wrong", other, seed=0, steps=2)
    result = _optimize(
        adapted["base"],
        "--adapter",
        f"a={adapted['a']}",
        "--adapter",
        f"w={wrong}",
        "--data",
        held_out_file,
        "-o",
        tmp_path / "out",
        "--cache-dir",
        tmp_path / "cache",
    )
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith(f"Error: --adapter w={wrong}: adapter 'w' was trained on {other}"), line
    assert "give the adapter with the model it was trained on" in line and "\n" not in line
    assert not (tmp_path / "out").exists()
    # An adapter whose weights are not of the rank its config says: named, with the shapes.
    liar = shutil.copytree(adapted["a"], tmp_path / "liar")
    config = json.loads((liar / "adapter_config.json").read_text())
    config["r"] = 4
    (liar / "adapter_config.json").write_text(json.dumps(config))
    result = _optimize(adapted["base"], "--adapter", f"liar={liar}", "-o", tmp_path / "out", "--dry-run")
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith(f"Error: --adapter liar={liar}: adapter 'liar'") and "rank is 4" in line, line


# --------------------------------------------------------------------------------------------- the int4 guard
def test_the_int4_guards_goal_holds_with_each_adapter_active_on_its_own_text(
    adapted, float_build, held_out_file, tmp_path
):
    from olive_passes_genai.guarded_int4 import OnnxGuardedInt4

    from olive.testing import run_pass

    # Adapter a's own text: the guard checks on its first half, the second half is held out from it.
    lines = adapted["a_text"].read_text().splitlines()
    own, held_out = tmp_path / "a-own.txt", tmp_path / "a-held-out.txt"
    own.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    held_out.write_text("\n".join(lines[len(lines) // 2 :]) + "\n")
    config = {
        "data_path": str(held_out_file),
        "goal_metric": "perplexity_ratio",
        "goal_value": 1.02,
        "window": 96,
        "max_windows": 8,
        "adapter_data_paths": {"a": str(own)},
    }
    out = run_pass(OnnxGuardedInt4, float_build, config, output_dir=tmp_path / "guarded")
    facts = out.model_attributes["guarded_int4"]
    adapters = facts["adapters"]
    assert set(adapters) == {"a", "b"}
    assert adapters["a"]["text"] == f"4 window(s) of '{own}'" and adapters["b"]["text"].endswith("the judging windows")
    # Every candidate the guard checked was checked with each adapter active too, each against the float model with
    # it: values of their own, and the chosen one meets the goal with every adapter.
    assert adapters["a"]["keeps_tried"].keys() == adapters["b"]["keeps_tried"].keys() == facts["keeps_tried"].keys()
    assert adapters["a"]["keeps_tried"] != facts["keeps_tried"] != adapters["b"]["keeps_tried"]
    assert facts["goal"]["held"] and all(a["held_out_value"] <= 1.02 for a in adapters.values())
    # The adapter slots survive: the int4 base with a active keeps the goal on a's text the guard never saw.
    assert {"a.onnx_adapter", "b.onnx_adapter"} <= {p.name for p in out.folder.iterdir()}
    metric = {"name": "m", "user_config": {"data_path": str(held_out), "window": 96, "max_windows": 4, "adapter": "a"}}
    ratio = (
        metrics.perplexity(out, metric, None)["perplexity"]
        / metrics.perplexity(float_build, metric, None)["perplexity"]
    )
    assert ratio <= 1.02, ratio


def test_the_guard_refuses_text_for_an_adapter_the_model_does_not_have(float_build, held_out_file, tmp_path):
    from olive_passes_genai.guarded_int4 import OnnxGuardedInt4

    from olive.exceptions import PassParamError
    from olive.testing import run_pass

    config = {"data_path": str(held_out_file), "window": 96, "max_windows": 4, "adapter_data_paths": {"c": "c.txt"}}
    with pytest.raises(
        PassParamError, match=r"names c, which the model has no adapter file for \(its adapters: a, b\)"
    ):
        run_pass(OnnxGuardedInt4, float_build, config, output_dir=tmp_path)
