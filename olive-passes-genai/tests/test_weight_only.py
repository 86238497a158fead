"""HQQ, k-quant and GPTQ (olive-passes-quant's) on an onnxruntime-genai decoder, the trained one's fp32 build: a
GenAIModel folder again, smaller, MatMulNBits in place of every weight MatMul, and text close to the float model's
(plain ONNX models: olive-passes-quant's tests)."""

from __future__ import annotations

import onnx
import pytest
from olive_passes_genai import metrics
from olive_passes_genai.genai_model import GenAIModelHandler

from olive.testing import run_pass
from olive_passes_quant.hqq import OnnxHqqQuantization
from olive_passes_quant.k_quant import OnnxKQuantQuantization


def _ops(model) -> list[str]:
    return [n.op_type for n in onnx.load(model.model_path, load_external_data=False).graph.node]


@pytest.mark.parametrize(
    ("cls", "config"),
    [
        (OnnxHqqQuantization, {"block_size": 32}),
        (OnnxKQuantQuantization, {"block_size": 32}),
        (OnnxKQuantQuantization, {"block_size": 64, "is_symmetric": True, "accuracy_level": 4}),
    ],
)
def test_int4_folder_is_smaller_runs_in_genai_and_stays_close(cls, config, trained_fp32, held_out_file, tmp_path):
    out = run_pass(cls, trained_fp32, config, output_dir=tmp_path)
    assert isinstance(out, GenAIModelHandler)
    ops = _ops(out)
    assert ops.count("MatMulNBits") == _ops(trained_fp32).count("MatMul") >= 9 and "MatMul" not in ops
    nbits = [n for n in onnx.load(out.model_path, load_external_data=False).graph.node if n.op_type == "MatMulNBits"]
    assert {({a.name: a.i for a in n.attribute}["block_size"]) for n in nbits} == {config["block_size"]}
    assert out.size_on_disk < 0.45 * trained_fp32.size_on_disk
    assert (out.folder / "tokenizer.json").read_bytes() == (trained_fp32.folder / "tokenizer.json").read_bytes()
    metric = {"name": "q", "user_config": {"data_path": str(held_out_file), "window": 128, "max_windows": 8}}
    ppl = metrics.perplexity(out, metric, None)["perplexity"]
    ref = metrics.perplexity(trained_fp32, metric, None)["perplexity"]
    assert abs(ppl / ref - 1) < 0.05, (ppl, ref)
    assert metrics.top1_agreement(out, metric, None, trained_fp32)["top1_agreement"] >= 0.85
    kl = metrics.next_token_kl(out, metric, None, trained_fp32)["next_token_kl"]
    assert 0 < kl < 0.05


def test_k_quant_keeps_chosen_matmuls_at_8_bits_and_excluded_ones_in_float(trained_fp32, tmp_path):
    names = [n.name for n in onnx.load(trained_fp32.model_path, load_external_data=False).graph.node]
    head = next(n for n in names if "lm_head" in n)
    first = next(n for n in names if n.endswith("qkv_proj/MatMul"))
    out = run_pass(
        OnnxKQuantQuantization,
        trained_fp32,
        {"block_size": 32, "customized_weight_config": {head: {"bits": 8}}, "nodes_to_exclude": [first]},
        output_dir=tmp_path,
    )
    graph = onnx.load(out.model_path, load_external_data=False).graph
    bits = {n.name: {a.name: a.i for a in n.attribute}.get("bits") for n in graph.node if n.op_type == "MatMulNBits"}
    assert 8 in bits.values() and 4 in bits.values()
    assert [n.name for n in graph.node if n.op_type == "MatMul"] == [first]


def test_k_quant_with_one_block_per_column_quantizes_every_matmul_and_stays_close(
    trained_fp32, held_out_file, tmp_path
):
    # K = 128 at block_size 128 is one block per column, which onnxruntime's own zero-point packing raises on.
    out = run_pass(OnnxKQuantQuantization, trained_fp32, {"block_size": 128}, output_dir=tmp_path)
    assert _ops(out).count("MatMulNBits") == _ops(trained_fp32).count("MatMul") and "MatMul" not in _ops(out)
    metric = {"name": "q", "user_config": {"data_path": str(held_out_file), "window": 128, "max_windows": 8}}
    ppl = metrics.perplexity(out, metric, None)["perplexity"]
    ref = metrics.perplexity(trained_fp32, metric, None)["perplexity"]
    assert abs(ppl / ref - 1) < 0.1, (ppl, ref)


def test_is_symmetric_on_k_quant_says_it_has_no_effect(trained_fp32, tmp_path, caplog):
    import logging

    caplog.set_level(logging.WARNING)
    out = run_pass(OnnxKQuantQuantization, trained_fp32, {"is_symmetric": True}, output_dir=tmp_path)
    assert "is_symmetric has no effect on k-quant" in caplog.text
    graph = onnx.load(out.model_path, load_external_data=False).graph
    # k-quant fits an offset to every block: its MatMulNBits carry zero points whatever the flag says.
    assert all(len(n.input) == 4 for n in graph.node if n.op_type == "MatMulNBits")


def test_gptq_calibrated_on_other_text_is_int4_and_stays_close_on_held_out_text(trained_fp32, held_out_file, tmp_path):
    from olive.testing.decoders import calibration_text
    from olive_passes_quant.gptq import OnnxGptqQuantization

    calib = tmp_path / "calib.txt"
    calib.write_text(calibration_text(30_000).replace("\n\n", "\n"), encoding="utf-8")
    out = run_pass(OnnxGptqQuantization, trained_fp32, {"data_path": str(calib), "max_windows": 8}, output_dir=tmp_path)
    assert isinstance(out, GenAIModelHandler) and out.model_attributes["gptq"]["calibration_windows"] == 8
    ops = _ops(out)
    assert ops.count("MatMulNBits") >= 9 and "MatMul" not in ops
    assert out.size_on_disk < 0.45 * trained_fp32.size_on_disk
    metric = {"name": "q", "user_config": {"data_path": str(held_out_file), "window": 128, "max_windows": 8}}
    ppl = metrics.perplexity(out, metric, None)["perplexity"]
    ref = metrics.perplexity(trained_fp32, metric, None)["perplexity"]
    assert abs(ppl / ref - 1) < 0.05, (ppl, ref)
    assert metrics.top1_agreement(out, metric, None, trained_fp32)["top1_agreement"] >= 0.85


def test_gptq_calibrates_on_the_fitting_part_of_a_text_data_config(trained_dir, trained_fp32, held_out_file, tmp_path):
    from olive.data.config import DataConfig
    from olive.data.containers import bind_input_model
    from olive.data.split import FIT
    from olive_passes_quant.gptq import OnnxGptqQuantization

    data = DataConfig.from_json(
        {"name": "text", "type": "TextDataContainer", "load_dataset_config": {"data_path": str(held_out_file)}}
    )
    # As a workflow gives it to a pass whose metrics judge on the same config: bound to the model's tokenizer, its
    # fitting part.
    fit = bind_input_model(data, str(trained_dir)).for_role(FIT)
    out = run_pass(OnnxGptqQuantization, trained_fp32, {"data_config": fit, "max_windows": 4}, output_dir=tmp_path)
    assert out.model_attributes["gptq"]["calibration_windows"] == 4
    assert _ops(out).count("MatMulNBits") >= 9


def test_gptq_keeps_the_pass_contract_on_a_genai_folder(trained_fp32, held_out_file, tmp_path):
    from olive.testing import assert_pass_contract
    from olive_passes_quant.gptq import OnnxGptqQuantization

    config = {"data_path": str(held_out_file), "max_windows": 2}
    report = assert_pass_contract(
        OnnxGptqQuantization,
        model=trained_fp32,
        entry_point_name="OnnxGptqQuantization",
        config=config,
        output_dir=tmp_path / "out",
    )
    assert report["ran"] == 1 and isinstance(report["outputs"][0], GenAIModelHandler)
