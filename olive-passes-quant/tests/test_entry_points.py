"""Installed with pip into a fresh environment, the distribution's passes are found through entry points."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import PASS_NAMES

from olive.testing.venv import build_wheel

PROJECT = Path(__file__).resolve().parents[1]


def test_pip_install_registers_every_pass(fresh_venv, tmp_path):
    wheel = build_wheel(PROJECT, tmp_path / "wheels")
    # --no-deps: olive-core, onnx and onnxruntime come from the environment the venv sees.
    fresh_venv.pip_install("--no-deps", wheel)

    # `olive passes --json`, through the venv's interpreter (the `olive` script lives in the parent env).
    olive = [fresh_venv.python, "-c", "from olive.cli.main import main; main()"]
    # (without strict mode, which loads every plugin to fail fast on broken ones)
    listing = json.loads(fresh_venv.run([*olive, "passes", "--json"], env={"OLIVE_STRICT_PLUGINS": None}).stdout)
    ours = {e["name"]: e for e in listing if e["distribution"] == "olive-passes-quant"}
    assert set(PASS_NAMES) <= set(ours)
    for name in PASS_NAMES:
        entry = ours[name]
        assert entry["entry_point"] == f"{PASS_NAMES[name]}:{name}"
        assert entry["status"] == "not loaded"  # listing reads metadata only

    code = """
import json, tempfile
from olive.plugins.registry import get_registry
from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.testing.models import mlp_model, save_model
import olive_passes_quant

cls = get_registry().get_pass_class("OnnxDynamicQuantization")
model = save_model(mlp_model(), tempfile.mkdtemp())
out = cls(CPU, {}).run(model, tempfile.mkdtemp() + "/out")
ops = sorted({n.op_type for n in __import__("onnx").load(out.model_path).graph.node})
print(json.dumps({"module_file": olive_passes_quant.__file__, "dist": cls.distribution(),
                  "name": cls.pass_name(), "ops": ops}))
"""
    info = json.loads(fresh_venv.python_run(code).stdout.strip().splitlines()[-1])
    # The copy installed into the venv is the one loaded, not a source checkout.
    assert Path(info["module_file"]).is_relative_to(fresh_venv.site_packages)
    assert info["dist"] == "olive-passes-quant" and info["name"] == "OnnxDynamicQuantization"
    assert "MatMulInteger" in info["ops"]
