"""The config params the onnxruntime quantization passes share.

Names, defaults and search values follow Microsoft Olive's ``OnnxQuantization`` family so that existing
workflows keep working; where we differ (``per_channel``), the README says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from olive.measure.int8_kernel import reduce_range_for
from olive.passes.pass_config import PassConfigParam
from olive.search.search_parameter import Boolean, Categorical, Conditional, ConditionalDefault, SpecialParamValue
from olive_passes_quant._types import CalibrateMethod, Precision, QuantFormat

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec

# Accepted for data_config: a DataConfig, its JSON form, an .npz path, or in a workflow the name of one of its
# data_configs. A string type keeps DataConfig (and what it imports) out of config validation;
# _checks.check_data_config_value checks the value.
DATA_CONFIG_TYPE = "DataConfig | dict | str"

# Pass params that become keys of onnxruntime's ``extra_options`` (key: (param, used by dynamic)).
EXTRA_OPTION_PARAMS = {
    "ActivationSymmetric": ("activation_symmetric", True),
    "WeightSymmetric": ("weight_symmetric", True),
    "MinimumRealRange": ("min_real_range", False),
    "TensorQuantOverrides": ("tensor_quant_overrides", False),
}


def reduce_range_param(accelerator_spec: AcceleratorSpec | None, search_defaults: Any = None) -> PassConfigParam:
    """``reduce_range`` (7-bit weights), whose default follows the target's int8 kernel.

    Microsoft Olive's default is False, right where onnxruntime's int8 MatMul adds exactly (VNNI, AMX, ARM):
    there 7 bits only cost precision. Where it adds pairs of uint8 x int8 products in 16 bits and saturates
    (x86-64 without VNNI or AMX: :mod:`olive.hardware.cpu`), 8-bit weights overflow and 7-bit ones cannot, so
    int8 weights default to True on such a CPU; uint8 weights take a kernel that does not saturate. The CPU is
    read (its flags, nothing imported) when the config is made, so the value chosen is part of the run's cache
    key.
    """
    description = (
        "Quantize weights to 7 bits. Default: True for int8 weights on a CPU whose onnxruntime int8 MatMul "
        "saturates (x86-64 without VNNI or AMX), else False."
    )
    default: Any = False
    if reduce_range_for(getattr(accelerator_spec, "execution_provider", None)):
        default = ConditionalDefault(
            parents=("precision",), support={(Precision.INT8,): True, (Precision.UINT8,): False}, default=False
        )
    return PassConfigParam(type_=bool, default_value=default, search_defaults=search_defaults, description=description)


def common_params(accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
    """Params of both dynamic and static quantization."""
    return {
        "precision": PassConfigParam(
            type_=Precision,
            default_value=Precision.INT8,
            search_defaults=Categorical([Precision.INT8, Precision.UINT8]),
            description="Weight type: 'int8' (onnxruntime QInt8) or 'uint8' (QUInt8).",
        ),
        "op_types_to_quantize": PassConfigParam(
            type_=list[str] | None,
            default_value=None,
            description="Op types to quantize (e.g. ['MatMul']); None quantizes every op type the quantizer handles.",
        ),
        "op_types_to_exclude": PassConfigParam(
            type_=list[str] | None,
            default_value=None,
            description="Op types to leave in float; op_types_to_quantize takes precedence when both are set.",
        ),
        "nodes_to_quantize": PassConfigParam(
            type_=list[str] | None,
            default_value=None,
            description="Node names to quantize; None quantizes every quantizable node.",
        ),
        "nodes_to_exclude": PassConfigParam(
            type_=list[str] | None,
            default_value=None,
            description="Node names to leave in float (e.g. the most sensitive MatMuls).",
        ),
        "per_channel": PassConfigParam(
            type_=bool,
            # Per-channel weight scales cost nothing at run time and keep far more accuracy on transformer
            # weights than one scale per tensor (see README), so they are the default.
            default_value=True,
            search_defaults=Boolean(),
            description="One quantization scale per output channel of each weight instead of one per tensor.",
        ),
        "reduce_range": reduce_range_param(accelerator_spec, search_defaults=Boolean()),
        "quant_preprocess": PassConfigParam(
            type_=bool,
            default_value=True,
            search_defaults=Boolean(),
            description="Run onnxruntime's quant_pre_process (shape inference and optimization) first.",
        ),
        "activation_symmetric": PassConfigParam(
            type_=bool, default_value=False, description="Symmetric ranges for activations."
        ),
        "weight_symmetric": PassConfigParam(
            type_=bool | None,
            default_value=None,
            description="Symmetric ranges for weights; None means True for int8 weights, False for uint8.",
        ),
    }


def extra_options_param() -> dict[str, PassConfigParam]:
    return {
        "extra_options": PassConfigParam(
            type_=dict | None,
            default_value=None,
            description=(
                "onnxruntime quantizer extra_options (e.g. {'MatMulConstBOnly': True}). ActivationSymmetric, "
                "WeightSymmetric, MinimumRealRange and TensorQuantOverrides come from the params of those names."
            ),
        ),
    }


def data_params(use: str, required: bool = False) -> dict[str, PassConfigParam]:
    """The ``data_config`` param of every pass that reads data; ``use`` says what for."""
    return {
        "data_config": PassConfigParam(
            type_=DATA_CONFIG_TYPE,
            required=required,
            description=(
                f"{use}: the name of one of the workflow's data_configs, a DataConfig, its JSON form, or a path to "
                "an .npz file keyed by input name."
            ),
        ),
    }


def static_params() -> dict[str, PassConfigParam]:
    """Params only static quantization uses."""
    return {
        "calibrate_method": PassConfigParam(
            type_=CalibrateMethod,
            default_value=CalibrateMethod.MIN_MAX,
            search_defaults=Categorical([CalibrateMethod.MIN_MAX, CalibrateMethod.ENTROPY, CalibrateMethod.PERCENTILE]),
            description="How calibration activations become ranges: MinMax, Entropy, Percentile or Distribution.",
        ),
        "calibration_sampling_size": PassConfigParam(
            type_=int | None,
            default_value=None,
            description="Use at most this many calibration samples (None: all of them).",
        ),
        "calibration_providers": PassConfigParam(
            type_=list[str] | None,
            default_value=None,
            description="Execution providers for the calibration session (default: CPUExecutionProvider).",
        ),
        "quant_format": PassConfigParam(
            type_=QuantFormat,
            default_value=QuantFormat.QDQ,
            search_defaults=Categorical([QuantFormat.QOPERATOR, QuantFormat.QDQ]),
            description="QDQ (QuantizeLinear/DequantizeLinear pairs) or QOperator (quantized operators).",
        ),
        "activation_type": PassConfigParam(
            type_=Precision,
            default_value=Precision.INT8,
            # Searched jointly with quant_format and precision: onnxruntime cannot pair uint8 weights with int8
            # activations, and QOperator with int8 activations is slow on x86-64, so the valid triples are
            # (QDQ, int8, int8), (QDQ, uint8, uint8) and (QOperator, uint8, uint8).
            search_defaults=Conditional(
                parents=("quant_format", "precision"),
                support={
                    (QuantFormat.QDQ, Precision.INT8): Categorical([Precision.INT8]),
                    (QuantFormat.QDQ, Precision.UINT8): Categorical([Precision.UINT8]),
                    (QuantFormat.QOPERATOR, Precision.UINT8): Categorical([Precision.UINT8]),
                    (QuantFormat.QOPERATOR, Precision.INT8): Categorical([SpecialParamValue.INVALID]),
                },
            ),
            description="Activation type: 'int8' or 'uint8'.",
        ),
        "min_real_range": PassConfigParam(
            type_=float | None,
            default_value=None,
            description="Smallest range (rmax - rmin) a quantized tensor may have.",
        ),
        "tensor_quant_overrides": PassConfigParam(
            type_=dict | None,
            default_value=None,
            description="Per-tensor quantization overrides (onnxruntime TensorQuantOverrides).",
        ),
        "prepare_qdq_config": PassConfigParam(
            type_=bool,
            default_value=False,
            description=(
                "Build the QDQ config with onnxruntime's get_qdq_config (a full integer QDQ model, onnxruntime >= "
                "1.21). Off by default: it also quantizes normalization and activation ops, which costs accuracy."
            ),
        ),
    }


def ignored_unless_static(params: dict[str, PassConfigParam]) -> dict[str, PassConfigParam]:
    """Make static-only params depend on ``quant_mode``: IGNORED when it is dynamic."""
    result = {}
    for name, param in params.items():
        default = ConditionalDefault(
            parents=("quant_mode",),
            support={("static",): param.default_value, ("dynamic",): SpecialParamValue.IGNORED},
        )
        search = param.search_defaults
        if isinstance(search, Conditional):
            search = Conditional(
                parents=("quant_mode", *search.parents),
                support={("static", *key): value for key, value in search.support.items()},
                default=Categorical([SpecialParamValue.IGNORED]),
            )
        elif isinstance(search, Categorical):
            search = Conditional(
                parents=("quant_mode",),
                support={("static",): search},
                default=Categorical([SpecialParamValue.IGNORED]),
            )
        result[name] = attrs.evolve(param, default_value=default, search_defaults=search)
    return result
