"""Tiny, randomly initialized Hugging Face models (2 layers) built and saved by the tests: nothing is downloaded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Nothing is downloaded at test time: every model and tokenizer is a local folder.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

SENTENCES = [
    "the cat sat on the mat",
    "a dog ran in the park with a ball",
    "hello world this is a test",
    "rain is expected in the north on thursday",
    "she tuned the violin before the concert",
    "the bridge was closed for repairs after the storm",
]


def _bert_tokenizer():
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    trainer = BertWordPieceTokenizer(lowercase=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer.train_from_iterator(SENTENCES * 3, vocab_size=200, min_frequency=1, special_tokens=specials)
    return BertTokenizerFast(tokenizer_object=trainer._tokenizer)


def _gpt2_tokenizer():
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2TokenizerFast

    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(SENTENCES * 3, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    end = "<|endoftext|>"
    return GPT2TokenizerFast(tokenizer_object=trainer._tokenizer, bos_token=end, eos_token=end, unk_token=end)


def save_bert(folder: Path, head: str = "base", seed: int = 0, num_labels: int = 3) -> Path:
    """A 2-layer BERT (hidden 32, 2 heads) with ``head`` ``base``, ``sequence``, ``token`` or ``masked``, and its
    tokenizer, saved in ``folder``."""
    import torch
    import transformers

    tokenizer = _bert_tokenizer()
    config = transformers.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=num_labels,
        pad_token_id=tokenizer.pad_token_id,
    )
    classes = {
        "base": transformers.BertModel,
        "sequence": transformers.BertForSequenceClassification,
        "token": transformers.BertForTokenClassification,
        "masked": transformers.BertForMaskedLM,
    }
    torch.manual_seed(seed)
    model = classes[head](config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_gpt2(folder: Path, seed: int = 0) -> Path:
    """A 2-layer GPT-2 language model (hidden 32, 2 heads) and its tokenizer, saved in ``folder``."""
    import torch
    import transformers

    tokenizer = _gpt2_tokenizer()
    end = tokenizer.eos_token_id
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=end, eos_token_id=end
    )
    torch.manual_seed(seed)
    transformers.GPT2LMHeadModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def bert_dir(tmp_path_factory) -> Path:
    """A tiny BertModel (feature-extraction) and its tokenizer; tests only read it."""
    return save_bert(tmp_path_factory.mktemp("bert") / "model")


@pytest.fixture(scope="session")
def bert_classifier_dir(tmp_path_factory) -> Path:
    return save_bert(tmp_path_factory.mktemp("bert-sequence") / "model", head="sequence")


@pytest.fixture(scope="session")
def bert_token_dir(tmp_path_factory) -> Path:
    return save_bert(tmp_path_factory.mktemp("bert-token") / "model", head="token")


@pytest.fixture(scope="session")
def bert_masked_dir(tmp_path_factory) -> Path:
    return save_bert(tmp_path_factory.mktemp("bert-masked") / "model", head="masked")


@pytest.fixture(scope="session")
def gpt2_dir(tmp_path_factory) -> Path:
    return save_gpt2(tmp_path_factory.mktemp("gpt2") / "model")


@pytest.fixture
def cpu():
    from olive.hardware import DEFAULT_CPU_ACCELERATOR

    return DEFAULT_CPU_ACCELERATOR


@pytest.fixture
def conversion():
    """The OnnxConversion class as the engine finds it: through the olive.passes entry point."""
    from olive.plugins.registry import get_registry

    return get_registry().get_pass_class("OnnxConversion")
