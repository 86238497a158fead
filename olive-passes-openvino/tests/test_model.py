"""OpenVINOModel: what a folder must hold, what a workflow may write, and what the cache and outputs carry."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from olive_passes_openvino.model import OpenVINOModelHandler

from olive.exceptions import ModelLoadError, WorkflowConfigError
from olive.model.types import handler_from_config, model_from_json


def _copy(ir: OpenVINOModelHandler, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for path, rel in ir.folder_files():
        shutil.copyfile(path, folder / rel)
    return folder


def test_a_workflow_names_the_folder_or_its_xml_and_json_round_trips(ir_fp32, tmp_path):
    folder = _copy(ir_fp32, tmp_path / "ir")
    settings = {"ov_config": {"INFERENCE_PRECISION_HINT": "f32"}}
    by_folder = handler_from_config(
        {"type": "OpenVINOModel", "model_path": "ir", "inference_settings": settings}, base_dir=tmp_path
    )
    by_xml = handler_from_config(
        {"type": "OpenVINOModel", "config": {"model_path": "ir/ov_model.xml"}}, base_dir=tmp_path
    )
    assert by_folder.model_path == by_xml.model_path == str(folder)
    again = model_from_json(by_folder.to_json())
    assert isinstance(again, OpenVINOModelHandler) and again.inference_settings == settings
    assert again.model_config["model_name"] == "ov_model"
    assert again.content_hash() == ir_fp32.content_hash()
    assert again.size_on_disk == sum(p.stat().st_size for p in folder.iterdir())


def test_the_cache_key_follows_the_bytes_of_every_file(ir_fp32, tmp_path):
    folder = _copy(ir_fp32, tmp_path / "ir")
    model = OpenVINOModelHandler(folder)
    before = model.content_hash()
    (folder / "tokenizer.json").write_text("{}")
    with_tokenizer = model.content_hash()
    data = bytearray((folder / "ov_model.bin").read_bytes())
    data[-1] ^= 1
    (folder / "ov_model.bin").write_bytes(bytes(data))
    assert len({before, with_tokenizer, model.content_hash()}) == 3
    assert "tokenizer.json" in {rel for _, rel in model.folder_files()}


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, r"holds no \.xml file; convert a model into it with the OpenVINOConversion pass"),
        ({"a.xml": b"<net/>", "a.bin": b"", "b.xml": b"<net/>", "b.bin": b""}, r"holds 2 \.xml files"),
        ({"m.xml": b"<net/>"}, r"has m\.xml but not its weights m\.bin"),
        ({"m.xml": b"<html/>", "m.bin": b""}, r"is not an OpenVINO IR"),
    ],
)
def test_a_folder_that_is_not_one_ir_is_refused_naming_the_field(tmp_path, files, message):
    folder = tmp_path / "model"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    with pytest.raises(WorkflowConfigError, match=message) as caught:
        handler_from_config({"type": "OpenVINOModel", "model_path": str(folder)})
    assert caught.value.owner == "input_model.model_path"


def test_a_tokenizer_ir_beside_the_model_is_not_taken_for_a_second_model(ir_fp32, tmp_path):
    folder = _copy(ir_fp32, tmp_path / "ir")
    (folder / "openvino_tokenizer.xml").write_text("<net/>")
    (folder / "openvino_tokenizer.bin").write_bytes(b"")
    assert OpenVINOModelHandler(folder).xml_path.name == "ov_model.xml"


@pytest.mark.parametrize(
    ("settings", "owner", "message"),
    [
        ({"ov_confg": {}}, "input_model.inference_settings", r"unknown key 'ov_confg' \(did you mean 'ov_config'\?\)"),
        ({"ov_config": ["f32"]}, "input_model.inference_settings.ov_config", "expected a dict of OpenVINO properties"),
        ({"ov_config": {"NUM_STREAMS": [1]}}, "input_model.inference_settings.ov_config.NUM_STREAMS", "expected a"),
        ({"device_name": 0}, "input_model.inference_settings.device_name", "expected an OpenVINO device name"),
    ],
)
def test_bad_inference_settings_are_refused_when_the_workflow_is_read(ir_fp32, settings, owner, message):
    with pytest.raises(WorkflowConfigError, match=message) as caught:
        handler_from_config({"type": "OpenVINOModel", "model_path": ir_fp32.model_path, "inference_settings": settings})
    assert caught.value.owner == owner


def test_a_property_openvino_refuses_is_one_error_naming_the_settings(ir_fp32):
    with pytest.raises(
        ModelLoadError, match=r"OpenVINO cannot compile .* fix inference_settings.device_name / ov_config"
    ):
        ir_fp32.prepare_session({"ov_config": {"INFERENCE_PRECISION_HINT": "f7"}})
    with pytest.raises(ModelLoadError, match=r"devices here: CPU"):
        ir_fp32.prepare_session({"device_name": "NOSUCHDEVICE"})


def test_the_session_reports_what_it_was_compiled_with_and_takes_onnxruntime_threads(ir_fp32, feeds):
    from olive.measure import describe_session

    session = ir_fp32.prepare_session(
        {"session_options": {"intra_op_num_threads": 1}, "ov_config": {"INFERENCE_PRECISION_HINT": "f32"}}
    )
    described = describe_session(session)
    assert described["providers"] == ["OpenVINO:CPU"]
    assert described["session_options"]["INFERENCE_NUM_THREADS"] == 1
    assert described["session_options"]["INFERENCE_PRECISION_HINT"] == "f32"
    # Unpinned unless asked: pinned threads cannot leave cores that other work shares.
    assert described["session_options"]["ENABLE_CPU_PINNING"] is False
    pinned = ir_fp32.prepare_session({"ov_config": {"ENABLE_CPU_PINNING": True}})
    assert describe_session(pinned)["session_options"]["ENABLE_CPU_PINNING"] is True
    assert [i.name for i in session.get_inputs()] == list(feeds)
    first = session.run(None, feeds)[0]
    # Outputs are copies: a later run on other inputs leaves them as they were.
    kept = first.copy()
    session.run(None, {k: v[::-1].copy() for k, v in feeds.items()})
    assert (first == kept).all()
    assert session.run(["last_hidden_state"], feeds)[0].shape == first.shape


def test_io_config_reads_the_ir(ir_fp32):
    io = ir_fp32.get_io_config()
    assert io["input_names"] == ["input_ids", "attention_mask", "token_type_ids"]
    assert io["input_types"] == ["int64"] * 3 and io["input_shapes"] == [["?", "?"]] * 3
    assert io["output_names"] == ["last_hidden_state"] and io["output_shapes"] == [["?", "?", 64]]
