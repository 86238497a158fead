"""Config params and checks shared by ``OnnxSensitivityAnalysis`` and ``OnnxAccuracyGuardedQuantization``.

Importing this module imports neither onnxruntime nor numpy: ``olive passes NAME`` and workflow
validation read these params.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from olive.config_errors import param_in_range
from olive.exceptions import PassParamError
from olive.passes.pass_config import ParamCategory, PassConfigParam
from olive_passes_quant._agreement import check_pooling
from olive_passes_quant._checks import applied, check_data_config_value, check_op_types
from olive_passes_quant._int8_variants import DEFAULT_OP_TYPES, EMBEDDING_OP_TYPES
from olive_passes_quant._params import data_params, reduce_range_param
from olive_passes_quant._types import Precision, QuantMode, SensitivityMethod

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec


def sample_params() -> dict[str, PassConfigParam]:
    return {
        **data_params("Samples the outputs are compared on (and static quantization calibrates on)", required=True),
        "max_samples": PassConfigParam(
            type_=int,
            default_value=32,
            description="Compare outputs on at most this many samples (each variant runs on all of them).",
        ),
        "batch_size": PassConfigParam(
            type_=int | list[int],
            default_value=1,
            description=(
                "The batch size the model is served at, or a list of them: the samples are shuffled (a fixed seed) "
                "and batched together at each size, padded as the data is, and each agreement is the worst over the "
                "sizes. Dynamic int8 takes each activation's range over the whole batch, so a sample's output "
                "depends on its batch-mates: score at the batch sizes the model serves with."
            ),
        ),
    }


def agreement_params() -> dict[str, PassConfigParam]:
    return {
        "output_name": PassConfigParam(
            type_=str | list[str] | None,
            default_value=None,
            description="Compare only this output (or these outputs); default: all outputs.",
        ),
        "pooling": PassConfigParam(
            type_=str | None,
            default_value=None,
            description=(
                "Pool token outputs [batch, sequence, ...] before comparing: 'mean' (sentence embeddings; weighted "
                "by mask_input) or 'cls' (first token); None compares the outputs as they are."
            ),
        ),
        "mask_input": PassConfigParam(
            type_=str | None,
            default_value=None,
            description="With pooling 'mean': the input holding the attention mask (e.g. 'attention_mask').",
        ),
        "trim_padding": PassConfigParam(
            type_=bool,
            default_value=True,
            description=(
                "At batch size 1 with mask_input: run each sample at its real length (trailing padding cut), as "
                "a batch-1 service runs it; padded positions would otherwise widen dynamic int8 ranges."
            ),
        ),
        "pooled_output_func": PassConfigParam(
            type_=Callable | str | None,
            category=ParamCategory.OBJECT,
            default_value=None,
            description=(
                "A function in user_script, f(outputs: dict of arrays, inputs: dict of arrays) -> array with "
                "samples on the first axis, that makes the vectors compared; replaces output_name and pooling."
            ),
        ),
    }


def quant_params(accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
    return {
        "quant_mode": PassConfigParam(
            type_=QuantMode,
            default_value=QuantMode.DYNAMIC,
            description=(
                "'dynamic' (int8 weights, activations quantized at run time; fastest on CPU) or 'static' (QDQ with "
                "activation ranges calibrated on data_config)."
            ),
        ),
        "per_channel": PassConfigParam(
            type_=bool,
            default_value=True,
            description="One weight scale per output channel: as fast as per tensor and far more accurate.",
        ),
        "reduce_range": reduce_range_param(accelerator_spec),
        "precision": PassConfigParam(
            type_=Precision,
            default_value=Precision.INT8,
            description="Weight type: 'int8' (QInt8, fastest) or 'uint8' (QUInt8).",
        ),
        "op_types_to_quantize": PassConfigParam(
            type_=list[str] | None,
            default_value=None,
            description=(
                "Op types to quantize; default MatMul, Gemm and Attention (the weight-heavy ops). Embedding lookups "
                "stay in float unless quantize_embeddings is set."
            ),
        ),
        "quantize_embeddings": PassConfigParam(
            type_=bool,
            default_value=False,
            description="Also quantize Gather / EmbedLayerNormalization (embedding tables); off: they cost accuracy.",
        ),
        "nodes_to_exclude": PassConfigParam(
            type_=list[str] | None,
            default_value=None,
            description="Nodes that always stay in float (not counted in max_fp32_nodes).",
        ),
        "extra_options": PassConfigParam(
            type_=dict | None, default_value=None, description="onnxruntime quantizer extra_options."
        ),
    }


def sensitivity_params() -> dict[str, PassConfigParam]:
    return {
        "sensitivity_method": PassConfigParam(
            type_=SensitivityMethod,
            default_value=SensitivityMethod.EXCLUDE_ONE,
            description=(
                "How each node's effect is measured: 'exclude_one' (fully quantized model with only that node in "
                "float; one quantization per node), 'quantize_one' (only that node quantized), or 'local_error' "
                "(each node's own int8 error on one batch, in numpy: no quantization per node; verify_top_k nodes "
                "are then measured exactly)."
            ),
        ),
        "verify_top_k": PassConfigParam(
            type_=int | None,
            default_value=None,
            description="With sensitivity_method 'local_error': measure the top k nodes exactly (exclude_one).",
        ),
    }


def check_common(config: Any) -> None:
    """The checks both guarded passes' ``_check_config`` make: values no search point can fix."""
    check_data_config_value(config.data_config)
    check_op_types(config)
    param_in_range(config, "max_samples", minimum=1)
    sizes = config.batch_size if isinstance(config.batch_size, list) else [config.batch_size]
    if not sizes or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes):
        raise PassParamError(
            f"param 'batch_size' expects a whole number >= 1 or a non-empty list of them, got {config.batch_size!r}",
            params="batch_size",
        )
    param_in_range(config, "verify_top_k", minimum=0)
    check_pooling(config.pooling, config.mask_input)
    if isinstance(config.pooled_output_func, str):
        raise PassParamError(
            f"pooled_output_func '{config.pooled_output_func}' was not resolved; name a function of the workflow's "
            "user_script (set user_script on the pass or the workflow), or pass the function itself in direct use",
            params="pooled_output_func",
        )
    if config.op_types_to_quantize is not None and not config.op_types_to_quantize:
        raise PassParamError(
            "param 'op_types_to_quantize' is empty; leave it unset for MatMul, Gemm, Attention",
            params="op_types_to_quantize",
        )


def op_types(config: Any) -> list[str]:
    chosen = list(applied(config, "op_types_to_quantize") or DEFAULT_OP_TYPES)
    if applied(config, "quantize_embeddings"):
        chosen += [t for t in EMBEDDING_OP_TYPES if t not in chosen]
    return chosen
