"""Tiny decoder LLM folders for testing generative-model passes and metrics; nothing is downloaded.

Each folder is what ``save_pretrained`` writes (``config.json``, ``model.safetensors``, ``tokenizer.json``...),
so ``HfModel``, transformers and onnxruntime-genai's model builder read it as they read a hub checkpoint:

- :func:`save_decoder`: a 2-layer Llama, Qwen2, Phi3 or Mistral with seeded random weights (a few hundred
  kB). Random weights give nearly flat next-token distributions, which hide quantization error: use it for
  plumbing (shapes, files, token-for-token equality), not for quality.
- :func:`trained_decoder`: one tiny Qwen2 trained here, seeded, for a fixed number of steps (well under a
  minute on two CPU cores) on English text that ships with Python (the standard library's docstrings,
  :func:`english_text`). Its logits are peaked, so int4 error shows in perplexity and agreement. Cached by
  content (text, settings, library versions) under a cache folder: built once per machine.

Its tokenizer is a byte-level BPE trained with ``tokenizers`` on the same text, saved with the model.

torch, transformers and tokenizers are imported inside the functions (``pip install olive-passes-genai``
installs them), so ``olive.testing`` itself stays light.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

__all__ = [
    "ARCHITECTURES",
    "calibration_text",
    "english_text",
    "held_out_text",
    "save_decoder",
    "save_tokenizer",
    "trained_decoder",
]

#: The architectures :func:`save_decoder` builds (transformers' ``model_type`` names).
ARCHITECTURES = ("llama", "qwen2", "phi3", "mistral")

_END = "<|endoftext|>"
# Standard-library modules whose docstrings make the English text: plain prose about programs, present in
# every CPython 3.11+ build, read in a fixed order so that the text (and so every model trained on it) is the
# same on every machine with the same Python.
_MODULES = (
    "argparse", "asyncio", "base64", "bisect", "calendar", "collections", "contextlib", "copy", "csv", "dataclasses",
    "datetime", "decimal", "difflib", "enum", "fractions", "functools", "glob", "gzip", "hashlib", "heapq", "hmac",
    "html", "http.client", "inspect", "io", "ipaddress", "itertools", "json", "logging", "mailbox", "math",
    "mimetypes", "operator", "optparse", "os", "pathlib", "pickle", "pprint", "queue", "random", "re", "sched",
    "secrets", "selectors", "shlex", "shutil", "signal", "smtplib", "socket", "sqlite3", "statistics", "string",
    "struct", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "timeit", "tokenize", "traceback",
    "types", "typing", "unittest", "urllib.parse", "urllib.request", "uuid", "warnings", "weakref", "zipfile",
)  # fmt: skip
_TRAINED_VERSION = 1


def _require(
    names: tuple[str, ...] = ("torch", "transformers", "tokenizers"),
    module: str = "olive.testing.decoders",
    install: str = "pip install olive-passes-genai",
) -> None:
    """An ImportError naming every one of ``names`` that does not import, and how to install them."""
    missing = []
    for name in names:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ImportError(
            f"{module} needs {', '.join(missing)}; install them with `{install}` "
            "(from this repository: pip install -e ./olive-passes-genai)"
        )


def english_text() -> str:
    """English prose that ships with Python: the docstrings of about seventy standard-library modules and of
    their public classes and functions, paragraphs joined by blank lines (about 250 kB)."""
    import importlib
    import inspect

    paragraphs: list[str] = []
    seen: set[str] = set()
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # a build without sqlite3 or the like: the text is shorter, still deterministic
            continue
        docs = [inspect.getdoc(module)]
        for attr in sorted(getattr(module, "__all__", None) or dir(module)):
            if attr.startswith("_"):
                continue
            obj = getattr(module, attr, None)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                docs.append(inspect.getdoc(obj))
        for doc in docs:
            for para in (doc or "").split("\n\n"):
                para = " ".join(para.split())
                # Prose only: code samples and one-word lines teach a tiny model little English.
                if len(para) > 60 and not para.startswith((">>>", "...")) and para not in seen:
                    seen.add(para)
                    paragraphs.append(para)
    return "\n\n".join(paragraphs)


def _split() -> tuple[str, str]:
    """Every tenth paragraph is held out: text to judge a model on that it was not trained (or calibrated) on."""
    paragraphs = english_text().split("\n\n")
    held = [p for i, p in enumerate(paragraphs) if i % 10 == 9]
    fit = [p for i, p in enumerate(paragraphs) if i % 10 != 9]
    return "\n\n".join(fit), "\n\n".join(held)


def calibration_text(max_chars: int | None = None) -> str:
    """The part of :func:`english_text` the trained decoder learns from (and calibration may use)."""
    text = _split()[0]
    return text[:max_chars] if max_chars else text


def held_out_text(max_chars: int | None = None) -> str:
    """The part of :func:`english_text` no model here is trained on: for perplexity and agreement checks."""
    text = _split()[1]
    return text[:max_chars] if max_chars else text


def _tokenizer(text: str, vocab_size: int) -> Any:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator([text], vocab_size=vocab_size, min_frequency=2, special_tokens=[_END])
    return PreTrainedTokenizerFast(
        tokenizer_object=trainer._tokenizer, bos_token=_END, eos_token=_END, unk_token=_END, pad_token=_END
    )


def save_tokenizer(folder: str | Path, vocab_size: int = 512, text: str | None = None) -> Any:
    """Train a byte-level BPE tokenizer (``vocab_size`` tokens, ``<|endoftext|>`` as bos/eos/pad) on ``text``
    (default: the first 100 kB of :func:`calibration_text`), save it in ``folder`` and return it."""
    _require()
    tokenizer = _tokenizer(text if text is not None else calibration_text(100_000), vocab_size)
    tokenizer.save_pretrained(str(folder))
    return tokenizer


def _config(
    arch: str,
    vocab_size: int,
    end_id: int,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    tied: bool = False,
    intermediate: int | None = None,
) -> Any:
    import transformers

    classes = {
        "llama": transformers.LlamaConfig,
        "qwen2": transformers.Qwen2Config,
        "phi3": transformers.Phi3Config,
        "mistral": transformers.MistralConfig,
    }
    if arch not in classes:
        raise ValueError(f"unknown architecture {arch!r}; use one of {', '.join(ARCHITECTURES)}")
    extra: dict[str, Any] = {}
    if arch == "phi3":
        # Equal to max_position_embeddings: plain RoPE (a longer context would mean LongRoPE scaling factors).
        extra["original_max_position_embeddings"] = 512
    return classes[arch](
        **extra,
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=intermediate or 2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=512,
        bos_token_id=end_id,
        eos_token_id=end_id,
        pad_token_id=end_id,
        # Untied by default: the model builder writes the LM head as its own MatMul, which int4 passes then quantize.
        tie_word_embeddings=tied,
    )


def save_decoder(
    folder: str | Path,
    arch: str = "qwen2",
    seed: int = 0,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    vocab_size: int = 512,
    tied_embeddings: bool = False,
    intermediate_size: int | None = None,
    dtype: str = "float32",
    max_shard_size: str | None = None,
) -> Path:
    """Save a tiny causal LM of ``arch`` (one of :data:`ARCHITECTURES`) with seeded random weights and its
    tokenizer in ``folder``; returns the folder. Same arguments, same weights.

    The shapes and files of real checkpoints: ``tied_embeddings`` makes the LM head the embedding (the builder then
    quantizes the pair as one); ``intermediate_size`` (default ``2 * hidden_size``) sets the MLP width, e.g. 352,
    which at block size 32 gives an odd number of int4 blocks per column, as Qwen2.5-0.5B's 896 does at 128;
    ``dtype`` (``"float32"``, ``"bfloat16"`` or ``"float16"``) is the type the weights are saved in, as hub
    checkpoints are saved in bf16; ``max_shard_size`` (e.g. ``"200KB"``) splits the weights into several
    ``model-0000N-of-0000M.safetensors`` files with their ``model.safetensors.index.json``."""
    _require()
    import torch
    import transformers

    folder = Path(folder)
    tokenizer = save_tokenizer(folder, vocab_size)
    config = _config(
        arch,
        len(tokenizer),
        tokenizer.eos_token_id,
        hidden_size,
        num_layers,
        num_heads,
        num_kv_heads,
        tied_embeddings,
        intermediate_size,
    )
    types = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype not in types:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(types)}")
    torch.manual_seed(seed)
    # Drawn in fp32 and then cast: the same seed gives the same weights, rounded, in every dtype.
    model = transformers.AutoModelForCausalLM.from_config(config).eval().to(types[dtype])
    model.config.torch_dtype = types[dtype]
    save = {"max_shard_size": max_shard_size} if max_shard_size else {}
    model.save_pretrained(str(folder), **save)
    return folder


# The trained decoder's recipe: part of its cache key.
_TRAINED = {
    "arch": "qwen2",
    "hidden_size": 128,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "vocab_size": 768,
    "seq_len": 64,
    "batch": 16,
    "steps": 220,
    "lr": 3e-3,
    "seed": 0,
    "threads": 2,
}


def default_cache_dir() -> Path:
    """``$OLIVE_TEST_CACHE`` when set, else ``olive-testing`` in the platform's user cache folder (which follows
    ``$XDG_CACHE_HOME`` on Linux), beside the engine's own cache."""
    env = os.environ.get("OLIVE_TEST_CACHE", "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("olive-testing", appauthor=False)


def trained_decoder(cache_dir: str | Path | None = None) -> Path:
    """The folder of a tiny Qwen2 (hidden 128, 2 layers, 768-token BPE) trained on :func:`calibration_text`.

    Built on first use (about 90-100 s on two cores, said on stderr while it trains), then served from
    ``cache_dir`` (default
    :func:`default_cache_dir`) under a name that hashes the text, the recipe and the torch/transformers/
    tokenizers versions. Written into a temporary folder and renamed into place, so concurrent callers never
    see half a model. The folder is shared: read it, never write into it.
    """
    _require()
    import tokenizers
    import torch
    import transformers

    text = calibration_text()
    key = hashlib.sha256(
        json.dumps(
            {
                "v": _TRAINED_VERSION,
                "recipe": _TRAINED,
                "text": hashlib.sha256(text.encode()).hexdigest(),
                "versions": [torch.__version__, transformers.__version__, tokenizers.__version__],
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()[:20]
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    final = root / f"trained-decoder-{key}"
    if (final / "model.safetensors").is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".trained-{uuid.uuid4().hex[:6]}-", dir=root))
    # A minute and more of silence reads as a hang: say what runs, once per machine.
    print(f"training the test kit's decoder once into {final} (about 90 s on two cores)", file=sys.stderr)
    try:
        _train_into(tmp, text)
        try:
            tmp.rename(final)
        except OSError:
            if not (final / "model.safetensors").is_file():
                raise
            # Another process finished the same model first; its copy is identical in content.
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _train_into(folder: Path, text: str) -> None:
    import torch
    import transformers

    recipe = _TRAINED
    tokenizer = _tokenizer(text, recipe["vocab_size"])
    tokenizer.save_pretrained(str(folder))
    config = _config(
        recipe["arch"],
        len(tokenizer),
        tokenizer.eos_token_id,
        recipe["hidden_size"],
        recipe["num_layers"],
        recipe["num_heads"],
        recipe["num_kv_heads"],
    )
    ids = torch.tensor(tokenizer(text)["input_ids"], dtype=torch.long)
    threads = torch.get_num_threads()
    torch.set_num_threads(recipe["threads"])
    try:
        torch.manual_seed(recipe["seed"])
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=0.0)
        generator = torch.Generator().manual_seed(recipe["seed"])
        seq, steps = recipe["seq_len"], recipe["steps"]
        for step in range(steps):
            starts = torch.randint(0, len(ids) - seq - 1, (recipe["batch"],), generator=generator)
            batch = torch.stack([ids[s : s + seq] for s in starts.tolist()])
            # Cosine decay: a short run still ends on a settled model.
            for group in optimizer.param_groups:
                group["lr"] = recipe["lr"] * 0.5 * (1 + torch.cos(torch.tensor(step / steps * torch.pi)).item())
            loss = model(input_ids=batch, labels=batch).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(str(folder))
    (folder / "olive_training.json").write_text(
        json.dumps({"recipe": recipe, "final_loss": round(float(loss.detach()), 4), "train_tokens": len(ids)}, indent=1)
    )
