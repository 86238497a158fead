"""``SelectiveMixedPrecision``: choose the MatMul weights that a low-bit weight-only quantizer keeps at higher bits."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassParamError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import load_without_weights, model_proto_to_olive_model
from olive_passes_quant._mixed_precision import (
    MIXED_PRECISION_KEY,
    fake_quantize,
    is_attention_input,
    is_down_projection,
    layer_index,
    units,
    weight_matmuls,
)

if TYPE_CHECKING:
    import numpy as np

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

K_QUANT = ("k_quant_down", "k_quant_mixed", "k_quant_last")
SCORED = ("snr", "snr_relative", "iqe", "iqe_relative")
ALGORITHMS = (*SCORED, *K_QUANT, "kld_gradient")
_EPS = 1e-12


class SelectiveMixedPrecision(Pass):
    """Record in ``model_attributes["mixed_precision_info"]`` (Microsoft Olive's layout: ``default`` settings
    and per-module ``overrides``) which MatMul weights to quantize at ``high_bits``; OnnxBlockWiseRtnQuantization
    after it follows the overrides. The model itself is unchanged.

    Rule based (``k_quant_last``: the LM head; ``k_quant_down``: also the MLP down projections of the first and
    last eighth of the layers and every third layer between; ``k_quant_mixed``: also their q/k/v projections), or
    score based: each weight is round-to-nearest quantized at ``bits``/``group_size``/``sym`` and scored by SNR or
    inverse quantization error (``*_relative``: against the same at ``high_bits``); the most sensitive are
    promoted until ``ratio`` of the weights stay at ``bits``. q/k/v projections of one block move together.
    ``kld_gradient`` needs PyTorch gradients of the source model, which ONNX weights do not give: it is refused.
    On a Hugging Face model (before OnnxConversion, as in Olive's recipes) the k-quant rules run from its config.
    """

    accepts_model_types = ("ONNXModel", "HfModel")

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "algorithm": PassConfigParam(
                type_=str,
                required=True,
                description=f"One of {', '.join(ALGORITHMS)}.",
            ),
            "bits": PassConfigParam(
                type_=int,
                default_value=4,
                description="Bits of the weights not promoted.",
            ),
            "group_size": PassConfigParam(
                type_=int,
                default_value=128,
                description="Group size along K for scoring (-1: per channel, 0: per tensor).",
            ),
            "sym": PassConfigParam(type_=bool, default_value=False, description="Symmetric quantization."),
            "high_bits": PassConfigParam(
                type_=int,
                default_value=8,
                description="Bits of the promoted weights.",
            ),
            "high_group_size": PassConfigParam(
                type_=int | None, default_value=None, description="Group size of promoted weights (None: group_size)."
            ),
            "high_sym": PassConfigParam(
                type_=bool | None, default_value=None, description="Symmetric promoted weights (None: sym)."
            ),
            "ratio": PassConfigParam(
                type_=float | None,
                default_value=None,
                description="Share of the weights (by count) that stay at bits; required for score-based algorithms.",
            ),
            "kld_memory_mode": PassConfigParam(
                type_=str, default_value="auto", description="Microsoft Olive's kld_gradient setting; unused here."
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        algorithm = config.algorithm.lower()
        if algorithm == "kld_gradient":
            raise PassParamError(
                "param 'algorithm' is 'kld_gradient', which ranks weights by gradients of the PyTorch model; on ONNX "
                "weights use 'snr_relative' or 'iqe_relative' (same ratio), or OnnxGuardedInt4 to choose by "
                "measured output agreement",
                params="algorithm",
            )
        if algorithm not in ALGORITHMS:
            raise PassParamError(
                f"param 'algorithm' is '{config.algorithm}'; use one of {', '.join(ALGORITHMS[:-1])}",
                params="algorithm",
            )
        for name in ("bits", "high_bits"):
            if config[name] not in (2, 4, 8, 16):
                raise PassParamError(f"param '{name}' is {config[name]}; use 2, 4, 8 or 16", params=name)
        if config.high_bits <= config.bits:
            raise PassParamError(
                f"high_bits ({config.high_bits}) must be more than bits ({config.bits})", params=("bits", "high_bits")
            )
        if algorithm in SCORED and (config.ratio is None or not 0 < config.ratio < 1):
            raise PassParamError(
                f"algorithm '{algorithm}' needs 'ratio' between 0 and 1 (the share of weights kept at bits); got "
                f"{config.ratio}",
                params="ratio",
            )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        if model.model_type != "ONNXModel":
            return self._hf_k_quant(model, config)
        proto = load_without_weights(model)
        matmuls = weight_matmuls(proto)
        if not matmuls:
            raise PassRunError(
                f"'{model.model_path}' has no MatMul with a constant 2-D weight to choose precision for",
                owner=self.config_owner(),
            )
        modules = list(dict.fromkeys(module for module, _ in matmuls.values()))
        algorithm = config.algorithm.lower()
        high = {"bits": config.high_bits}
        if algorithm in K_QUANT:
            default = {"bits": config.bits}
            chosen = _k_quant(modules, algorithm, _lm_head(proto, matmuls))
        else:
            high_group = config.high_group_size if config.high_group_size is not None else config.group_size
            high_sym = config.high_sym if config.high_sym is not None else config.sym
            high.update(group_size=high_group, symmetric=high_sym)
            default = {"bits": config.bits, "group_size": config.group_size, "symmetric": config.sym}
            weights = {module: name for module, name in matmuls.values()}
            chosen = self._scored(model, weights, algorithm, config, high_group, high_sym)
        overrides = {module: dict(high) for module in modules if module in chosen}
        logger.info(
            "SelectiveMixedPrecision: %d of %d weights at %d bits", len(overrides), len(modules), config.high_bits
        )
        source = Path(model.model_path)
        target = Path(output_model_path)
        target = target if target.suffix == ".onnx" else target / source.name
        layout = {"save_as_external_data": bool(model.external_data_files())}
        result = model_proto_to_olive_model(proto, target, layout, weights_dir=source.parent)
        result.model_attributes = {
            **(model.model_attributes or {}),
            MIXED_PRECISION_KEY: {"default": default, "overrides": overrides},
        }
        result.inference_settings = model.inference_settings
        return result

    def _hf_k_quant(self, model: Any, config: BasePassConfig) -> Any:
        """The k-quant rules on a Hugging Face model, from its config alone (module names as transformers' decoders
        spell them); the score-based algorithms read weights, which an ONNX model gives."""
        import copy
        import json

        algorithm = config.algorithm.lower()
        if algorithm not in K_QUANT:
            raise PassRunError(
                f"algorithm '{algorithm}' scores the weights, which this pass reads from an ONNX model: convert "
                f"the {model.model_type} first (OnnxConversion), or use a k_quant algorithm here",
                owner=self.config_owner(),
            )
        config_file = Path(model.model_path) / "config.json"
        hf_config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
        layers = hf_config.get("num_hidden_layers")
        if not isinstance(layers, int):
            raise PassRunError(
                f"'{config_file}' gives no num_hidden_layers; convert the model to ONNX first (OnnxConversion)",
                owner=self.config_owner(),
            )
        attention = ["qkv_proj"] if hf_config.get("model_type") == "phi3" else ["q_proj", "k_proj", "v_proj"]
        modules = [
            f"model.layers.{i}.{part}"
            for i in range(layers)
            for part in [*(f"self_attn.{a}" for a in attention), "mlp.down_proj"]
        ]
        chosen = _k_quant([*modules, "lm_head"], algorithm, "lm_head")
        overrides = {module: {"bits": config.high_bits} for module in [*modules, "lm_head"] if module in chosen}
        if hf_config.get("tie_word_embeddings") and "lm_head" in overrides:
            overrides["model.embed_tokens"] = dict(overrides["lm_head"])
        result = copy.copy(model)
        result.model_attributes = {
            **(model.model_attributes or {}),
            MIXED_PRECISION_KEY: {"default": {"bits": config.bits}, "overrides": overrides},
        }
        return result

    def _scored(
        self,
        model: ONNXModelHandler,
        weights: dict[str, str],
        algorithm: str,
        config: BasePassConfig,
        high_group: int,
        high_sym: bool,
    ) -> set[str]:
        from onnx import numpy_helper

        from olive.passes.onnx.common import weights_in

        tensors = {init.name: init for init in load_without_weights(model, inline_below=0).graph.initializer}
        stats: dict[str, dict[str, float]] = {}
        sizes: dict[str, int] = {}
        with weights_in(Path(model.model_path).parent):
            for module, name in weights.items():
                w = numpy_helper.to_array(tensors[name])
                sizes[module] = int(w.size)
                stats[module] = _stats(w, algorithm, config, high_group, high_sym)
        scores = {}
        for unit in units(weights):
            combined = _combine([stats[m] for m in unit], algorithm)
            scores[unit] = _score(combined, algorithm)
        budget = sum(sizes.values()) * (1 - config.ratio)
        chosen, promoted = set(), 0
        for unit in sorted(scores, key=scores.get):
            chosen.update(unit)
            promoted += sum(sizes[m] for m in unit)
            if promoted >= budget:
                break
        return chosen


def _lm_head(proto: Any, matmuls: dict[str, tuple[str, str]]) -> str | None:
    modules = [module for module, _ in matmuls.values()]
    named = [m for m in modules if m.split(".")[-1] == "lm_head"]
    if named:
        return named[0]
    # Else the MatMul that writes the logits output.
    outputs = {o.name for o in proto.graph.output}
    for node in proto.graph.node:
        if node.name in matmuls and node.output[0] in outputs and node.output[0] == "logits":
            return matmuls[node.name][0]
    return None


def _k_quant(modules: list[str], algorithm: str, lm_head: str | None) -> set[str]:
    chosen = {lm_head} if lm_head else set()
    if algorithm == "k_quant_last":
        return chosen
    layers = sorted({i for m in modules if (i := layer_index(m)) is not None})
    count = len(layers)
    for position, index in enumerate(layers):
        if not (position < count / 8 or position >= 7 * count / 8 or (position - count // 8) % 3 == 2):
            continue
        for module in modules:
            if layer_index(module) != index:
                continue
            if is_down_projection(module) or (algorithm == "k_quant_mixed" and is_attention_input(module)):
                chosen.add(module)
    return chosen


def _stats(w: np.ndarray, algorithm: str, config: Any, high_group: int, high_sym: bool) -> dict[str, float]:
    import numpy as np

    low = fake_quantize(w, config.bits, config.group_size, config.sym)
    w = w.astype(np.float32)
    stats: dict[str, float] = {}
    if algorithm.startswith("snr"):
        stats["signal"] = float(np.sum(w * w))
        stats["noise"] = float(np.sum((w - low) ** 2))
    else:
        # The worst output column's mean squared error (a column of ONNX's [K, N] is a row of torch's weight).
        stats["iqe"] = float(((w - low) ** 2).mean(axis=0).max())
    if algorithm.endswith("_relative"):
        high = fake_quantize(w, min(config.high_bits, 8), high_group, high_sym) if config.high_bits < 16 else w
        if algorithm.startswith("snr"):
            stats["high_noise"] = float(np.sum((w - high) ** 2))
        else:
            stats["high_iqe"] = float(((w - high) ** 2).mean(axis=0).max())
    return stats


def _combine(members: list[dict[str, float]], algorithm: str) -> dict[str, float]:
    if algorithm.startswith("snr"):
        return {key: sum(m[key] for m in members) for key in members[0]}
    return {key: max(m[key] for m in members) for key in members[0]}


def _snr_db(signal: float, noise: float) -> float:
    return 10 * math.log10(max(signal, _EPS * _EPS) / max(noise, _EPS * _EPS))


def _score(stats: dict[str, float], algorithm: str) -> float:
    """Lower is more sensitive."""
    if algorithm == "snr":
        return _snr_db(stats["signal"], stats["noise"])
    if algorithm == "snr_relative":
        return _snr_db(stats["signal"], stats["noise"]) - _snr_db(stats["signal"], stats["high_noise"])
    if algorithm == "iqe":
        return 1.0 / (stats["iqe"] + _EPS)
    return (stats["high_iqe"] + _EPS) / (stats["iqe"] + _EPS)
