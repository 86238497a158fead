"""Decoders at the shapes and in the files real checkpoints come in: MLP widths that give an odd number of int4 blocks
per column (352 at block size 32, 576 at 64, a 64-wide attention at 128: one partial block), bf16 and fp16 weights,
sharded safetensors, tied embeddings. Every int4 pass quantizes every MatMul of each, onnxruntime-genai serves the
result, and ``olive optimize`` takes each folder end to end."""

from __future__ import annotations

import json

import onnx
import pytest
from click.testing import CliRunner
from conftest import build, genai_greedy
from olive_passes_genai.guarded_int4 import OnnxGuardedInt4

from olive.testing import run_pass
from olive.testing.decoders import save_decoder
from olive_passes_quant.gptq import OnnxGptqQuantization
from olive_passes_quant.hqq import OnnxHqqQuantization
from olive_passes_quant.k_quant import OnnxKQuantQuantization

#: name -> (save_decoder arguments, the block size at which the MLP's columns have an odd number of blocks)
SHAPES = {
    "llama-mlp352": ({"arch": "llama", "intermediate_size": 352}, 32),
    "qwen2-mlp576-bf16-sharded": (
        {"arch": "qwen2", "intermediate_size": 576, "dtype": "bfloat16", "max_shard_size": "100KB"},
        64,
    ),
    "llama-mlp960-fp16-tied": (
        {"arch": "llama", "intermediate_size": 960, "dtype": "float16", "tied_embeddings": True},
        128,
    ),
}


@pytest.fixture(scope="module", params=list(SHAPES))
def shaped(request, tmp_path_factory, cpu):
    arguments, block = SHAPES[request.param]
    folder = save_decoder(tmp_path_factory.mktemp(request.param) / "model", **arguments)
    fp32 = build(folder, tmp_path_factory.mktemp(f"{request.param}-fp32") / "out", cpu, precision="fp32")
    return request.param, folder, fp32, block


def _blocks(model) -> dict[str, tuple[int, int]]:
    graph = onnx.load(model.model_path, load_external_data=False).graph
    found = {}
    for node in graph.node:
        if node.op_type == "MatMulNBits":
            attrs = {a.name: a.i for a in node.attribute}
            found[node.name] = (attrs["bits"], -(-attrs["K"] // attrs["block_size"]))
    return found


def _matmuls(model) -> int:
    return [n.op_type for n in onnx.load(model.model_path, load_external_data=False).graph.node].count("MatMul")


def test_the_folders_have_the_files_of_real_checkpoints(shaped):
    name, folder, _, _ = shaped
    config = json.loads((folder / "config.json").read_text())
    if "bf16" in name:
        assert config["dtype"] == "bfloat16"
        assert (folder / "model.safetensors.index.json").is_file()
        assert len(list(folder.glob("model-*-of-*.safetensors"))) > 1
    if "tied" in name:
        assert config["tie_word_embeddings"] is True and config["dtype"] == "float16"


@pytest.mark.parametrize(
    ("cls", "config"),
    [
        (OnnxKQuantQuantization, {}),
        (OnnxKQuantQuantization, {"bits": 8}),
        (OnnxHqqQuantization, {}),
    ],
)
def test_every_matmul_quantizes_whatever_its_number_of_blocks(shaped, cls, config, tmp_path):
    _, _, fp32, block = shaped
    out = run_pass(cls, fp32, {"block_size": block, **config}, output_dir=tmp_path)
    blocks = _blocks(out)
    assert len(blocks) == _matmuls(fp32) and _matmuls(out) == 0
    # The widths were chosen so: some column has an odd number of blocks, which onnxruntime's own packing refuses.
    assert any(count % 2 for _, count in blocks.values()), blocks
    _, tokens = genai_greedy(out.folder, "The function returns", 6)
    assert len(tokens) == 6


def test_asymmetric_gptq_quantizes_odd_block_counts(shaped, held_out_file, tmp_path):
    _, _, fp32, block = shaped
    config = {"block_size": block, "is_symmetric": False, "data_path": str(held_out_file), "max_windows": 2}
    out = run_pass(OnnxGptqQuantization, fp32, config, output_dir=tmp_path)
    assert len(_blocks(out)) == _matmuls(fp32)


def test_the_int4_guard_runs_on_every_shape(shaped, held_out_file, tmp_path):
    _, _, fp32, block = shaped
    config = {"block_size": block, "data_path": str(held_out_file), "window": 64, "max_windows": 4, "goal_value": 0.9}
    out = run_pass(OnnxGuardedInt4, fp32, config, output_dir=tmp_path)
    facts = out.model_attributes["guarded_int4"]
    assert facts["matmuls"] == _matmuls(fp32) == len(_blocks(out))
    _, tokens = genai_greedy(out.folder, "The function returns", 6)
    assert len(tokens) == 6


def test_olive_optimize_takes_each_folder_end_to_end(shaped, held_out_file, tmp_path):
    from olive.cli.main import cli

    _, folder, _, block = shaped
    out = tmp_path / "out"
    args = [str(folder), "--data", str(held_out_file), "--block-size", str(block), "--max-length", "64"]
    result = CliRunner().invoke(
        cli, ["optimize", *args, "-o", str(out), "--cache-dir", str(tmp_path / "cache")], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert f"--precision auto: int4 for a decoder (block size {block}" in result.output
    from olive_passes_genai.genai_model import GenAIModelHandler

    assert len(_blocks(GenAIModelHandler(str(out)))) > 0
    _, tokens = genai_greedy(out, "The function returns", 6)
    assert len(tokens) == 6
