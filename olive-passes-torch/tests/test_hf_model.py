"""HfModel: fields with Olive's keys, checks that name the field, io_config inferred per task, content hash."""

from __future__ import annotations

import shutil

import pytest

from olive.cache.store import hash_model
from olive.exceptions import ModelLoadError, PassConfigError, WorkflowConfigError
from olive.model.types import get_model_type, handler_from_config, model_from_json
from olive_passes_torch.hf_model import HfModelHandler
from olive_passes_torch.torch_model import content_digest, labelled, model_files


def _config_error(data, base_dir, owner, reason):
    with pytest.raises(WorkflowConfigError) as caught:
        handler_from_config(data, base_dir=base_dir).validate()
    assert caught.value.owner == owner, caught.value
    assert reason in caught.value.reason, caught.value.reason
    return caught.value


def test_the_type_comes_from_this_distribution_and_round_trips(bert_dir, tmp_path):
    assert get_model_type("HfModel") is HfModelHandler
    shutil.copytree(bert_dir, tmp_path / "m")
    handler = handler_from_config(
        {
            "type": "HfModel",
            "config": {"model_path": "m", "task": "sentence-similarity", "load_kwargs": {"dtype": "float32"}},
        },
        base_dir=tmp_path,
    )
    assert handler.model_path == str(tmp_path / "m") and handler.task == "feature-extraction"
    again = model_from_json(handler.to_json())
    assert isinstance(again, HfModelHandler) and again.to_json() == handler.to_json()
    assert handler.size_on_disk > sum(p.stat().st_size for p in (tmp_path / "m").glob("*.safetensors")) > 0


@pytest.mark.parametrize(
    ("task", "expected_inputs", "expected_outputs"),
    [
        (
            "feature-extraction",
            ["input_ids", "attention_mask", "token_type_ids"],
            {"last_hidden_state": {0: "batch_size", 1: "sequence_length"}},
        ),
        ("text-classification", ["input_ids", "attention_mask", "token_type_ids"], {"logits": {0: "batch_size"}}),
        (
            "fill-mask",
            ["input_ids", "attention_mask", "token_type_ids"],
            {"logits": {0: "batch_size", 1: "sequence_length"}},
        ),
        (
            "token-classification",
            ["input_ids", "attention_mask", "token_type_ids"],
            {"logits": {0: "batch_size", 1: "sequence_length"}},
        ),
    ],
)
def test_io_config_is_inferred_from_config_and_tokenizer(bert_dir, task, expected_inputs, expected_outputs):
    io = HfModelHandler(str(bert_dir), task=task).io_config_for()
    assert list(io.input_names) == expected_inputs
    assert list(io.output_names) == list(expected_outputs)
    assert io.input_types == ("int64",) * len(expected_inputs)
    assert {k: v for k, v in io.dynamic_axes.items() if k in expected_outputs} == expected_outputs
    assert all(io.dynamic_axes[n] == {0: "batch_size", 1: "sequence_length"} for n in expected_inputs)


def test_a_decoders_io_config_has_no_past_key_values(gpt2_dir):
    io = HfModelHandler(str(gpt2_dir), task="text-generation").io_config_for()
    assert list(io.input_names) == ["input_ids", "attention_mask"]  # the GPT-2 tokenizer's inputs
    assert list(io.output_names) == ["logits"]


def test_the_task_defaults_to_what_the_checkpoint_was_saved_for(bert_classifier_dir, gpt2_dir):
    assert HfModelHandler(str(bert_classifier_dir)).resolved_task == "text-classification"
    assert HfModelHandler(str(gpt2_dir)).resolved_task == "text-generation"


def test_a_folder_that_is_not_a_model(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello")
    _config_error({"type": "HfModel", "model_path": "notes"}, tmp_path, "input_model.model_path", "no config.json")
    (tmp_path / "file.bin").write_bytes(b"x")
    _config_error({"type": "HfModel", "model_path": "file.bin"}, tmp_path, "input_model.model_path", "is a file")
    _config_error({"type": "HfModel", "model_path": "gone"}, tmp_path, "input_model.model_path", "does not exist")
    error = _config_error(
        {"type": "HfModel", "model_path": "sentence-transformers/all-MiniLM-L6-v2"},
        tmp_path,
        "input_model.model_path",
        "not downloaded from the Hugging Face hub",
    )
    assert "hf download " in error.reason and "huggingface-cli" not in error.reason


def test_a_model_folder_without_weights(bert_dir, tmp_path):
    shutil.copytree(bert_dir, tmp_path / "m", ignore=shutil.ignore_patterns("*.safetensors"))
    _config_error({"type": "HfModel", "model_path": "m"}, tmp_path, "input_model.model_path", "no PyTorch weights")


def test_a_task_the_model_cannot_do_names_the_tasks_it_can(gpt2_dir, tmp_path):
    error = _config_error(
        {"type": "HfModel", "model_path": str(gpt2_dir), "task": "fill-mask"}, tmp_path, "input_model.task", "cannot do"
    )
    assert "feature-extraction, text-classification, token-classification, text-generation" in error.reason
    _config_error(
        {"type": "HfModel", "model_path": str(gpt2_dir), "task": "text-generation-with-past"},
        tmp_path,
        "input_model.task",
        "use 'text-generation'",
    )
    _config_error(
        {"type": "HfModel", "model_path": str(gpt2_dir), "task": "text-classificaton"},
        tmp_path,
        "input_model.task",
        "did you mean 'text-classification'",
    )


def test_a_task_the_checkpoint_has_no_weights_for_fails_before_export(bert_dir, tmp_path, cpu, conversion):
    model = HfModelHandler(str(bert_dir), task="text-classification")
    # Found when the model is checked (validate, which the pass calls first): the checkpoint's tensor names against
    # the task's model built on the meta device, before anything is loaded or written.
    with pytest.raises(WorkflowConfigError) as caught:
        conversion(cpu, {}).run(model, str(tmp_path / "out"))
    assert caught.value.owner == "input_model.task"
    assert "classifier" in caught.value.reason and "'feature-extraction'" in caught.value.reason
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []  # nothing written


def test_io_config_that_does_not_match_forward(bert_dir, tmp_path):
    error = _config_error(
        {"type": "HfModel", "model_path": str(bert_dir), "io_config": {"input_names": ["input_ids", "pixel_values"]}},
        tmp_path,
        "input_model.io_config.input_names",
        "'pixel_values' not in the model's forward signature",
    )
    assert "input_ids, attention_mask, token_type_ids" in error.reason


@pytest.mark.parametrize(
    ("fields", "owner", "reason"),
    [
        ({"adapter_path": "lora"}, "input_model.adapter_path", "is not a folder"),
        ({"adapters": ["lora"]}, "input_model.adapters", "an object of adapter names"),
        ({"adapters": {"a/b": "lora"}}, "input_model.adapters.a/b", "not usable as a file name"),
        ({"model_pth": "x"}, "input_model.model_pth", "did you mean 'model_path'"),
        ({"load_kwargs": {"torch_dtype": "int3"}}, "input_model.load_kwargs.torch_dtype", "float32, float16, bfloat16"),
        (
            {"load_kwargs": {"quantization_method": "bitsandbytes"}},
            "input_model.load_kwargs.quantization_method",
            "quantize the ONNX",
        ),
        ({"load_kwargs": {"device_map": "auto"}}, "input_model.load_kwargs.device_map", "CPU"),
        ({"io_config": {"input_names": "input_ids"}}, "input_model.io_config.input_names", "a list of names"),
        ({"io_config": {"kv_cache": True}}, "input_model.io_config.kv_cache", "past key values"),
    ],
)
def test_fields_are_checked_by_name(bert_dir, tmp_path, fields, owner, reason):
    _config_error({"type": "HfModel", "model_path": str(bert_dir), **fields}, tmp_path, owner, reason)


def test_content_hash_follows_weights_settings_and_versions(bert_dir, tmp_path):
    from conftest import save_bert

    shutil.copytree(bert_dir, tmp_path / "a")
    first = HfModelHandler(str(tmp_path / "a"))
    assert first.content_hash() == HfModelHandler(str(bert_dir)).content_hash()  # where the folder is does not matter
    assert hash_model(first) == first.content_hash()
    assert HfModelHandler(str(tmp_path / "a"), task="feature-extraction").content_hash() != first.content_hash()
    assert HfModelHandler(str(tmp_path / "a"), load_kwargs={"dtype": "float16"}).content_hash() != first.content_hash()
    (tmp_path / "a" / "README.md").write_text("notes do not change the model")
    assert HfModelHandler(str(tmp_path / "a")).content_hash() == first.content_hash()
    save_bert(tmp_path / "b", seed=1)  # other weights, same config
    assert HfModelHandler(str(tmp_path / "b")).content_hash() != first.content_hash()

    files = labelled(model_files(tmp_path / "a"), tmp_path / "a")
    base = content_digest("HfModel", files, {}, {"torch": "2.13.0", "transformers": "5.0.0"})
    assert content_digest("HfModel", files, {}, {"torch": "2.13.0", "transformers": "5.1.0"}) != base
    assert content_digest("HfModel", files, {}, {"torch": "2.14.0", "transformers": "5.0.0"}) != base


def test_loading_the_handler_and_checking_fields_import_no_torch(bert_dir):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from olive.model.types import handler_from_config\n"
        f"h = handler_from_config({{'type': 'HfModel', 'model_path': {str(bert_dir)!r}}}, base_dir=Path('.'))\n"
        "h.content_hash(); h.to_json()\n"
        "import olive_passes_torch.conversion, olive_passes_torch.pytorch_model, olive_passes_torch.text_data\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers', 'onnxruntime'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_what_onnxruntime_would_be_asked_for_is_a_clear_error(bert_dir):
    model = HfModelHandler(str(bert_dir))
    for call in (model.get_io_config, model.prepare_session):
        with pytest.raises(ModelLoadError, match=r"runs in PyTorch, not onnxruntime.*OnnxConversion"):
            call()


def _lora_folder(folder, shapes, **config):
    """A PEFT LoRA folder written as PeftModel.save_pretrained writes one (peft is not needed to read it)."""
    import json

    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True)
    save_file({name: torch.zeros(shape) for name, shape in shapes.items()}, str(folder / "adapter_model.safetensors"))
    written = {"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["query"], **config}
    (folder / "adapter_config.json").write_text(json.dumps(written))
    return folder


_QUERY = "base_model.model.encoder.layer.0.attention.self.query"


def test_adapters_are_checked_against_the_base_before_anything_runs(bert_dir, tmp_path):
    good = _lora_folder(tmp_path / "good", {f"{_QUERY}.lora_A.weight": [4, 32], f"{_QUERY}.lora_B.weight": [32, 4]})
    model = handler_from_config(
        {"type": "HfModel", "model_path": str(bert_dir), "adapter_path": "good", "adapters": {"second": "good"}},
        base_dir=tmp_path,
    )
    model.validate()
    assert model.adapters == {"good": str(good), "second": str(good)} and model.adapter_path == str(good)
    assert model_from_json(model.to_json()).adapters == model.adapters
    assert model.content_hash() != HfModelHandler(str(bert_dir)).content_hash()
    # An adapter is not loaded into the PyTorch model: a pass that loads it says so rather than drop the adapter.
    with pytest.raises(PassConfigError, match="ModelBuilder"):
        model.load_model()

    wide = _lora_folder(tmp_path / "wide", {f"{_QUERY}.lora_A.weight": [4, 48], f"{_QUERY}.lora_B.weight": [48, 4]})
    error = _config_error(
        {"type": "HfModel", "model_path": str(bert_dir), "adapters": {"wide": str(wide)}},
        tmp_path,
        "input_model.adapters.wide",
        "adapter 'wide': module encoder.layer.0.attention.self.query: lora_A is [4, 48]",
    )
    assert "[32, 32]" in error.reason and "[4, 32]" in error.reason
    elsewhere = _lora_folder(tmp_path / "far", {"base_model.model.decoder.q.lora_A.weight": [4, 32]})
    _config_error(
        {"type": "HfModel", "model_path": str(bert_dir), "adapters": {"far": str(elsewhere)}},
        tmp_path,
        "input_model.adapters.far",
        "module decoder.q is not in the base model",
    )
    dora = _lora_folder(tmp_path / "dora", {f"{_QUERY}.lora_A.weight": [4, 32]}, use_dora=True)
    _config_error(
        {"type": "HfModel", "model_path": str(bert_dir), "adapters": {"d": str(dora)}},
        tmp_path,
        "input_model.adapters.d",
        "DoRA",
    )
    extra = _lora_folder(
        tmp_path / "extra", {f"{_QUERY}.lora_A.weight": [4, 32], "base_model.model.pooler.dense.weight": [32, 32]}
    )
    _config_error(
        {"type": "HfModel", "model_path": str(bert_dir), "adapters": {"e": str(extra)}},
        tmp_path,
        "input_model.adapters.e",
        "other than LoRA A/B",
    )
    (tmp_path / "empty").mkdir()
    _config_error(
        {"type": "HfModel", "model_path": str(bert_dir), "adapters": {"x": "empty"}},
        tmp_path,
        "input_model.adapters.x",
        "no adapter_config.json",
    )


def test_an_adapter_folder_without_files_is_checked_even_after_the_base_alone_was(bert_dir, tmp_path, monkeypatch):
    # A check of the base alone is recorded; the same base with an empty adapter folder is another model.
    monkeypatch.setenv("OLIVE_HF_CHECKS_DIR", str(tmp_path / "records"))
    handler_from_config({"type": "HfModel", "model_path": str(bert_dir)}, base_dir=tmp_path).validate()
    (tmp_path / "empty").mkdir()
    _config_error(
        {"type": "HfModel", "model_path": str(bert_dir), "adapters": {"x": "empty"}},
        tmp_path,
        "input_model.adapters.x",
        "no adapter_config.json",
    )
