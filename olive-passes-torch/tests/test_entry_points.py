"""Installed with pip into a fresh environment, the distribution's pass, model types and data containers are
found through entry points, and listing them imports no torch."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from olive.testing.venv import build_wheel

PROJECT = Path(__file__).resolve().parents[1]
CLEAN_ENV = {"OLIVE_LOAD_PLUGINS": None, "OLIVE_DISABLE_PLUGINS": None, "OLIVE_STRICT_PLUGINS": None}

CODE = """
import json, sys, tempfile
import olive_passes_torch
from olive.cli.main import main
try:
    main(["passes", "--json"])
except SystemExit:
    pass
listed_heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers", "onnxruntime"})
from olive.data.containers import find_container
from olive.model.types import get_model_type
from olive.plugins.registry import get_registry
types = {name: f"{cls.__module__}:{cls.__qualname__}" for name, cls in
         [("HfModel", get_model_type("HfModel")), ("PyTorchModel", get_model_type("pytorchmodel")),
          ("TextDataContainer", find_container("TextDataContainer")),
          ("HuggingfaceContainer", find_container("HuggingfaceContainer"))]}
conversion = get_registry().get_pass_class("OnnxConversion")
loaded_heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers"})

import torch
from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.model.types import handler_from_config
folder = tempfile.mkdtemp()
torch.save(torch.nn.Sequential(torch.nn.Linear(4, 2)), folder + "/m.pt")
model = handler_from_config({"type": "PyTorchModel", "model_path": folder + "/m.pt",
    "io_config": {"input_names": ["x"], "input_shapes": [[1, 4]], "output_names": ["y"]}})
out = conversion(CPU, {}).run(model, folder + "/out")
print("@@" + json.dumps({"module_file": olive_passes_torch.__file__, "listed_heavy": listed_heavy,
    "loaded_heavy": loaded_heavy, "types": types, "dist": conversion.distribution(),
    "passed": out.model_attributes["conversion_check"]["passed"]}))
"""


def test_pip_install_registers_the_pass_model_types_and_containers(fresh_venv, tmp_path):
    wheel = build_wheel(PROJECT, tmp_path / "wheels")
    # --no-deps: olive-core, onnx, onnxruntime and torch (the local 2.13.0 CPU build) come from the environment
    # the venv sees through its system site-packages; nothing is downloaded.
    fresh_venv.pip_install("--no-deps", "--no-index", wheel)

    listing = fresh_venv.run(
        [fresh_venv.python, "-c", "from olive.cli.main import main; main()", "passes", "--json"], env=CLEAN_ENV
    ).stdout
    ours = {e["name"]: e for e in json.loads(listing) if e["distribution"] == "olive-passes-torch"}
    assert ours["OnnxConversion"]["entry_point"] == "olive_passes_torch.conversion:OnnxConversion"
    assert ours["OnnxConversion"]["status"] == "not loaded"

    out = fresh_venv.python_run(textwrap.dedent(CODE), env=CLEAN_ENV).stdout
    info = json.loads(out.rsplit("@@", 1)[1])
    assert Path(info["module_file"]).is_relative_to(fresh_venv.site_packages)  # the installed copy, not the source
    assert info["listed_heavy"] == [] and info["loaded_heavy"] == []
    assert info["types"] == {
        "HfModel": "olive_passes_torch.hf_model:HfModelHandler",
        "PyTorchModel": "olive_passes_torch.pytorch_model:PyTorchModelHandler",
        "TextDataContainer": "olive_passes_torch.text_data:TextDataContainer",
        "HuggingfaceContainer": "olive_passes_torch.text_data:HuggingfaceContainer",
    }
    assert info["dist"] == "olive-passes-torch" and info["passed"] is True
