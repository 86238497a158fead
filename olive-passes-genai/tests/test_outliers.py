"""olive.testing.outliers: a decoder given massive-activation channels computes what it computed before, and its
norm weights really carry the outliers."""

from __future__ import annotations

import pytest
from safetensors.numpy import load_file

from olive.testing.decoders import held_out_text, save_decoder
from olive.testing.outliers import NORM_READERS, inject_outliers, outlier_channels


def _logits(folder, text: str):
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ids = torch.tensor([tokenizer(text)["input_ids"][:128]])
    with torch.no_grad():
        return model(input_ids=ids).logits[0]


@pytest.fixture(scope="module")
def outlier_dir(trained_dir, tmp_path_factory):
    return inject_outliers(trained_dir, tmp_path_factory.mktemp("outliers") / "model")


def test_the_changed_trained_decoder_gives_the_same_logits(trained_dir, outlier_dir):
    import torch

    text = held_out_text(3_000)
    before, after = _logits(trained_dir, text), _logits(outlier_dir, text)
    # fp32 rounding of x100 and /100 only: far below the logits' spread of several units.
    assert torch.allclose(before, after, rtol=1e-4, atol=1e-4), float((before - after).abs().max())
    assert float(before.std()) > 1.0
    assert torch.equal(before.argmax(-1), after.argmax(-1))


def test_the_norm_weights_carry_the_outliers_and_the_readers_are_divided(trained_dir, outlier_dir):
    old, new = load_file(trained_dir / "model.safetensors"), load_file(outlier_dir / "model.safetensors")
    picked = outlier_channels(128)
    assert len(picked) == 16
    others = [c for c in range(128) if c not in picked]
    for layer in (0, 1):
        for norm, readers in NORM_READERS.items():
            key = f"model.layers.{layer}.{norm}.weight"
            # x100 exactly where chosen, untouched elsewhere: the outlier channels dwarf the rest.
            assert abs(new[key][picked] / old[key][picked] - 100).max() < 1e-4
            assert (new[key][others] == old[key][others]).all()
            assert abs(new[key][picked]).min() > 10 * abs(new[key][others]).max()
            for reader in readers:
                weight = f"model.layers.{layer}.{reader}.weight"
                if weight not in old:  # the fused name of another architecture
                    continue
                assert abs(new[weight][:, picked] * 100 / old[weight][:, picked] - 1).max() < 1e-5
                assert (new[weight][:, others] == old[weight][:, others]).all()
    # The final norm and the LM head are left as they were.
    assert (new["model.norm.weight"] == old["model.norm.weight"]).all()
    assert (new["lm_head.weight"] == old["lm_head.weight"]).all()
    assert (outlier_dir / "tokenizer.json").read_bytes() == (trained_dir / "tokenizer.json").read_bytes()


@pytest.mark.parametrize("arch", ["llama", "phi3"])
def test_other_architectures_including_fused_projections_keep_their_function(arch, tmp_path):
    import torch

    source = save_decoder(tmp_path / "src", arch)
    changed = inject_outliers(source, tmp_path / "out", channels=4, scale=50.0, seed=1)
    text = held_out_text(1_000)
    before, after = _logits(source, text), _logits(changed, text)
    assert torch.allclose(before, after, rtol=1e-4, atol=1e-5)
    norm = load_file(changed / "model.safetensors")["model.layers.0.input_layernorm.weight"]
    assert (abs(norm) > 10).sum() == 4


def test_bad_input_is_named(trained_dir, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        inject_outliers(trained_dir, tmp_path / "full")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    with pytest.raises(FileNotFoundError, match=r"no config\.json"):
        inject_outliers(tmp_path / "full", tmp_path / "new")
    with pytest.raises(ValueError, match="channels is 0"):
        inject_outliers(trained_dir, tmp_path / "zero", channels=0)
