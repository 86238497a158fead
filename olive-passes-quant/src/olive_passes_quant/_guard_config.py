"""Config params shared by ``OnnxSensitivityAnalysis`` and ``OnnxAccuracyGuardedQuantization``.

Importing this module imports neither onnxruntime nor numpy: ``olive passes NAME`` and workflow
validation read these params.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassConfigError, closest_match_hint
from olive.passes import Pass
from olive.passes.pass_config import ParamCategory, PassConfigParam

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

# A string type keeps DataConfig out of config validation; the passes check the value themselves.
DATA_CONFIG_TYPE = "DataConfig | dict | str"
QUANT_MODES = ("dynamic", "static")
PRECISIONS = ("int8", "uint8")
SENSITIVITY_METHODS = ("exclude_one", "quantize_one", "local_error")


def data_params() -> dict[str, PassConfigParam]:
    return {
        "data_config": PassConfigParam(
            type_=DATA_CONFIG_TYPE,
            required=True,
            description=(
                "Samples the outputs are compared on (and static quantization calibrates on): the name of one of "
                "the workflow's data_configs, a DataConfig, its JSON form, or a path to an .npz file keyed by input "
                "name."
            ),
        ),
        "max_samples": PassConfigParam(
            type_=int,
            default_value=32,
            description="Compare outputs on at most this many samples (each variant runs on all of them).",
        ),
        "batch_size": PassConfigParam(
            type_=int,
            default_value=1,
            description=(
                "Samples per onnxruntime call when scoring. Dynamic int8 takes each activation's range over the "
                "whole batch, so agreement depends on it: use the batch size the model serves with (1 for an "
                "embedding service; on CPU larger batches are not faster to score)."
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
                "With batch_size 1 and mask_input: run each sample at its real length (trailing padding cut), as "
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


def quant_params() -> dict[str, PassConfigParam]:
    return {
        "quant_mode": PassConfigParam(
            type_=str,
            default_value="dynamic",
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
        "reduce_range": PassConfigParam(
            type_=bool, default_value=False, description="7-bit weights (for CPUs without VNNI; costs accuracy)."
        ),
        "precision": PassConfigParam(
            type_=str, default_value="int8", description="Weight type: 'int8' (QInt8, fastest) or 'uint8' (QUInt8)."
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
            type_=str,
            default_value="exclude_one",
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


def config_value(config: Any, name: str) -> Any:
    if isinstance(config, Mapping):
        return config.get(name)
    return getattr(config, name, None)


def check_common(owner: str, config: Any) -> None:
    """Reject values no search point can fix, with the param's name and the fix."""
    from olive_passes_quant._agreement import check_pooling

    def choice(name: str, choices: tuple[str, ...]) -> None:
        value = config_value(config, name)
        if value is not None and value not in choices:
            raise PassConfigError(
                f"{owner}: {name} '{value}' is unknown{closest_match_hint(str(value), choices)}; "
                f"use {', '.join(choices)}"
            )

    choice("quant_mode", QUANT_MODES)
    choice("precision", PRECISIONS)
    choice("sensitivity_method", SENSITIVITY_METHODS)
    for name in ("max_samples", "batch_size"):
        value = config_value(config, name)
        if value is not None and value < 1:
            raise PassConfigError(f"{owner}: {name} must be at least 1, got {value}")
    top_k = config_value(config, "verify_top_k")
    if top_k is not None and top_k < 0:
        raise PassConfigError(f"{owner}: verify_top_k must not be negative, got {top_k}")
    check_pooling(config_value(config, "pooling"), config_value(config, "mask_input"), owner)
    func = config_value(config, "pooled_output_func")
    if isinstance(func, str):
        raise PassConfigError(
            f"{owner}: pooled_output_func '{func}' was not resolved; name a function of the workflow's user_script "
            "(set user_script on the pass or the workflow), or pass the function itself in direct use"
        )
    op_types = config_value(config, "op_types_to_quantize")
    if op_types is not None and not op_types:
        raise PassConfigError(f"{owner}: op_types_to_quantize is empty; leave it unset for MatMul, Gemm, Attention")


def op_types(config: Any) -> list[str]:
    from olive_passes_quant._int8_variants import DEFAULT_OP_TYPES, EMBEDDING_OP_TYPES

    chosen = list(config_value(config, "op_types_to_quantize") or DEFAULT_OP_TYPES)
    if config_value(config, "quantize_embeddings"):
        chosen += [t for t in EMBEDDING_OP_TYPES if t not in chosen]
    return chosen


class GuardedConfigPass(Pass):
    """Base of the two guarded passes: ``_check_values`` runs on the fixed values when a workflow is
    resolved (a conflict the user wrote fails loudly, before any work) and prunes search points whose
    combination of values conflicts."""

    @classmethod
    def _check_values(cls, owner: str, config: Any) -> None:
        """Raise ``PassConfigError`` when ``config`` (the fixed values, or a whole config) conflicts."""

    @classmethod
    def get_config_params(
        cls,
        accelerator_spec: AcceleratorSpec,
        config: Mapping[str, Any] | None = None,
        disable_search: bool = False,
        pass_key: str | None = None,
    ) -> Any:
        result = super().get_config_params(accelerator_spec, config, disable_search, pass_key)
        owner = f"pass '{pass_key}' ({cls.pass_name()})" if pass_key else f"pass {cls.pass_name()}"
        cls._check_values(owner, result[1])
        return result

    @classmethod
    def validate_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> bool:
        """Prune search points whose combination of values is invalid (fixed values fail earlier, loudly)."""
        try:
            cls._check_values(f"pass {cls.pass_name()}", config)
        except PassConfigError as exc:
            logger.debug("pruned: %s", exc)
            return False
        return True
