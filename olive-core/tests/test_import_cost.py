"""The Pass contract is cheap to import: no onnxruntime, numpy or onnx."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("onnxruntime", "numpy", "onnx", "optuna", "torch")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    modules = out.split()
    return sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})


def test_import_olive_passes_is_light():
    assert _loaded_after("import olive.passes") == []


def test_author_imports_are_light():
    statement = (
        "from olive.passes import Pass, PassConfigParam\n"
        "from olive.hardware import AcceleratorSpec\n"
        "from olive.model import ONNXModelHandler\n"
        "from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model\n"
        "from olive.strategy.search_parameter import Categorical\n"
        "import olive"
    )
    assert _loaded_after(statement) == []


def test_the_check_can_fail():
    assert _loaded_after("import numpy") == ["numpy"]
