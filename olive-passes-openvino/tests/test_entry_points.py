"""The distribution is found through entry points only, and listing it imports neither openvino nor nncf."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
PASSES = {
    "OpenVINOConversion",
    "OpenVINOQuantization",
    "OpenVINOQuantizationWithAccuracy",
    "OpenVINOWeightCompression",
    "OpenVINOIoUpdate",
}

CODE = """
import json, sys
from olive.cli.main import main
try:
    main(["passes", "--json"])
except SystemExit:
    pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"openvino", "nncf", "onnxruntime", "numpy"})
from olive.model.types import get_model_type
handler = get_model_type("OpenVINOModel")
from olive.plugins.registry import get_registry
conversion = get_registry().get_pass_class("OpenVINOConversion")
print("@@" + json.dumps({"heavy": heavy, "type": handler.__name__, "dist": conversion.distribution(),
    "after": sorted({m.split(".")[0] for m in sys.modules} & {"openvino", "nncf"})}))
"""


def test_listing_names_the_passes_without_importing_them_and_the_model_type_resolves():
    run = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    listing, _, tail = run.stdout.partition("@@")
    ours = {e["name"]: e for e in json.loads(listing) if e["distribution"] == "olive-passes-openvino"}
    assert set(ours) == PASSES
    assert all(e["status"] == "not loaded" for e in ours.values())
    facts = json.loads(tail)
    # Neither listing nor resolving the model type and a pass class imports openvino or nncf.
    assert facts == {"heavy": [], "type": "OpenVINOModelHandler", "dist": "olive-passes-openvino", "after": []}


def test_the_install_hints_list_what_the_pyproject_declares():
    from olive.plugins.install_hints import MICROSOFT_OLIVE_ONLY, REPOSITORY_MODEL_TYPES, REPOSITORY_PASSES

    declared = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert set(REPOSITORY_PASSES["olive-passes-openvino"]) == set(declared["olive.passes"]) == PASSES
    assert {k for k, v in REPOSITORY_MODEL_TYPES.items() if v[0] == "olive-passes-openvino"} == set(
        declared["olive.models"]
    )
    assert not PASSES & set(MICROSOFT_OLIVE_ONLY)
