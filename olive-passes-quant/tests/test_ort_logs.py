"""onnxruntime's own log lines ("Please consider to run pre-processing before quantization...") stay out of the
user's output: they go to our logger at debug level, and no printing handler is left on the root logger."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from olive_passes_quant.dynamic import OnnxDynamicQuantization
from olive_passes_quant.static import OnnxStaticQuantization

ADVICE = "Please consider to run pre-processing"


@pytest.mark.parametrize(
    ("pass_class", "config"),
    [
        (OnnxDynamicQuantization, {"quant_preprocess": False}),
        (OnnxStaticQuantization, {"quant_preprocess": False}),
    ],
    ids=["dynamic", "static"],
)
def test_onnxruntime_advice_goes_to_our_debug_log(run_pass, bert, calib_npz, pass_class, config, caplog):
    if pass_class is OnnxStaticQuantization:
        config = {**config, "data_config": str(calib_npz)}
    with caplog.at_level(logging.DEBUG):
        run_pass(pass_class, bert, config)
    from_root = [r for r in caplog.records if r.name == "root" and r.levelno >= logging.WARNING]
    assert not from_root, [r.getMessage() for r in from_root]
    ours = [r for r in caplog.records if r.name.startswith("olive_passes_quant") and r.levelno == logging.DEBUG]
    assert any("quant_preprocess: true" in r.getMessage() for r in ours), [r.getMessage() for r in caplog.records]


def test_nothing_is_printed_and_no_handler_is_left_on_the_root_logger(tmp_path):
    code = f"""
import logging, sys
from olive.testing.models import bert_like_model, save_model
from olive.testing.runner import run_pass
from olive_passes_quant.dynamic import OnnxDynamicQuantization
model = save_model(bert_like_model(seed=0), {str(tmp_path / "in")!r})
run_pass(OnnxDynamicQuantization, model, {{"quant_preprocess": False}}, output_dir={str(tmp_path / "out")!r})
print(len(logging.getLogger().handlers))
logging.warning("a warning of the program itself")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ADVICE not in result.stderr, result.stderr
    assert result.stdout.strip() == "0"  # no handler left behind on the root logger
    # The program's own logging.warning still configures logging as it would have without Olive.
    assert result.stderr == "WARNING:root:a warning of the program itself\n", result.stderr
