"""Move scale from the RMSNorm in front of a MatMul into the MatMul's weight, per input channel, before int4.

A few hidden channels of real decoders carry activations tens to hundreds of times the rest, and the RMSNorm
weights in front of the attention and MLP MatMuls are where they come from. The MatMul weight rows (input
channels) that meet those activations are then small, and blockwise int4 rounds them away with the larger
weights of their block, though their products matter as much as any. For each such norm this pass picks one
positive scale ``s`` per channel, divides the norm weight by it and multiplies the matching input columns of every
Linear reading the norm by it: ``(W * s) @ ((g / s) * x) == W @ (g * x)``, so the model computes the same function
in float, and the weights int4 sees are evened out.

``s`` is searched per norm on calibration text, as AWQ does: candidates ``a ** alpha`` for ``alpha`` on a grid from
0 (no change) to 1, ``a`` the mean absolute activation of each channel at the norm's output, normalised to a
geometric mean of 1, and the full fold of the norm weight into the Linears (``s = |g|``: the norm weight becomes
its sign). Each candidate is scored by the squared error of the readers' outputs on the calibration activations
when their scaled weights are rounded to int4 (blocks of ``block_size`` input channels, symmetric, as the model
builder's int4 does); the smallest error wins, so a norm whose weights int4 already fits stays as it was
(``alpha`` 0).

Done on the Hugging Face weights (an ``HfModel`` folder in, a new one out) rather than on the built ONNX graph:
there the norm and its readers are plain modules, and ``ModelBuilder`` then writes the usual fused graph and
``MatMulNBits`` from the new folder, so the result runs at the builder's int4 speed. The norms changed are each
layer's ``input_layernorm`` (read by q, k and v, or a fused qkv) and ``post_attention_layernorm`` (gate and up, or a
fused gate_up); the final norm and the LM head are left alone.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive_passes_genai.text_windows import pass_samples, windows
from olive_passes_quant.text_params import check_text_params, text_params

if TYPE_CHECKING:
    import torch

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler
    from olive.passes.pass_config import BasePassConfig

__all__ = ["NORM_READERS", "HfScaleMigration", "int4_rtn", "migrate_scales", "search_scale"]

logger = logging.getLogger(__name__)

#: For each norm whose scale moves, the attribute paths (under a decoder layer) of the Linears reading its output.
NORM_READERS: dict[str, tuple[str, ...]] = {
    "input_layernorm": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.qkv_proj"),
    "post_attention_layernorm": ("mlp.gate_proj", "mlp.up_proj", "mlp.gate_up_proj"),
}
_TOKENIZER_FILES = ("tokenizer*", "special_tokens_map.json", "vocab.json", "merges.txt", "added_tokens.json")
_RECORD = "olive_scale_migration.json"


def int4_rtn(weight: torch.Tensor, block_size: int) -> torch.Tensor:
    """``weight`` (out x in) rounded to symmetric 4-bit blocks of ``block_size`` input channels, dequantized: the
    error int4 round-to-nearest makes, for scoring a scale (the last block of a row may be shorter)."""
    import torch

    out_features, in_features = weight.shape
    pad = (-in_features) % block_size
    padded = torch.nn.functional.pad(weight, (0, pad)).reshape(out_features, -1, block_size)
    # [-8, 7] with the scale taken from the largest magnitude, as the builder's symmetric int4 maps it.
    scale = padded.abs().amax(dim=-1, keepdim=True).clamp_min(1e-12) / 8
    rounded = (padded / scale).round().clamp(-8, 7) * scale
    return rounded.reshape(out_features, -1)[:, :in_features]


def _candidates(mean_abs: torch.Tensor, norm_weight: torch.Tensor, grid: int) -> list[tuple[str, torch.Tensor]]:
    import torch

    def normalised(s: torch.Tensor) -> torch.Tensor:
        s = s.clamp_min(1e-8)
        return s / s.log().mean().exp()

    found = [(f"alpha={i / grid:g}", normalised(mean_abs ** (i / grid))) for i in range(grid + 1)]
    # The full fold: the norm keeps only signs, the readers take its magnitudes.
    found.append(("fold", norm_weight.abs().clamp_min(1e-8)))
    return [(name, s.to(torch.float32)) for name, s in found]


def search_scale(
    activations: torch.Tensor,
    weights: Sequence[torch.Tensor],
    norm_weight: torch.Tensor,
    block_size: int = 32,
    grid: int = 20,
) -> tuple[str, torch.Tensor, float, float]:
    """The per-channel scale for one norm: ``(candidate name, s, its error, the error without scaling)``.

    ``activations`` (tokens x channels) are the norm's outputs on calibration text; ``weights`` the readers'
    weights (out x in). The error is the summed squared difference of the readers' outputs between float and int4
    of the scaled weights, on the activations divided by ``s``."""
    import torch

    with torch.no_grad():
        mean_abs = activations.abs().mean(dim=0)
        reference = [activations @ w.T for w in weights]
        best: tuple[str, torch.Tensor, float] | None = None
        plain = float("nan")
        for name, s in _candidates(mean_abs, norm_weight, grid):
            scaled = activations / s
            error = sum(
                float(((scaled @ int4_rtn(w * s, block_size).T - ref) ** 2).sum())
                for w, ref in zip(weights, reference, strict=True)
            )
            if name == "alpha=0":
                plain = error
            if best is None or error < best[2]:
                best = (name, s, error)
        assert best is not None
        return best[0], best[1], best[2], plain


def _get(module: Any, path: str) -> Any:
    for name in path.split("."):
        module = getattr(module, name, None)
        if module is None:
            return None
    return module


def migrate_scales(
    model: Any, calibration: Sequence[torch.Tensor], block_size: int = 32, grid: int = 20
) -> list[dict[str, Any]]:
    """Search and apply the scales of every norm in front of a MatMul of ``model`` (a transformers causal LM in
    float32), from its activations on ``calibration`` (token id windows, each 1-D); returns one record per norm."""
    import torch

    layers = _get(model, "model.layers")
    if layers is None:
        raise ValueError(
            f"{type(model).__name__} has no model.layers; use a Llama-, Qwen2-, Phi3- or Mistral-like decoder"
        )
    groups: list[tuple[str, Any, list[Any]]] = []
    for index, layer in enumerate(layers):
        for norm_name, paths in NORM_READERS.items():
            norm = _get(layer, norm_name)
            readers = [r for r in (_get(layer, p) for p in paths) if r is not None]
            if norm is None or not readers:
                raise ValueError(
                    f"layer {index} has no {norm_name} followed by one of {', '.join(paths)}; use a Llama-, Qwen2-, "
                    "Phi3- or Mistral-like decoder"
                )
            groups.append((f"model.layers.{index}.{norm_name}", norm, readers))
    # Every norm's output on all the calibration text, caught at its first reader's input in one float pass:
    # the change keeps the float function, so later norms see the same activations after earlier ones change.
    caught: dict[str, list[torch.Tensor]] = {name: [] for name, _, _ in groups}
    hooks = []
    for name, _, readers in groups:

        def catch(_module: Any, args: tuple, name: str = name) -> None:
            caught[name].append(args[0].detach().reshape(-1, args[0].shape[-1]).to(torch.float32))

        hooks.append(readers[0].register_forward_pre_hook(catch))
    try:
        with torch.no_grad():
            for ids in calibration:
                model(input_ids=ids.reshape(1, -1))
    finally:
        for hook in hooks:
            hook.remove()
    records = []
    with torch.no_grad():
        for name, norm, readers in groups:
            activations = torch.cat(caught.pop(name))
            choice, s, error, plain = search_scale(
                activations,
                [r.weight.to(torch.float32) for r in readers],
                norm.weight.to(torch.float32),
                block_size,
                grid,
            )
            norm.weight.div_(s.to(norm.weight.dtype))
            for reader in readers:
                reader.weight.mul_(s.to(reader.weight.dtype))
            records.append(
                {
                    "norm": name,
                    "choice": choice,
                    "int4_error": error,
                    "int4_error_unscaled": plain,
                    "scale_max_over_min": float(s.max() / s.min()),
                }
            )
    return records


class HfScaleMigration(Pass):
    """Move per-channel scale from each RMSNorm into the MatMuls after it (AWQ-style search on text), in float."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("HfModel",)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **text_params("Calibration text (the activations the scales are searched on)"),
            "block_size": PassConfigParam(
                type_=int,
                default_value=32,
                description="int4 block size the search scores against: the one the later int4 build uses "
                "(the model builder's default is 32).",
            ),
            "grid": PassConfigParam(
                type_=int,
                default_value=20,
                description="Steps of the exponent alpha from 0 to 1 (scale = mean |activation| ** alpha).",
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        check_text_params(config)
        if config.block_size < 16 or config.block_size & (config.block_size - 1):
            raise PassParamError(
                f"param 'block_size' is {config.block_size}; use a power of two from 16, such as 32",
                params="block_size",
            )
        if config.grid < 1:
            raise PassParamError(f"param 'grid' is {config.grid}; use at least 1, such as 20", params="grid")

    def _run_for_config(self, model: OliveModelHandler, config: BasePassConfig, output_model_path: str) -> Any:
        import numpy as np
        import torch

        from olive_passes_torch.hf_model import HfModelHandler

        owner = self.config_owner()
        if getattr(model, "adapters", None):
            raise PassRunError(
                f"{owner}: the model has LoRA adapters ({', '.join(model.adapters)}), whose weights would need the "
                "same scales; merge them first or run this pass on the base model"
            )
        source, output = Path(model.model_path), Path(output_model_path)
        samples, said = pass_samples(config, owner)
        tokenizer = model.tokenizer()
        if tokenizer is None:
            raise PassRunError(f"{owner}: '{source}' has no tokenizer to read the calibration text with")
        tokens = np.asarray(tokenizer("\n".join(samples))["input_ids"], dtype=np.int64)
        cut = windows(tokens, config.window, config.window, config.max_windows)
        if not cut:
            raise PassRunError(f"{owner}: {said} gives under 2 tokens; give more calibration text")
        # The handler's own loading: its load_kwargs (trust_remote_code...) and its clear errors.
        network = model.load_model("float32")
        try:
            records = migrate_scales(network, [torch.from_numpy(w) for w in cut], config.block_size, config.grid)
        except ValueError as error:
            raise PassRunError(f"{owner}: '{source}': {error}") from None
        moved = sum(r["choice"] != "alpha=0" for r in records)
        logger.info("%s: scale moved at %d of %d norms (%d calibration windows)", owner, moved, len(records), len(cut))
        output.mkdir(parents=True, exist_ok=True)
        # Float32: the scaled weights rounded back to bf16 would lose the exactness the change relies on.
        network.config.torch_dtype = torch.float32
        network.save_pretrained(str(output))
        for pattern in _TOKENIZER_FILES:
            for path in source.glob(pattern):
                if path.is_file() and not (output / path.name).exists():
                    shutil.copyfile(path, output / path.name)
        (output / _RECORD).write_text(json.dumps({"block_size": config.block_size, "norms": records}, indent=1))
        attributes = {**(model.model_attributes or {}), "scale_migration": {"norms_scaled": moved}}
        return HfModelHandler(str(output), model.task, model.load_kwargs, model.io_config, attributes)
