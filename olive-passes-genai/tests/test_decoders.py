"""olive.testing.decoders: tiny decoder folders transformers loads, seeded; the trained one is cached by content
and its logits are far from flat."""

from __future__ import annotations

import math
import subprocess
import sys
import time

import pytest

from olive.testing.decoders import ARCHITECTURES, held_out_text, save_decoder, trained_decoder


def _perplexity(folder, text: str) -> float:
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ids = torch.tensor([tokenizer(text)["input_ids"][:512]])
    with torch.no_grad():
        losses = [model(input_ids=ids[:, s : s + 128], labels=ids[:, s : s + 128]).loss for s in range(0, 512, 128)]
    return math.exp(float(torch.stack(losses).mean()))


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_each_architecture_is_a_small_folder_that_transformers_loads_and_runs(arch, tmp_path):
    import torch
    import transformers

    folder = save_decoder(tmp_path / arch, arch)
    size = sum(p.stat().st_size for p in folder.iterdir())
    assert 100_000 < size < 1_000_000, size
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    assert model.config.model_type == arch
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ids = tokenizer("The module provides functions for paths.")["input_ids"]
    assert tokenizer.decode(ids) == "The module provides functions for paths."
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits
    assert logits.shape == (1, len(ids), len(tokenizer))


def test_the_same_seed_gives_the_same_weights_and_another_seed_others(tmp_path):
    first = save_decoder(tmp_path / "a", "llama", seed=3)
    again = save_decoder(tmp_path / "b", "llama", seed=3)
    other = save_decoder(tmp_path / "c", "llama", seed=4)
    weights = [(f / "model.safetensors").read_bytes() for f in (first, again, other)]
    assert weights[0] == weights[1] != weights[2]
    assert (first / "tokenizer.json").read_bytes() == (again / "tokenizer.json").read_bytes()


def test_the_trained_decoder_is_served_from_its_cache_and_is_far_better_than_random(trained_dir, qwen2_dir):
    start = time.perf_counter()
    assert trained_decoder(trained_dir.parent) == trained_dir
    assert time.perf_counter() - start < 5  # a cache hit: no training
    text = held_out_text(20_000)
    trained, random = _perplexity(trained_dir, text), _perplexity(qwen2_dir, text)
    # Random weights give nearly uniform next-token distributions (perplexity near the vocabulary size).
    assert random > 300
    assert trained < random / 3, (trained, random)


def test_held_out_text_is_not_in_the_training_text():
    from olive.testing.decoders import calibration_text

    held = held_out_text().split("\n\n")
    fit = set(calibration_text().split("\n\n"))
    assert len(held) > 50 and not fit & set(held)


def test_without_torch_the_kit_names_the_package_to_install():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from olive.testing.decoders import save_decoder\n"
        "try:\n    save_decoder('unused')\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "needs torch" in out and "pip install olive-passes-genai" in out


def test_pass_authors_get_the_kit_from_olive_testing():
    import olive.testing
    from olive.testing import decoders

    assert olive.testing.save_decoder is decoders.save_decoder
    assert olive.testing.trained_decoder is decoders.trained_decoder
    assert olive.testing.held_out_text is decoders.held_out_text


def test_the_decoder_test_kit_imports_torch_only_when_called():
    # olive-core ships the kit; importing it must cost a core user nothing.
    import subprocess
    import sys

    probe = (
        "import sys, olive.testing.decoders; print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
