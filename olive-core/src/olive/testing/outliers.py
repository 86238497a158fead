"""Decoders with "massive activation" input channels, made by a change that keeps the function.

Real decoders (Llama, Qwen, Phi) have a few hidden channels whose activations are tens to hundreds of times
larger than the rest, mostly carried by the RMSNorm weights in front of the attention and MLP MatMuls. Blockwise
int4 along those channels then rounds away the small weights that share a block with them. The tiny decoders of
:mod:`olive.testing.decoders` have no such channels; :func:`inject_outliers` gives them some without changing
what they compute: ``channels`` entries of each such norm's weight are multiplied by ``scale`` and the matching
input columns of every Linear that reads the norm's output are divided by it, so
``W @ (g * x) == (W / s) @ ((g * s) * x)`` channel by channel.

Norms changed: each layer's ``input_layernorm`` (read by q, k and v, or a fused qkv) and
``post_attention_layernorm`` (read by gate and up, or a fused gate_up). The final norm feeds the LM head, which
real checkpoints do not show outliers in front of; it is left alone.

torch and transformers are imported inside the function (``pip install olive-passes-genai`` installs them).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from olive.testing.decoders import _require

__all__ = ["NORM_READERS", "inject_outliers", "outlier_channels"]

#: For each norm that :func:`inject_outliers` scales, the attribute paths (under a decoder layer) of the
#: Linears that read its output, separate or fused, as the architectures of olive.testing.decoders name them.
NORM_READERS: dict[str, tuple[str, ...]] = {
    "input_layernorm": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.qkv_proj"),
    "post_attention_layernorm": ("mlp.gate_proj", "mlp.up_proj", "mlp.gate_up_proj"),
}

# Tokenizer files are copied as they are; the weights, config and generation config come from save_pretrained.
_COPIED = ("tokenizer*", "special_tokens_map.json", "vocab.json", "merges.txt", "added_tokens.json")


def outlier_channels(hidden_size: int, channels: int = 16, seed: int = 0) -> list[int]:
    """The ``channels`` hidden channels (sorted) that :func:`inject_outliers` scales for ``seed``: drawn once
    per model, the same in every layer, as real massive activations sit in the same few dimensions throughout."""
    import torch

    if not 0 < channels <= hidden_size:
        raise ValueError(f"channels is {channels}; use 1 to the hidden size ({hidden_size})")
    generator = torch.Generator().manual_seed(seed)
    return sorted(torch.randperm(hidden_size, generator=generator)[:channels].tolist())


def _get(module: Any, path: str) -> Any:
    for name in path.split("."):
        module = getattr(module, name, None)
        if module is None:
            return None
    return module


def inject_outliers(
    source: str | Path,
    folder: str | Path,
    channels: int = 16,
    scale: float = 100.0,
    seed: int = 0,
) -> Path:
    """Save the Hugging Face decoder in ``source`` to ``folder`` (new or empty) with outlier channels: in every
    layer, ``channels`` entries of ``input_layernorm`` and ``post_attention_layernorm`` (the channels of
    :func:`outlier_channels`) times ``scale``, and the matching input columns of the Linears reading each norm
    divided by ``scale``. PyTorch outputs are unchanged up to float rounding. Saved in float32 (a bf16 save would
    round the divided weights); returns the folder."""
    _require(("torch", "transformers"), "olive.testing.outliers")
    import torch
    import transformers

    source, folder = Path(source), Path(folder)
    if not (source / "config.json").is_file():
        raise FileNotFoundError(f"{source} has no config.json: pass a Hugging Face decoder folder as source")
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty: pass a new or empty folder to write the changed decoder into")
    if not scale > 0:
        raise ValueError(f"scale is {scale}; use a positive factor such as 100")
    model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32).eval()
    layers = _get(model, "model.layers")
    if layers is None:
        raise ValueError(f"{source}: {type(model).__name__} has no model.layers; use a Llama- or Qwen2-like decoder")
    picked = torch.tensor(outlier_channels(model.config.hidden_size, channels, seed))
    with torch.no_grad():
        for index, layer in enumerate(layers):
            for norm_name, reader_paths in NORM_READERS.items():
                norm = _get(layer, norm_name)
                readers = [r for r in (_get(layer, p) for p in reader_paths) if r is not None]
                if norm is None or not readers:
                    raise ValueError(
                        f"{source}: layer {index} has no {norm_name} followed by one of {', '.join(reader_paths)}; "
                        "use a Llama-, Qwen2-, Phi3- or Mistral-shaped decoder"
                    )
                norm.weight[picked] *= scale
                for linear in readers:
                    linear.weight[:, picked] /= scale
    folder.mkdir(parents=True, exist_ok=True)
    model.config.torch_dtype = torch.float32
    model.save_pretrained(str(folder))
    for pattern in _COPIED:
        for path in source.glob(pattern):
            if path.is_file() and not (folder / path.name).exists():
                shutil.copyfile(path, folder / path.name)
    return folder
