"""LoRA adapters end to end: an HfModel with two PEFT adapters goes through ModelBuilder and ExtractAdapters into
one base decoder and one .onnx_adapter per adapter; onnxruntime-genai switching between them generates, token for
token, what PyTorch generates with that adapter merged (and the base's tokens with none). Adapters of another base
or rank are refused before anything is built, naming the adapter, the module and both shapes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import olive_run, write_json

from olive.testing.adapters import merged_greedy, save_adapter
from olive.testing.decoders import save_decoder

PROMPT = "Return the path of the file and the name"
NEW = 10


@pytest.fixture(scope="module")
def lora(tmp_path_factory):
    """A tiny Qwen2 base, two adapters of it trained on different text, and one adapter of another base."""
    root = tmp_path_factory.mktemp("lora")
    base = save_decoder(root / "base", "qwen2")
    other = save_decoder(root / "other", "qwen2", hidden_size=96, num_heads=4, num_kv_heads=2)
    return {
        "base": base,
        "a": save_adapter(root / "a", base, seed=0),
        "b": save_adapter(root / "b", base, seed=2),
        "r4": save_adapter(root / "r4", base, seed=1, rank=4),
        "other": save_adapter(root / "other-adapter", other, seed=0, steps=2),
    }


def _workflow(tmp_path: Path, base: Path, adapters: dict[str, Path], **extract) -> Path:
    return write_json(
        tmp_path / "wf.json",
        {
            "input_model": {
                "type": "HfModel",
                "model_path": str(base),
                "adapters": {k: str(v) for k, v in adapters.items()},
            },
            "passes": {
                "build": {"type": "ModelBuilder", "precision": "fp32"},
                "extract": {"type": "ExtractAdapters", **extract},
            },
            "cache_dir": str(tmp_path / "cache"),
            "output_dir": str(tmp_path / "out"),
        },
    )


def _generate(model, adapters, name, ids):
    import onnxruntime_genai as og

    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + NEW, min_length=len(ids) + NEW, do_sample=False)
    generator = og.Generator(model, params)
    if name is not None:
        generator.set_active_adapter(adapters, name)
    generator.append_tokens(ids)
    out = []
    while not generator.is_done():
        generator.generate_next_token()
        out.append(int(generator.get_next_tokens()[0]))
    return out


@pytest.fixture(scope="module")
def served(lora, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("served")
    result = olive_run(_workflow(tmp, lora["base"], {"a": lora["a"], "b": lora["b"]}))
    assert result.exit_code == 0, result.output
    return tmp / "out"


def test_a_rerun_comes_from_the_cache_with_its_adapter_files_and_a_changed_adapter_does_not(lora, served, tmp_path):
    workflow = served.parent / "wf.json"
    files = {p.name: p.read_bytes() for p in served.glob("*.onnx_adapter")}
    shutil.rmtree(served)
    again = olive_run(workflow)
    assert again.exit_code == 0 and "(2 from cache)" in again.output, again.output
    assert {p.name: p.read_bytes() for p in served.glob("*.onnx_adapter")} == files
    # Another adapter at the same path is another model: nothing of it comes from the cache.
    changed = shutil.copytree(lora["b"], tmp_path / "b")
    save_adapter(tmp_path / "b2", lora["base"], seed=5, steps=3)
    shutil.copyfile(tmp_path / "b2" / "adapter_model.safetensors", changed / "adapter_model.safetensors")
    config = json.loads(workflow.read_text())
    config["input_model"]["adapters"]["b"] = str(changed)
    config["output_dir"] = str(tmp_path / "out")
    result = olive_run(write_json(tmp_path / "wf.json", config))
    assert result.exit_code == 0 and "(0 from cache)" in result.output, result.output
    assert (tmp_path / "out" / "b.onnx_adapter").read_bytes() != files["b.onnx_adapter"]


def test_each_adapter_active_generates_pytorchs_tokens_with_it_merged_and_none_gives_the_base(lora, served):
    import onnxruntime_genai as og

    names = {p.name for p in served.iterdir()}
    assert {"a.onnx_adapter", "b.onnx_adapter", "genai_config.json", "model.onnx", "tokenizer.json"} <= names
    model = og.Model(str(served))  # genai_config.json stays loadable as it is
    ids = [int(i) for i in og.Tokenizer(model).encode(PROMPT)]
    adapters = og.Adapters(model)
    adapters.load(str(served / "a.onnx_adapter"), "a")
    adapters.load(str(served / "b.onnx_adapter"), "b")
    # Switching back and forth in one process: each request gets its own adapter's tokens.
    got = {key: _generate(model, adapters, key, ids) for key in (None, "a", "b")}
    assert _generate(model, adapters, "a", ids) == got["a"]
    assert _generate(model, adapters, None, ids) == got[None]
    assert got[None] == merged_greedy(lora["base"], None, ids, NEW)
    assert got["a"] == merged_greedy(lora["base"], lora["a"], ids, NEW)
    assert got["b"] == merged_greedy(lora["base"], lora["b"], ids, NEW)
    # The adapters really change the model, each its own way.
    assert len({tuple(t) for t in got.values()}) == 3


@pytest.mark.parametrize(
    ("arch", "targets"),
    [
        ("llama", ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")),
        ("mistral", ("q_proj", "v_proj")),
        # Phi-3 packs q/k/v and gate/up in one weight each; the builder unpacks them, and so does the conversion.
        ("phi3", ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")),
    ],
)
def test_every_architecture_and_target_set_generates_pytorchs_tokens_with_each_adapter(arch, targets, tmp_path, cpu):
    import onnxruntime_genai as og

    from olive.model.types import handler_from_config
    from olive.plugins.registry import get_registry

    base = save_decoder(tmp_path / "base", arch, seed=1)
    a = save_adapter(tmp_path / "a", base, seed=0, target_modules=targets)
    b = save_adapter(tmp_path / "b", base, seed=2, target_modules=targets)
    model = handler_from_config({"type": "HfModel", "model_path": str(base), "adapters": {"a": str(a), "b": str(b)}})
    model.validate()
    registry = get_registry()
    built = registry.get_pass_class("ModelBuilder")(cpu, {"precision": "fp32"}).run(model, str(tmp_path / "built"))
    folder = Path(registry.get_pass_class("ExtractAdapters")(cpu, {}).run(built, str(tmp_path / "x")).model_path).parent
    served_model = og.Model(str(folder))
    ids = [int(i) for i in og.Tokenizer(served_model).encode(PROMPT)]
    adapters = og.Adapters(served_model)
    adapters.load(str(folder / "a.onnx_adapter"), "a")
    adapters.load(str(folder / "b.onnx_adapter"), "b")
    got = {key: _generate(served_model, adapters, key, ids) for key in (None, "a", "b")}
    assert got == {key: merged_greedy(base, path, ids, NEW) for key, path in ((None, None), ("a", a), ("b", b))}
    assert len({tuple(t) for t in got.values()}) == 3


def test_the_model_type_records_adapter_inputs_and_files(served):
    config = json.loads((served / "model_config.json").read_text())
    attributes = config["config"]["model_attributes"]
    assert set(attributes["adapters"]) == {"a", "b"}
    assert attributes["adapters"]["a"]["file"] == "a.onnx_adapter" and attributes["adapters"]["b"]["rank"] == 8
    inputs = attributes["adapter_inputs"]
    assert len(inputs) == 16  # 2 layers x q, k, v, o x A, B
    assert inputs["model.layers.0.attn.q_proj.lora_A.MatMul.weight"] == [64, "lora_r"]
    assert inputs["model.layers.1.attn.k_proj.lora_B.MatMul.weight"] == ["lora_r", 32]

    import onnx

    graph = onnx.load(str(served / "model.onnx"), load_external_data=False).graph
    graph_inputs = {i.name for i in graph.input}
    assert set(inputs) <= graph_inputs
    # optional_inputs: each adapter input has an empty default, so the base runs with no adapter.
    defaults = {i.name: list(i.dims) for i in graph.initializer if i.name in inputs}
    assert defaults["model.layers.0.attn.q_proj.lora_A.MatMul.weight"] == [64, 0]
    assert defaults["model.layers.0.attn.q_proj.lora_B.MatMul.weight"] == [0, 64]


@pytest.fixture(scope="module")
def built_a(lora, tmp_path_factory, cpu):
    """ModelBuilder's fp32 build of the base with adapter a only."""
    from olive.model.types import handler_from_config
    from olive.plugins.registry import get_registry

    model = handler_from_config({"type": "HfModel", "model_path": str(lora["base"]), "adapter_path": str(lora["a"])})
    out = tmp_path_factory.mktemp("built-a") / "out"
    return get_registry().get_pass_class("ModelBuilder")(cpu, {"precision": "fp32"}).run(model, str(out))


def test_adapter_files_hold_the_inputs_weights_in_every_save_format(built_a, tmp_path, cpu):
    import onnxruntime as ort
    from safetensors.numpy import load_file

    from olive.plugins.registry import get_registry

    built = built_a
    extract = get_registry().get_pass_class("ExtractAdapters")
    onnx_adapter = extract(cpu, {}).run(built, str(tmp_path / "x"))
    read = ort.AdapterFormat.read_adapter(str(Path(onnx_adapter.model_path).parent / "a.onnx_adapter"))
    reference = {k: v.numpy() for k, v in read.get_parameters().items()}
    assert len(reference) == 16
    npz = extract(cpu, {"save_format": "numpy"}).run(built, str(tmp_path / "n"))
    with np.load(Path(npz.model_path).parent / "a.npz") as arrays:
        assert set(arrays.files) == set(reference)
        assert all(np.array_equal(arrays[k], reference[k]) for k in reference)
    st = extract(cpu, {"save_format": "safetensors"}).run(built, str(tmp_path / "s"))
    tensors = load_file(str(Path(st.model_path).parent / "a.safetensors"))
    assert all(np.array_equal(tensors[k], reference[k]) for k in reference)


def _exit_2_naming(tmp_path, lora, adapters, *said):
    tmp_path.mkdir(parents=True, exist_ok=True)
    result = olive_run(_workflow(tmp_path, lora["base"], adapters))
    assert result.exit_code == 2, result.output
    for text in said:
        assert text in result.output, result.output
    assert not (tmp_path / "out").exists()  # nothing built, nothing written
    return result


def test_an_adapter_of_another_base_is_exit_2_naming_the_adapter_the_module_and_both_shapes(lora, tmp_path):
    # The base it names is a local folder with another config: said first, before any shape.
    _exit_2_naming(
        tmp_path, lora, {"a": lora["a"], "other": lora["other"]}, "adapter 'other'", "hidden_size 96 there, 64 here"
    )
    # A hub name (nothing local to compare): the shapes tell.
    hub = shutil.copytree(lora["other"], tmp_path / "hub-adapter")
    config = json.loads((hub / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = "someone/another-model"
    (hub / "adapter_config.json").write_text(json.dumps(config))
    _exit_2_naming(
        tmp_path / "hub",
        lora,
        {"other": hub},
        "adapter 'other'",
        "model.layers.0.self_attn.k_proj",
        "lora_A is [8, 96]",
        "[32, 64]",
        "[8, 64]",
    )


def test_an_adapter_whose_rank_is_not_its_configs_is_exit_2(lora, tmp_path):
    liar = shutil.copytree(lora["r4"], tmp_path / "liar")
    config = json.loads((liar / "adapter_config.json").read_text())
    config["r"] = 8
    (liar / "adapter_config.json").write_text(json.dumps(config))
    _exit_2_naming(tmp_path / "run", lora, {"liar": liar}, "adapter 'liar'", "lora_A is [4, 64]", "rank is 8")


def test_a_fixed_rank_base_refuses_an_adapter_of_another_rank_before_writing(lora, tmp_path, cpu):
    from olive.exceptions import PassRunError
    from olive.model.types import handler_from_config
    from olive.plugins.registry import get_registry

    model = handler_from_config(
        {"type": "HfModel", "model_path": str(lora["base"]), "adapters": {"a": str(lora["a"]), "r4": str(lora["r4"])}}
    )
    model.validate()  # both are adapters of this base
    built = get_registry().get_pass_class("ModelBuilder")(cpu, {"precision": "fp32"}).run(model, str(tmp_path / "b"))
    extract = get_registry().get_pass_class("ExtractAdapters")
    with pytest.raises(PassRunError) as caught:
        extract(cpu, {"dynamic_lora_r": False}).run(built, str(tmp_path / "x"))
    said = str(caught.value)
    assert "adapter 'r4'" in said and "[64, 4]" in said and "[64, 8]" in said and "dynamic_lora_r" in said
    assert not (tmp_path / "x").exists() or not list((tmp_path / "x").glob("*.onnx_adapter"))
    # With the rank axis free (the default), the same two adapters fit one base.
    out = extract(cpu, {}).run(built, str(tmp_path / "y"))
    assert out.model_attributes["adapters"]["r4"]["rank"] == 4


def test_make_inputs_false_keeps_the_built_in_adapter_and_still_writes_the_files(lora, built_a, tmp_path, cpu):
    import onnx
    import onnxruntime_genai as og

    from olive.plugins.registry import get_registry

    out = (
        get_registry().get_pass_class("ExtractAdapters")(cpu, {"make_inputs": False}).run(built_a, str(tmp_path / "x"))
    )
    folder = Path(out.model_path).parent
    graph = onnx.load(out.model_path, load_external_data=False).graph
    assert not [i.name for i in graph.input if "lora" in i.name]
    assert (folder / "a.onnx_adapter").is_file() and out.model_attributes["adapter_inputs"] == {}
    model = og.Model(str(folder))
    ids = [int(i) for i in og.Tokenizer(model).encode(PROMPT)]
    assert _generate(model, None, None, ids) == merged_greedy(lora["base"], lora["a"], ids, NEW)


def test_a_model_without_lora_weights_is_a_clear_error(qwen2_fp32, tmp_path, cpu):
    from olive.exceptions import PassRunError
    from olive.plugins.registry import get_registry

    with pytest.raises(PassRunError, match="carries no LoRA weights"):
        get_registry().get_pass_class("ExtractAdapters")(cpu, {}).run(qwen2_fp32, str(tmp_path / "x"))


def test_the_test_kit_adapter_is_seeded_and_changes_the_base(lora, tmp_path):
    again = save_adapter(tmp_path / "again", lora["base"], seed=0)
    assert (again / "adapter_model.safetensors").read_bytes() == (lora["a"] / "adapter_model.safetensors").read_bytes()
    ids = [5, 17, 33, 80, 120, 7]
    assert merged_greedy(lora["base"], lora["a"], ids, 8) != merged_greedy(lora["base"], None, ids, 8)


def _convert(*args):
    from click.testing import CliRunner

    from olive.cli.main import cli

    return CliRunner().invoke(cli, ["convert-adapters", *map(str, args)], catch_exceptions=False)


def test_convert_adapters_writes_another_adapter_for_the_base_without_rebuilding_it(lora, built_a, tmp_path, cpu):
    import onnxruntime_genai as og

    from olive.plugins.registry import get_registry

    base = Path(get_registry().get_pass_class("ExtractAdapters")(cpu, {}).run(built_a, str(tmp_path / "x")).model_path)
    folder = base.parent
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    result = _convert("-a", lora["b"], "-o", tmp_path / "b", "--base_model", folder)
    assert result.exit_code == 0, result.output
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before  # the base is not touched
    model = og.Model(str(folder))
    ids = [int(i) for i in og.Tokenizer(model).encode(PROMPT)]
    adapters = og.Adapters(model)
    adapters.load(str(folder / "a.onnx_adapter"), "a")
    adapters.load(str(tmp_path / "b.onnx_adapter"), "b")
    assert _generate(model, adapters, "b", ids) == merged_greedy(lora["base"], lora["b"], ids, NEW)
    assert _generate(model, adapters, "a", ids) == merged_greedy(lora["base"], lora["a"], ids, NEW)
    # The file is never overwritten.
    again = _convert("-a", lora["b"], "-o", tmp_path / "b.onnx_adapter", "--base_model", folder)
    assert again.exit_code == 2 and "exists" in again.output


def test_convert_adapters_checks_names_and_shapes_against_the_base_before_writing(lora, built_a, tmp_path, cpu):
    from olive.plugins.registry import get_registry

    folder = Path(
        get_registry().get_pass_class("ExtractAdapters")(cpu, {}).run(built_a, str(tmp_path / "x")).model_path
    ).parent
    other = _convert("-a", lora["other"], "-o", tmp_path / "other", "--base_model", folder)
    assert other.exit_code == 2
    assert "model.layers.0.attn.k_proj.lora_A.MatMul.weight" in other.output and "[96, 8]" in other.output
    assert "[64, 'lora_r']" in other.output
    mlp = save_adapter(tmp_path / "mlp", lora["base"], seed=3, steps=2, target_modules=("q_proj", "up_proj"))
    wrong = _convert("-a", mlp, "-o", tmp_path / "mlp-file", "--base_model", folder)
    assert wrong.exit_code == 2 and "no adapter input model.layers.0.mlp.up_proj.lora_A.MatMul.weight" in wrong.output
    quantized = _convert("-a", lora["b"], "-o", tmp_path / "q", "--base_model", folder, "--quantize_int4")
    assert quantized.exit_code == 2 and "MatMulNBits" in quantized.output
    assert not list(tmp_path.glob("*.onnx_adapter"))
    # Without a base: Olive's command line as it is, int4 included, with a line saying nothing was checked.
    unchecked = _convert("-a", lora["b"], "-o", tmp_path / "plain", "--quantize_int4", "--adapter_format", "numpy")
    assert unchecked.exit_code == 0 and "not checked" in unchecked.output
    with np.load(tmp_path / "plain.npz") as arrays:
        assert "model.layers.0.attn.q_proj.lora_A.MatMul.quant.weight" in arrays.files
        assert "model.layers.0.attn.q_proj.lora_A.MatMul.quant.scale" in arrays.files


def test_an_int4_build_quantizes_the_base_and_keeps_the_adapter_slots_float(lora, served, tmp_path, cpu):
    import onnx
    import onnxruntime as ort
    import onnxruntime_genai as og

    from olive.model.types import handler_from_config
    from olive.plugins.registry import get_registry

    model = handler_from_config(
        {"type": "HfModel", "model_path": str(lora["base"]), "adapters": {"a": str(lora["a"]), "b": str(lora["b"])}}
    )
    registry = get_registry()
    built = registry.get_pass_class("ModelBuilder")(cpu, {"precision": "int4"}).run(model, str(tmp_path / "int4"))
    out = registry.get_pass_class("ExtractAdapters")(cpu, {}).run(built, str(tmp_path / "x"))
    graph = onnx.load(out.model_path, load_external_data=False).graph
    nbits = [n.name for n in graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) >= 9 and not [n for n in nbits if "lora" in n]  # the base in int4, no adapter MatMul
    assert len([n for n in graph.node if n.op_type == "MatMul" and "/lora_" in n.name]) == 16
    # The adapter files are the fp32 build's, weight for weight: the adapters stay what they were trained to be.
    for name in ("a", "b"):
        ours = ort.AdapterFormat.read_adapter(
            str(Path(out.model_path).parent / f"{name}.onnx_adapter")
        ).get_parameters()
        fp32 = ort.AdapterFormat.read_adapter(str(served / f"{name}.onnx_adapter")).get_parameters()
        assert set(ours) == set(fp32) and all(np.array_equal(ours[k].numpy(), fp32[k].numpy()) for k in fp32)
    served_model = og.Model(str(Path(out.model_path).parent))
    ids = [int(i) for i in og.Tokenizer(served_model).encode(PROMPT)]
    adapters = og.Adapters(served_model)
    adapters.load(str(Path(out.model_path).parent / "a.onnx_adapter"), "a")
    assert _generate(served_model, adapters, "a", ids) != _generate(served_model, adapters, None, ids)


def test_lora_matmuls_quantized_by_another_pass_are_named_with_the_order_that_works(built_a, tmp_path, cpu):
    from olive.exceptions import PassRunError
    from olive.plugins.registry import get_registry

    registry = get_registry()
    quantized = registry.get_pass_class("OnnxHqqQuantization")(cpu, {"block_size": 32}).run(
        built_a, str(tmp_path / "q")
    )
    with pytest.raises(PassRunError, match="LoRA MatMuls quantized") as caught:
        registry.get_pass_class("ExtractAdapters")(cpu, {}).run(quantized, str(tmp_path / "x"))
    assert "run ExtractAdapters before any other quantizing pass" in str(caught.value)


def test_k_quant_on_a_served_base_quantizes_the_base_and_leaves_the_adapter_inputs_and_their_matmuls_float(
    served, tmp_path
):
    import onnx
    import onnxruntime_genai as og
    from olive_passes_genai.genai_model import GenAIModelHandler

    from olive.testing import run_pass
    from olive_passes_quant.k_quant import OnnxKQuantQuantization

    source = GenAIModelHandler(str(served))
    out = run_pass(OnnxKQuantQuantization, source, {"block_size": 32}, output_dir=tmp_path)
    before = onnx.load(source.model_path, load_external_data=False).graph
    graph = onnx.load(out.model_path, load_external_data=False).graph
    lora_inputs = {i.name for i in before.input if "lora" in i.name}
    assert lora_inputs and lora_inputs <= {i.name for i in graph.input}
    nbits = [n.name for n in graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) >= 9 and not [n for n in nbits if "lora" in n]
    assert sorted(n.name for n in graph.node if n.op_type == "MatMul" and "/lora_" in n.name) == sorted(
        n.name for n in before.node if n.op_type == "MatMul" and "/lora_" in n.name
    )
    for name in ("a", "b"):  # the adapter files go with the folder
        (out.folder / f"{name}.onnx_adapter").write_bytes((served / f"{name}.onnx_adapter").read_bytes())
    model = og.Model(str(out.folder))
    ids = [int(i) for i in og.Tokenizer(model).encode(PROMPT)]
    adapters = og.Adapters(model)
    adapters.load(str(out.folder / "a.onnx_adapter"), "a")
    assert _generate(model, adapters, "a", ids) != _generate(model, adapters, None, ids)
