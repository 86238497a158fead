"""Listing passes and validating their configs imports neither onnxruntime nor numpy."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import PASS_NAMES

HEAVY = ("onnxruntime", "numpy", "onnx", "torch")


def _heavy_modules_after(code: str) -> list[str]:
    full = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", full], check=True, capture_output=True, text=True).stdout
    return sorted({m.split(".")[0] for m in out.split() if m.split(".")[0] in HEAVY})


# Params a pass cannot run without.
REQUIRED = {"SelectiveMixedPrecision": {"algorithm": "k_quant_last"}}


@pytest.mark.parametrize("name", sorted(PASS_NAMES))
def test_default_config_and_generate_config_are_light(name):
    code = (
        f"from {PASS_NAMES[name]} import {name} as P\n"
        "from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU\n"
        "P.default_config(CPU)\n"
        "params = P.default_config(CPU)\n"
        "cfg = {'data_config': 'calib.npz'} if 'data_config' in params else {}\n"
        f"cfg.update({REQUIRED.get(name, {})!r})\n"
        "P.validate_config(P.generate_config(CPU, cfg, disable_search=True), CPU)\n"
        "P.get_config_params(CPU, cfg)\n"
    )
    assert _heavy_modules_after(code) == []


def test_the_check_sees_heavy_imports():
    assert _heavy_modules_after("import numpy") == ["numpy"]
