"""OnnxQuantization: quant_mode picks static or dynamic; static-only params are IGNORED for dynamic."""

from __future__ import annotations

from helpers import op_types

from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.search.search_parameter import SpecialParamValue
from olive.search.search_space import SearchSpace
from olive_passes_quant.quantization import OnnxQuantization
from olive_passes_quant.static import OnnxStaticQuantization

STATIC_ONLY = ("calibrate_method", "quant_format", "activation_type", "calibration_sampling_size")


def test_dynamic_mode_ignores_static_params():
    config = OnnxQuantization.generate_config(CPU, {"quant_mode": "dynamic"}, disable_search=True)
    for name in STATIC_ONLY:
        assert config[name] == SpecialParamValue.IGNORED, name
    assert OnnxQuantization.validate_config(config, CPU)


def test_static_mode_uses_static_defaults(calib_npz):
    config = OnnxQuantization.generate_config(CPU, {"data_config": str(calib_npz)}, disable_search=True)
    assert config.quant_mode == "static"
    assert config.quant_format == "QDQ" and config.calibrate_method == "MinMax" and config.activation_type == "int8"


def test_search_over_modes_ignores_static_params_for_dynamic_points(calib_npz):
    _, _, search = OnnxQuantization.get_config_params(CPU, {"data_config": str(calib_npz)})
    assert "quant_mode" in search
    space = SearchSpace(search)
    modes = set()
    for point in space.iterate():
        modes.add(point["quant_mode"])
        if point["quant_mode"] == "dynamic":
            assert all(point[name] == SpecialParamValue.IGNORED for name in ("calibrate_method", "quant_format"))
        else:
            assert point["calibrate_method"] in ("MinMax", "Entropy", "Percentile")
    assert modes == {"dynamic", "static"}


def test_runs_both_modes(run_pass, bert, calib_npz):
    dynamic = run_pass(OnnxQuantization, bert, {"quant_mode": "dynamic"})
    assert op_types(dynamic).get("MatMulInteger") == 12
    static = run_pass(OnnxQuantization, bert, {"quant_mode": "static", "data_config": str(calib_npz)})
    assert op_types(static).get("QuantizeLinear", 0) > 0


def test_static_search_space_never_pairs_qoperator_with_int8_activations(calib_npz):
    _, _, search = OnnxStaticQuantization.get_config_params(CPU, {"data_config": str(calib_npz)})
    space = SearchSpace(search)
    valid = []
    for point in space.iterate():
        if SpecialParamValue.INVALID in point.values():
            assert point["quant_format"] == "QOperator" and point["precision"] == "int8"
            continue
        config = OnnxStaticQuantization.generate_config(CPU, {"data_config": str(calib_npz)}, point=point)
        if OnnxStaticQuantization.validate_config(config, CPU):
            valid.append(point)
    assert valid
    assert not [p for p in valid if p["quant_format"] == "QOperator" and p["activation_type"] == "int8"]
    assert {(p["quant_format"], p["precision"], p["activation_type"]) for p in valid} == {
        ("QDQ", "int8", "int8"),
        ("QDQ", "uint8", "uint8"),
        ("QOperator", "uint8", "uint8"),
    }
