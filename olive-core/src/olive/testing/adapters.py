"""PEFT LoRA adapters for the tiny decoders of :mod:`olive.testing.decoders`; nothing is downloaded.

:func:`save_adapter` trains a LoRA adapter (``peft``) on a decoder folder for a few seconds, seeded, on text the
base never saw (a slice of :func:`adapter_text` that depends on the seed), so that its greedy tokens really
differ from the base's (and from another seed's) without collapsing into one repeated token. The folder is what
``PeftModel.save_pretrained`` writes (``adapter_config.json``, ``adapter_model.safetensors``), with
``base_model_name_or_path`` set to the base folder, so ``HfModel``'s ``adapter_path`` / ``adapters`` and
onnxruntime-genai's builder read it as they read a fine-tune from the hub.

torch, transformers and peft are imported inside the functions (``pip install olive-passes-genai peft``), so
``olive.testing`` itself stays light.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from olive.testing.decoders import _require as require
from olive.testing.decoders import held_out_text

__all__ = ["DEFAULT_TARGETS", "adapter_text", "merged_greedy", "save_adapter"]

#: The modules :func:`save_adapter` adapts by default: the attention projections every architecture here has.
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


def _require() -> None:
    require(("torch", "transformers", "peft"), "olive.testing.adapters", "pip install olive-passes-genai peft")


def adapter_text(seed: int = 0, max_chars: int = 20_000) -> str:
    """Text for an adapter to learn: every third held-out paragraph, starting at ``seed % 3`` (so adapters of
    different seeds learn different text, and none learns what the trained decoder learnt)."""
    paragraphs = held_out_text().split("\n\n")
    picked = [p for i, p in enumerate(paragraphs) if i % 3 == seed % 3]
    return "\n\n".join(picked)[:max_chars]


def save_adapter(
    folder: str | Path,
    base: str | Path,
    seed: int = 0,
    rank: int = 8,
    alpha: int = 16,
    target_modules: Sequence[str] = DEFAULT_TARGETS,
    steps: int = 30,
    lr: float = 1e-3,
    text: str | None = None,
) -> Path:
    """Train a LoRA adapter of ``rank`` on the decoder folder ``base`` and save it in ``folder``; returns the folder.

    ``steps`` AdamW steps at ``lr`` on ``text`` (default :func:`adapter_text` of ``seed``), batches of 8 windows of
    32 tokens, on two threads: a few seconds for the decoders of :func:`~olive.testing.decoders.save_decoder`.
    Same arguments, same weights.
    """
    _require()
    import peft
    import torch
    import transformers

    folder, base = Path(folder), Path(base)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    ids = torch.tensor(tokenizer(text if text is not None else adapter_text(seed))["input_ids"], dtype=torch.long)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(base), local_files_only=True, attn_implementation="eager"
        )
        config = peft.LoraConfig(
            r=rank, lora_alpha=alpha, target_modules=list(target_modules), lora_dropout=0.0, task_type="CAUSAL_LM"
        )
        model = peft.get_peft_model(model, config)
        model.train()
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
        generator = torch.Generator().manual_seed(seed)
        seq = 32
        for _ in range(steps):
            starts = torch.randint(0, len(ids) - seq - 1, (8,), generator=generator)
            batch = torch.stack([ids[s : s + seq] for s in starts.tolist()])
            loss = model(input_ids=batch, labels=batch).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    # The base as a path (peft writes what from_pretrained was given): HfModel compares it with its model_path.
    config_path = folder / "adapter_config.json"
    written = json.loads(config_path.read_text(encoding="utf-8"))
    written["base_model_name_or_path"] = str(base)
    config_path.write_text(json.dumps(written, indent=2), encoding="utf-8")
    return folder


def merged_greedy(base: str | Path, adapter: str | Path | None, ids: Sequence[int], new_tokens: int) -> list[int]:
    """What transformers generates greedily from ``ids`` with ``adapter`` merged into ``base`` (peft's
    ``merge_and_unload``); the base alone when ``adapter`` is None. Loaded independently of any pass."""
    _require()
    import peft
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True)
    if adapter is not None:
        model = peft.PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    model.eval()
    with torch.no_grad():
        out = model.generate(
            torch.tensor([list(ids)]), max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False
        )
    return out[0, len(ids) :].tolist()
