"""NNCF weight compression: int8 and int4 weights, activations float, outputs close."""

from __future__ import annotations

import pytest
from olive_passes_openvino.compression import OpenVINOWeightCompression
from test_quantization import constants, worst_cosine

from olive.exceptions import PassParamError
from olive.testing.runner import run_pass


@pytest.mark.parametrize(
    ("config", "kind", "bound"),
    [
        ({}, "u8", 0.6),
        ({"compress_config": {"mode": "int4_sym", "group_size": 32, "ratio": 1.0, "all_layers": True}}, "i4", 0.45),
    ],
)
def test_weights_become_narrow_integers_and_outputs_stay_close(
    ir_fp32, feeds, reference, f32, tmp_path, config, kind, bound
):
    compressed = run_pass(OpenVINOWeightCompression, ir_fp32, config, output_dir=tmp_path)
    counts, fake_quantize = constants(compressed)
    # Weights only: no activation is quantized.
    assert fake_quantize == 0
    assert counts[kind] > 0.9 * constants(ir_fp32)[0]["f32"]
    assert compressed.size_on_disk < bound * ir_fp32.size_on_disk
    out = compressed.prepare_session(f32).run(None, feeds)[0]
    assert worst_cosine(out, reference[0]) > (0.99 if kind == "u8" else 0.9)


def test_compress_config_names_nncfs_arguments_and_enums(ir_fp32, tmp_path):
    with pytest.raises(PassParamError, match=r"compress_config.mode is 'int3'; use one of .*int4_sym"):
        run_pass(OpenVINOWeightCompression, ir_fp32, {"compress_config": {"mode": "int3"}}, output_dir=tmp_path)
    with pytest.raises(
        PassParamError, match=r"'compress_config' has 'grup_size', which nncf.compress_weights does not"
    ):
        run_pass(OpenVINOWeightCompression, ir_fp32, {"compress_config": {"grup_size": 32}}, output_dir=tmp_path)


def test_an_onnx_model_in_gives_an_onnx_model_with_narrow_weights(bert, feeds, reference, tmp_path):
    import onnx

    from olive.measure import create_session

    compressed = run_pass(
        OpenVINOWeightCompression, bert, {"compress_config": {"mode": "INT8_SYM"}}, output_dir=tmp_path
    )
    assert compressed.model_type == "ONNXModel"
    proto = compressed.load_model()
    narrow = sum(t.data_type == onnx.TensorProto.INT8 for t in proto.graph.initializer)
    assert narrow > 0
    assert compressed.model_attributes["weight_compression"]["mode"] == "int8_sym"
    out = create_session(compressed.model_path).run(None, feeds)[0]
    assert worst_cosine(out, reference[0]) > 0.99


def test_extra_args_tokenizer_without_one_in_the_folder_is_named(ir_fp32, calibration, tmp_path):
    def transform(item, tokenizer):
        return item[0]

    config = {"data_config": str(calibration), "transform_fn": transform, "extra_args": {"tokenizer": True}}
    config["compress_config"] = {"mode": "int4_sym", "group_size": 32, "awq": True}
    with pytest.raises(PassParamError, match=r"extra_args.tokenizer asks for the model's tokenizer"):
        run_pass(OpenVINOWeightCompression, ir_fp32, config, output_dir=tmp_path)
