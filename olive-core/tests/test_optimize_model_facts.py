"""Which path holds which model is one rule, the model's own (:mod:`olive.model.onnx_facts`): the handler and
``olive optimize`` apply it alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from olive.exceptions import ModelLoadError, WorkflowConfigError
from olive.model.handler import ONNXModelHandler
from olive.model.onnx_facts import NoSingleOnnxFile, find_onnx_file, is_hugging_face_folder
from olive.optimize.facts import read_model_facts


def test_which_path_holds_which_model_is_one_rule(tmp_path: Path) -> None:
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    assert is_hugging_face_folder(tmp_path / "hf")
    two = tmp_path / "two"
    two.mkdir()
    for name in ("a.onnx", "b.onnx"):
        (two / name).write_bytes(b"")
    with pytest.raises(NoSingleOnnxFile) as raised:
        find_onnx_file(two)
    assert [p.name for p in raised.value.found] == ["a.onnx", "b.onnx"]
    # The handler and olive optimize say the same about the same folder.
    with pytest.raises(ModelLoadError, match=r"several \.onnx files"):
        _ = ONNXModelHandler(str(two)).model_path
    assert not is_hugging_face_folder(two)
    with pytest.raises(WorkflowConfigError, match=r"holds 2 \.onnx files \(a\.onnx, b\.onnx\)"):
        read_model_facts(two)


def test_a_hub_name_is_answered_with_the_command_that_saves_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(WorkflowConfigError) as raised:
        read_model_facts("Qwen/Qwen2.5-0.5B")
    message = str(raised.value)
    # huggingface-hub 1.x ships only the hf command; the folder named is the one the command makes.
    assert "hf download Qwen/Qwen2.5-0.5B --local-dir Qwen2.5-0.5B" in message
    assert "huggingface-cli" not in message
