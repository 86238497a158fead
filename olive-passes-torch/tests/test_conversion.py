"""OnnxConversion on tiny Hugging Face models: the ONNX model runs in onnxruntime and matches PyTorch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import SENTENCES
from helpers import onnx_outputs, tokenized, torch_outputs

from olive.exceptions import PassConfigError
from olive.model.handler import ONNXModelHandler
from olive_passes_torch.hf_model import HfModelHandler


@pytest.mark.parametrize(
    ("fixture", "task", "output", "inputs"),
    [
        ("bert_dir", "feature-extraction", "last_hidden_state", ["input_ids", "attention_mask", "token_type_ids"]),
        ("bert_classifier_dir", "text-classification", "logits", ["input_ids", "attention_mask", "token_type_ids"]),
        ("bert_masked_dir", "fill-mask", "logits", ["input_ids", "attention_mask", "token_type_ids"]),
        ("bert_token_dir", "token-classification", "logits", ["input_ids", "attention_mask", "token_type_ids"]),
        ("gpt2_dir", "text-generation", "logits", ["input_ids", "attention_mask"]),
    ],
)
def test_each_task_converts_and_matches_pytorch(request, tmp_path, cpu, conversion, fixture, task, output, inputs):
    model_dir = request.getfixturevalue(fixture)
    model = HfModelHandler(str(model_dir), task=task)
    result = conversion(cpu, {}).run(model, str(tmp_path / "out"))

    assert isinstance(result, ONNXModelHandler)
    proto = onnx.load(result.model_path)
    assert [i.name for i in proto.graph.input] == inputs
    assert [o.name for o in proto.graph.output] == [output]
    check = result.model_attributes["conversion_check"]
    assert check["passed"] and check["max_abs_diff"] < 1e-4 and check["source"].startswith("synthetic")
    assert result.model_attributes["model_type"] == ("gpt2" if fixture == "gpt2_dir" else "bert")

    # Independently of the pass: real text, another batch size and length than the export's.
    feeds = tokenized(model_dir, SENTENCES[:4])
    feeds = {k: v for k, v in feeds.items() if k in inputs}
    got = onnx_outputs(result.model_path, feeds)[output]
    want = torch_outputs(model_dir, task, feeds, output)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-3)


def test_decoder_is_exported_without_past_key_values(gpt2_dir, tmp_path, cpu, conversion):
    result = conversion(cpu, {}).run(HfModelHandler(str(gpt2_dir), task="text-generation"), str(tmp_path / "out"))
    proto = onnx.load(result.model_path)
    assert [o.name for o in proto.graph.output] == ["logits"]
    dims = [d.dim_param or d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim]
    assert dims[:2] == ["batch_size", "sequence_length"]


def test_the_dynamo_exporter_converts_too(bert_dir, tmp_path, cpu, conversion):
    config = {"use_dynamo_exporter": True, "target_opset": 18}
    result = conversion(cpu, config).run(HfModelHandler(str(bert_dir)), str(tmp_path / "out"))
    check = result.model_attributes["conversion_check"]
    assert check["exporter"] == "dynamo" and check["passed"]
    feeds = tokenized(bert_dir, SENTENCES[:3])
    np.testing.assert_allclose(
        onnx_outputs(result.model_path, feeds)["last_hidden_state"],
        torch_outputs(bert_dir, "feature-extraction", feeds, "last_hidden_state"),
        atol=1e-4,
        rtol=1e-3,
    )


def test_external_data_and_fixed_shapes(bert_dir, tmp_path, cpu, conversion):
    config = {"save_as_external_data": True, "external_data_name": "weights.bin", "size_threshold": 0, "dynamic": False}
    result = conversion(cpu, config).run(HfModelHandler(str(bert_dir)), str(tmp_path / "out"))
    folder = Path(result.model_path).parent
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "weights.bin"]
    proto = onnx.load(result.model_path, load_external_data=False)
    assert all(d.dim_value > 0 for d in proto.graph.input[0].type.tensor_type.shape.dim)
    assert result.model_attributes["conversion_check"]["passed"]


def test_io_config_overrides_from_the_pass(bert_dir, tmp_path, cpu, conversion):
    config = {"io_config": {"input_names": ["input_ids", "attention_mask"]}}
    result = conversion(cpu, config).run(HfModelHandler(str(bert_dir)), str(tmp_path / "out"))
    assert [i.name for i in onnx.load(result.model_path).graph.input] == ["input_ids", "attention_mask"]
    assert result.model_attributes["io_config"]["input_names"] == ["input_ids", "attention_mask"]


def test_the_check_runs_on_the_workflows_data(bert_dir, tmp_path, cpu, conversion):
    (tmp_path / "s.txt").write_text("\n".join(SENTENCES) + "\n")
    data = {
        "name": "sentences",
        "type": "TextDataContainer",
        "load_dataset_config": {"data_path": str(tmp_path / "s.txt")},
        "pre_process_data_config": {"max_length": 16, "padding": "longest"},
        "dataloader_config": {"batch_size": 4},
    }
    # No tokenizer in the data config: the HfModel's own folder's is used.
    config = {"data_config": data, "verify_max_samples": 5}
    result = conversion(cpu, config).run(HfModelHandler(str(bert_dir)), str(tmp_path / "out"))
    check = result.model_attributes["conversion_check"]
    assert check["samples"] == 5 and "data config 'sentences'" in check["source"] and check["passed"]


def test_bad_pass_params_fail_before_any_work(cpu, conversion):
    for params, message in [
        ({"torch_dtype": "float8"}, "torch_dtype"),
        ({"device": "tpu"}, "device"),
        ({"atol": -1.0}, "atol"),
        ({"io_config": {"input_name": ["x"]}}, "io_config.input_name"),
    ]:
        with pytest.raises(PassConfigError, match=message):
            conversion(cpu, params)


def test_an_onnx_input_model_is_refused(tmp_path, cpu, conversion):
    from olive.testing.models import mlp_model, save_model

    onnx_model = save_model(mlp_model(), tmp_path / "mlp")
    with pytest.raises(PassConfigError, match="converts HfModel and PyTorchModel"):
        conversion(cpu, {}).run(onnx_model, str(tmp_path / "out"))


def test_the_exporters_caution_stays_out_of_the_users_log(bert_dir, tmp_path, cpu, conversion, caplog):
    """torch's tracer and deprecation warnings (and the aten::index note every transformers export gets) go to
    --verbose only: the conversion check decides whether the export is right."""
    import logging

    with caplog.at_level(logging.DEBUG):
        result = conversion(cpu, {}).run(HfModelHandler(str(bert_dir)), str(tmp_path / "out"))
    assert result.model_attributes["conversion_check"]["passed"]
    noisy = ("TracerWarning", "DeprecationWarning", "aten::index")
    shown = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert not [m for m in shown if any(word in m for word in noisy)], shown
    # Still there for --verbose: quietened, not dropped.
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any(any(word in m for word in noisy) for m in debug), debug
