"""Tiny decoders built (and one trained) by olive.testing.decoders, and their onnxruntime-genai builds: nothing is
downloaded. Session-scoped: tests only read them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

# Nothing is downloaded at test time: every model and tokenizer is a local folder.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(scope="session")
def cpu():
    from olive.hardware import DEFAULT_CPU_ACCELERATOR

    return DEFAULT_CPU_ACCELERATOR


@pytest.fixture(scope="session")
def qwen2_dir(tmp_path_factory) -> Path:
    from olive.testing.decoders import save_decoder

    return save_decoder(tmp_path_factory.mktemp("qwen2") / "model", "qwen2")


@pytest.fixture(scope="session")
def trained_dir(tmp_path_factory) -> Path:
    """The trained tiny Qwen2, from $OLIVE_TEST_CACHE (the tox env sets it) or a folder of this session."""
    from olive.testing.decoders import trained_decoder

    cache = os.environ.get("OLIVE_TEST_CACHE") or tmp_path_factory.mktemp("decoder-cache")
    return trained_decoder(cache)


@pytest.fixture(scope="session")
def held_out_file(tmp_path_factory) -> Path:
    """Held-out English text (never trained on), one paragraph per line."""
    from olive.testing.decoders import held_out_text

    path = tmp_path_factory.mktemp("text") / "held_out.txt"
    path.write_text(held_out_text(30_000).replace("\n\n", "\n") + "\n", encoding="utf-8")
    return path


def build(folder: Path, out: Path, accelerator: Any, **params: Any) -> Any:
    """The ModelBuilder pass, found through its entry point, run on a HfModel folder."""
    from olive.model.types import handler_from_config
    from olive.plugins.registry import get_registry

    model = handler_from_config({"type": "HfModel", "model_path": str(folder)})
    builder = get_registry().get_pass_class("ModelBuilder")
    return builder(accelerator, params).run(model, str(out))


@pytest.fixture(scope="session")
def trained_fp32(trained_dir, tmp_path_factory, cpu):
    return build(trained_dir, tmp_path_factory.mktemp("trained-fp32") / "out", cpu, precision="fp32")


@pytest.fixture(scope="session")
def qwen2_fp32(qwen2_dir, tmp_path_factory, cpu):
    return build(qwen2_dir, tmp_path_factory.mktemp("qwen2-fp32") / "out", cpu, precision="fp32")


def torch_greedy(folder: Path, ids: list[int], new_tokens: int) -> list[int]:
    """What transformers generates greedily from ``ids``, loaded independently of the passes."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
    return out[0, len(ids) :].tolist()


def genai_greedy(folder: Path, text: str, new_tokens: int) -> tuple[list[int], list[int]]:
    """``(prompt ids, greedy tokens)`` as onnxruntime-genai serves the folder, stopping only at the length."""
    import onnxruntime_genai as og

    model = og.Model(str(folder))
    ids = list(og.Tokenizer(model).encode(text))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + new_tokens, min_length=len(ids) + new_tokens, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens(ids)
    out = []
    while not generator.is_done():
        generator.generate_next_token()
        out.append(int(generator.get_next_tokens()[0]))
    return [int(i) for i in ids], out


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, indent=1))
    return path


def olive_run(config: Path, *args: str) -> Any:
    from olive.cli.main import cli

    return CliRunner().invoke(cli, ["run", str(config), *args], catch_exceptions=False)
