"""onnxruntime's transformer optimizer warns that a model was not exported by PyTorch ("Model producer not
matched"); that line goes to our logger at debug level, not into the user's output."""

from __future__ import annotations

import logging

from olive_passes_graph.transformer_optimization import OrtTransformersOptimization


def test_the_optimizers_own_warnings_go_to_our_debug_log(tiny_bert, run_pass, caplog):
    with caplog.at_level(logging.DEBUG):
        run_pass(OrtTransformersOptimization, tiny_bert, {"model_type": "bert", "opt_level": 0})
    from_onnxruntime = [
        r for r in caplog.records if r.levelno >= logging.WARNING and "onnxruntime" in r.pathname.replace("\\", "/")
    ]
    assert not from_onnxruntime, [r.getMessage() for r in from_onnxruntime]
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("olive_passes_graph")]
    assert any("Model producer not matched" in m for m in ours), ours
