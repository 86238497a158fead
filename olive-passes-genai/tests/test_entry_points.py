"""The distribution is found through entry points only, and listing it imports none of its heavy libraries."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]

CODE = """
import json, sys
from olive.cli.main import main
try:
    main(["passes", "--json"])
except SystemExit:
    pass
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "transformers", "onnxruntime_genai", "onnxruntime"})
from olive.model.types import get_model_type
from olive.plugins.registry import get_registry
builder = get_registry().get_pass_class("ModelBuilder")
print("@@" + json.dumps({"heavy": heavy, "type": get_model_type("GenAIModel").__name__, "dist": builder.distribution(),
    "after": sorted({m.split(".")[0] for m in sys.modules} & {"torch", "onnxruntime_genai"})}))
"""


def test_listing_names_the_passes_without_importing_them_and_the_model_type_resolves():
    run = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    listing, _, tail = run.stdout.partition("@@")
    ours = {e["name"]: e for e in json.loads(listing) if e["distribution"] == "olive-passes-genai"}
    assert set(ours) == {"ModelBuilder", "OnnxGuardedInt4", "ExtractAdapters", "HfScaleMigration"}
    # The weight-only passes are olive-passes-quant's, which this distribution depends on.
    quant = {e["name"] for e in json.loads(listing) if e["distribution"] == "olive-passes-quant"}
    assert {"OnnxHqqQuantization", "OnnxKQuantQuantization", "OnnxGptqQuantization"} <= quant
    assert all(e["status"] == "not loaded" for e in ours.values())
    facts = json.loads(tail)
    assert facts["heavy"] == [] and facts["after"] == []
    assert facts == {**facts, "type": "GenAIModelHandler", "dist": "olive-passes-genai"}


def test_the_install_hints_list_what_the_pyproject_declares():
    from olive.plugins.install_hints import REPOSITORY_MODEL_TYPES, REPOSITORY_PASSES

    declared = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert set(REPOSITORY_PASSES["olive-passes-genai"]) == set(declared["olive.passes"])
    assert {k for k, v in REPOSITORY_MODEL_TYPES.items() if v[0] == "olive-passes-genai"} == set(
        declared["olive.models"]
    )
