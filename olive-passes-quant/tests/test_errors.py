"""Bad input: one clear PassConfigError naming the fix, and nothing written to the output folder."""

from __future__ import annotations

import numpy as np
import pytest

from olive.exceptions import OliveError, PassConfigError, PassParamError
from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive_passes_quant.dynamic import OnnxDynamicQuantization
from olive_passes_quant.quantization import OnnxQuantization
from olive_passes_quant.static import OnnxStaticQuantization


def _run(pass_class, model, config, output_dir):
    instance = pass_class(CPU, pass_class.generate_config(CPU, config, disable_search=True))
    return instance.run(model, output_dir / "output_model")


def test_static_without_calibration_data():
    with pytest.raises(PassConfigError, match=r"needs calibration data; set data_config") as info:
        OnnxStaticQuantization.generate_config(CPU, {}, disable_search=True, pass_key="quantize")
    assert "pass 'quantize'" in str(info.value) and ".npz" in str(info.value)
    # OnnxQuantization defaults to static too, but dynamic needs no data.
    with pytest.raises(PassConfigError, match="needs calibration data"):
        OnnxQuantization.generate_config(CPU, {}, disable_search=True)
    OnnxQuantization.generate_config(CPU, {"quant_mode": "dynamic"}, disable_search=True)


def test_static_search_without_data_prunes_static_points():
    # quant_mode is searched, so missing data is no error for the search as a whole...
    resolved = OnnxQuantization.get_config_params(CPU, {})
    # ...but each static point is pruned, saying why; the dynamic points run.
    with pytest.raises(PassParamError, match="needs calibration data") as info:
        OnnxQuantization.config_for_point(CPU, resolved, {"quant_mode": "static"})
    assert set(info.value.params) == {"data_config", "quant_mode"}
    config = OnnxQuantization.config_for_point(CPU, resolved, {"quant_mode": "dynamic"})
    assert OnnxQuantization.validate_config(config, CPU)


def test_calibration_names_do_not_match(tmp_path, bert):
    bad = tmp_path / "bad_names.npz"
    rows = np.ones((4, 16), dtype=np.int64)
    np.savez(bad, input_id=rows, attention_mask=rows, token_type_ids=rows)
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match="input_ids") as info:
        _run(OnnxStaticQuantization, bert, {"data_config": str(bad)}, out)
    assert "input_id" in str(info.value)
    assert not out.exists()


def test_calibration_shapes_do_not_match(tmp_path, bert):
    bad = tmp_path / "bad_rank.npz"
    rows = np.ones((4, 16, 2), dtype=np.int64)
    np.savez(bad, input_ids=rows, attention_mask=rows, token_type_ids=rows)
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match="rank") as info:
        _run(OnnxStaticQuantization, bert, {"data_config": str(bad)}, out)
    assert "input_ids" in str(info.value) or "attention_mask" in str(info.value)
    assert not out.exists()


def test_calibration_dtype_does_not_match(tmp_path, bert):
    bad = tmp_path / "bad_dtype.npz"
    rows = np.ones((4, 16), dtype=np.float32)
    np.savez(bad, input_ids=rows, attention_mask=rows, token_type_ids=rows)
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match="int64"):
        _run(OnnxStaticQuantization, bert, {"data_config": str(bad)}, out)
    assert not out.exists()


def test_calibration_file_missing_or_not_npz(tmp_path, bert):
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match="does not exist"):
        _run(OnnxStaticQuantization, bert, {"data_config": str(tmp_path / "missing.npz")}, out)
    with pytest.raises(PassConfigError, match=r"not an \.npz file"):
        _run(OnnxStaticQuantization, bert, {"data_config": "calib"}, out)
    assert not out.exists()


def test_unknown_op_type():
    with pytest.raises(PassConfigError, match=r"'MatMull'.*did you mean 'MatMul'"):
        OnnxDynamicQuantization.generate_config(CPU, {"op_types_to_quantize": ["MatMull"]}, disable_search=True)
    with pytest.raises(PassConfigError, match="op_types_to_exclude has 'gather'"):
        OnnxDynamicQuantization.generate_config(CPU, {"op_types_to_exclude": ["gather"]}, disable_search=True)
    # A real op type the quantizer ignores is not an error.
    OnnxDynamicQuantization.generate_config(CPU, {"op_types_to_exclude": ["Softmax"]}, disable_search=True)


def test_uint8_weights_with_int8_activations_is_rejected(tmp_path, bert, calib_npz):
    user = {"data_config": str(calib_npz), "precision": "uint8", "activation_type": "int8"}
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match=r"cannot pair uint8 weights \(precision\) with int8 activations") as info:
        _run(OnnxStaticQuantization, bert, user, out)
    assert set(info.value.params) == {"precision", "activation_type"}
    assert not out.exists()
    # A config made some other way is still refused by validate_config, which answers from the same check.
    config_class, fixed, _ = OnnxStaticQuantization.get_config_params(CPU, {"data_config": str(calib_npz)}, True)
    assert OnnxStaticQuantization.validate_config(config_class(**{**fixed, **user}), CPU) is False


def test_wrong_types_name_the_param():
    with pytest.raises(PassConfigError, match="quant_format"):
        config = {"data_config": "x.npz", "quant_format": "QDQQ"}
        OnnxStaticQuantization.generate_config(CPU, config, disable_search=True)
    with pytest.raises(PassConfigError, match="data_config"):
        OnnxStaticQuantization.generate_config(CPU, {"data_config": 3}, disable_search=True)


def test_calibration_sampling_size_must_be_positive(calib_npz):
    user = {"data_config": str(calib_npz), "calibration_sampling_size": 0}
    with pytest.raises(PassConfigError, match=r"param 'calibration_sampling_size' expects a whole number of 1 or more"):
        OnnxStaticQuantization.generate_config(CPU, user, disable_search=True)


def test_errors_are_olive_errors():
    assert issubclass(PassConfigError, OliveError)
