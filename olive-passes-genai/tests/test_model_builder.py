"""ModelBuilder on tiny decoder folders: onnxruntime-genai runs the output folder as it is and generates PyTorch's
greedy tokens; int4 writes MatMulNBits, and int4/int8 write the builder's own file byte for byte while reading the
float weights from disk; what the builder cannot do is a config error (exit 2) before any build."""

from __future__ import annotations

import json
import shutil

import onnx
import pytest
from conftest import build, genai_greedy, olive_run, torch_greedy, write_json

from olive.testing.decoders import save_decoder

PROMPT = "Return the path of the file and the name"


@pytest.mark.parametrize("arch", ["llama", "qwen2", "phi3", "mistral"])
def test_fp32_folder_runs_in_onnxruntime_genai_and_generates_pytorchs_greedy_tokens(arch, tmp_path, cpu):
    folder = save_decoder(tmp_path / "hf", arch, seed=1)
    out = build(folder, tmp_path / "out", cpu, precision="fp32")
    assert type(out).__name__ == "GenAIModelHandler"
    names = {rel for _, rel in out.folder_files()}
    assert {"model.onnx", "model.onnx.data", "genai_config.json", "tokenizer.json"} <= names
    ids, tokens = genai_greedy(out.folder, PROMPT, 12)
    assert len(tokens) == 12
    assert tokens == torch_greedy(folder, ids, 12)


def test_int4_writes_matmulnbits_is_smaller_and_generates(qwen2_dir, qwen2_fp32, tmp_path, cpu):
    out = build(qwen2_dir, tmp_path / "int4", cpu, precision="int4", int4_block_size=32, int4_accuracy_level=4)
    graph = onnx.load(out.model_path, load_external_data=False).graph
    nbits = [n for n in graph.node if n.op_type == "MatMulNBits"]
    assert len(nbits) >= 9  # 2 layers x (qkv, o, gate/up, down) + lm_head
    assert all({a.name: a.i for a in n.attribute}["block_size"] == 32 for n in nbits)
    assert all({a.name: a.i for a in n.attribute}["accuracy_level"] == 4 for n in nbits)
    assert out.size_on_disk < 0.6 * qwen2_fp32.size_on_disk
    _, tokens = genai_greedy(out.folder, PROMPT, 8)
    assert len(tokens) == 8
    assert out.model_attributes["genai"]["builder_options"]["block_size"] == 32


def test_search_settings_are_merged_into_genai_config(qwen2_dir, tmp_path, cpu):
    out = build(qwen2_dir, tmp_path / "out", cpu, precision="fp32", search={"max_length": 77, "top_k": 3})
    search = json.loads((out.folder / "genai_config.json").read_text())["search"]
    assert search["max_length"] == 77 and search["top_k"] == 3
    assert "num_beams" in search  # the builder's own settings are kept


def test_the_folders_content_hash_covers_genai_config_and_tokenizer(qwen2_fp32, tmp_path):
    from olive_passes_genai.genai_model import GenAIModelHandler

    copy = shutil.copytree(qwen2_fp32.folder, tmp_path / "copy")
    assert GenAIModelHandler(copy).content_hash() == qwen2_fp32.content_hash()
    config = json.loads((copy / "genai_config.json").read_text())
    config["search"]["max_length"] = 5
    (copy / "genai_config.json").write_text(json.dumps(config))
    assert GenAIModelHandler(copy).content_hash() != qwen2_fp32.content_hash()


def _workflow(tmp_path, folder, **params):
    return write_json(
        tmp_path / "wf.json",
        {
            "input_model": {"type": "HfModel", "model_path": str(folder)},
            "passes": {"build": {"type": "ModelBuilder", **params}},
            "cache_dir": str(tmp_path / "cache"),
            "output_dir": str(tmp_path / "out"),
        },
    )


def _gpt2(folder):
    import transformers

    from olive.testing.decoders import save_tokenizer

    tokenizer = save_tokenizer(folder, 256)
    config = transformers.GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=2, n_positions=64)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    ("case", "params", "owner", "says"),
    [
        ("fp16", {"precision": "fp16"}, "passes.build", "param 'precision' is fp16, which CPUExecutionProvider cannot"),
        ("bf16", {"precision": "bf16"}, "passes.build", "on it use fp32, int8, int4"),
        ("block", {"precision": "int4", "int4_block_size": 48}, "passes.build", "use one of 16, 32, 64, 128, 256"),
        ("arch", {"precision": "fp32"}, "input_model.model_path", "GPT2LMHeadModel, which the installed"),
        ("tokenizer", {"precision": "fp32"}, "input_model.model_path", "has no tokenizer (tokenizer.json)"),
    ],
)
def test_what_the_builder_cannot_do_exits_2_before_anything_is_built(qwen2_dir, tmp_path, case, params, owner, says):
    folder = qwen2_dir
    if case == "arch":
        folder = _gpt2(tmp_path / "gpt2")
    elif case == "tokenizer":
        folder = shutil.copytree(qwen2_dir, tmp_path / "no-tokenizer")
        (folder / "tokenizer.json").unlink()
    config = _workflow(tmp_path, folder, **params)
    for args in ((), ("--dry-run",)):
        result = olive_run(config, *args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"Error: {owner}"), result.stderr
        assert says in " ".join(result.stderr.split()), result.stderr
    if case == "arch":
        assert "Qwen2ForCausalLM" in result.stderr and "LlamaForCausalLM" in result.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_the_builders_messages_go_to_our_logger_not_to_the_terminal(qwen2_dir, tmp_path, cpu, caplog, capfd):
    import logging

    caplog.set_level(logging.DEBUG, logger="olive_passes_genai.model_builder")
    build(qwen2_dir, tmp_path / "out", cpu, precision="int4")
    printed = capfd.readouterr()
    assert "Reading layer" not in printed.out + printed.err
    assert "quantize" not in printed.out + printed.err
    ours = [r.getMessage() for r in caplog.records if r.name == "olive_passes_genai.model_builder"]
    assert any("Reading layer 0" in m for m in ours) and any("built in" in m for m in ours)


def test_the_builders_progress_reaches_the_runs_progress_bar(qwen2_dir, tmp_path):
    import olive
    from olive.passes import progress

    seen: list[progress.PassProgress] = []
    workflow = {
        "input_model": {"type": "HfModel", "model_path": str(qwen2_dir)},
        "passes": {"build": {"type": "ModelBuilder", "precision": "int4"}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    # The bar of `olive run` listens while the search runs and passes every report on to the listener before it.
    with progress.listening(seen.append):
        output = olive.run(workflow, show_progress=True)
    assert output.best is not None and progress.listener() is None
    layers = json.loads((qwen2_dir / "config.json").read_text())["num_hidden_layers"]
    reports = [e for e in seen if e.owner == "ModelBuilder"]
    assert reports and {e.total for e in reports} == {layers + 1}
    done = [e.done for e in reports]
    assert done == sorted(done) and done[-1] == layers + 1
    assert [e.what for e in reports][-1] == "saved" and "layers" in {e.what for e in reports}


def test_the_builders_progress_is_dropped_where_no_bar_listens(qwen2_dir, tmp_path, cpu, capfd):
    from olive.passes import progress

    assert progress.listener() is None
    result = build(qwen2_dir, tmp_path / "out", cpu, precision="fp32")
    assert (result.folder / "genai_config.json").exists()
    printed = capfd.readouterr()
    assert "Reading layer" not in printed.out + printed.err


def _builders_own(folder, out, precision, options):
    """onnxruntime-genai's builder called directly, as its command line calls it: its own quantizing step."""
    import contextlib
    import io

    from onnxruntime_genai.models import builder

    pairs = [f"{key}={value}" for key, value in {"filename": "model.onnx", **options}.items()]
    scratch = out.parent / f"{out.name}-cache"
    with contextlib.redirect_stdout(io.StringIO()):
        parsed = builder.parse_extra_options(None, str(folder), str(out), precision, "cpu", str(scratch), pairs)
        builder.create_model(None, str(folder), str(out), precision, "cpu", str(scratch), **parsed)


def _nbits(path):
    graph = onnx.load(path, load_external_data=False).graph
    return {
        n.name: {a.name: a.i for a in n.attribute}
        for n in graph.node
        if n.op_type in ("MatMulNBits", "GatherBlockQuantized")
    }


@pytest.mark.parametrize(
    ("model", "precision", "params", "options", "bits"),
    [
        ("trained", "int4", {}, {}, {4}),
        (
            "trained",
            "int4",
            {"int4_algo_config": "k_quant_mixed", "int4_is_symmetric": False, "int4_block_size": 32},
            {"algo_config": "k_quant_mixed", "is_symmetric": "false", "block_size": "32"},
            {4, 8},  # the LM head and the sensitive layers' qkv/down projections at 8 bits
        ),
        ("trained", "int8", {}, {}, {8}),
        ("tied", "int4", {"int4_algo_config": "rtn"}, {"algo_config": "rtn"}, {4}),
    ],
    ids=["int4-defaults", "int4-k_quant_mixed-asymmetric", "int8", "int4-rtn-tied-embeddings"],
)
def test_quantized_builds_are_the_builders_own_file_byte_for_byte(
    trained_dir, tmp_path, cpu, caplog, model, precision, params, options, bits
):
    import logging

    from onnxruntime_genai.models import builder

    folder = trained_dir if model == "trained" else save_decoder(tmp_path / "tied", tied_embeddings=True)
    caplog.set_level(logging.DEBUG, logger="olive_passes_genai.model_builder")
    ours = build(folder, tmp_path / "ours", cpu, precision=precision, **params).folder
    # The pass read the weights from its float copy on disk, and left the builder's class as it found it.
    assert any("float graph streamed to" in r.getMessage() for r in caplog.records)
    assert not hasattr(vars(builder.Model)["to_nbits"], "__wrapped__")
    own = tmp_path / "own"
    _builders_own(folder, own, precision, options)

    nodes = _nbits(own / "model.onnx")
    assert nodes == _nbits(ours / "model.onnx")
    matmuls = [a for a in nodes.values() if "K" in a]
    assert len(matmuls) == 11  # 2 layers x (qkv, o, gate, up, down) + lm_head
    assert {a["bits"] for a in matmuls} == bits
    if model == "tied":
        assert any("GatherBlockQuantized" in name for name in nodes)
    for name in ("model.onnx", "model.onnx.data", "genai_config.json", "tokenizer.json"):
        assert (ours / name).read_bytes() == (own / name).read_bytes(), name
    assert sorted(p.name for p in ours.iterdir()) == sorted(p.name for p in own.iterdir())
    assert genai_greedy(ours, PROMPT, 10) == genai_greedy(own, PROMPT, 10)


def test_a_builder_without_its_quantizing_method_builds_int4_its_own_way(qwen2_dir, tmp_path, cpu, caplog, monkeypatch):
    import logging

    from onnxruntime_genai.models import builder

    # Another builder version: no Model.to_nbits to run from disk; its own int4 step runs untouched.
    monkeypatch.setattr(builder, "Model", type("Model", (), {}))
    caplog.set_level(logging.DEBUG, logger="olive_passes_genai.model_builder")
    out = build(qwen2_dir, tmp_path / "int4", cpu, precision="int4")
    messages = [r.getMessage() for r in caplog.records]
    assert any("has no Model.to_nbits" in m for m in messages)
    assert not any("float graph streamed" in m for m in messages)
    assert len(_nbits(out.model_path)) == 11
    assert sorted(p.name for p in tmp_path.iterdir()) == ["int4"]  # the build's scratch folder is gone


def test_a_builder_failure_names_where_it_stopped_the_settings_and_what_to_change(tmp_path, cpu):
    import json

    import pytest

    from olive.exceptions import PassRunError
    from olive.testing.decoders import save_decoder

    folder = save_decoder(tmp_path / "model", "qwen2")
    config = json.loads((folder / "config.json").read_text())
    config["hidden_act"] = "no_such_activation"  # transformers cannot build the model to load the weights into
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(PassRunError) as caught:
        build(folder, tmp_path / "out", cpu, precision="int4", int4_block_size=64)
    message = str(caught.value)
    assert message.startswith("pass ModelBuilder: onnxruntime-genai's builder failed on")
    assert "while loading the checkpoint (precision int4, execution provider cpu, int4_block_size 64" in message
    assert "no_such_activation" in message and "check that transformers' from_pretrained loads the folder" in message
    assert "-v shows the builder's traceback" in message and caught.value.__cause__ is not None
