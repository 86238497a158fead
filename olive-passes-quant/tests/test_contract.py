"""Every pass keeps the Pass contract, over (the first points of) its own search space."""

from __future__ import annotations

import importlib
import importlib.util

import pytest
from conftest import PASS_NAMES

from olive.testing import assert_pass_contract


def _pass_class(name: str):
    return getattr(importlib.import_module(PASS_NAMES[name]), name)


# Takes a GenAIModel only (it calibrates on text through the folder's tokenizer): its contract is checked on a decoder
# folder in olive-passes-genai's tests.
GENAI_ONLY = {"OnnxGptqQuantization"}


@pytest.mark.parametrize("name", sorted(set(PASS_NAMES) - GENAI_ONLY))
def test_pass_contract(name, tmp_path, calib_npz):
    from olive.testing.models import mlp_model, save_model, write_npz_dataset

    mlp = save_model(mlp_model(), tmp_path / "mlp")
    config = None
    if name in (
        "OnnxStaticQuantization",
        "OnnxQuantization",
        "OnnxSensitivityAnalysis",
        "OnnxAccuracyGuardedQuantization",
    ):
        config = {"data_config": str(write_npz_dataset(tmp_path / "mlp.npz", mlp, num_samples=8))}
    if name == "SelectiveMixedPrecision":
        config = {"algorithm": "snr", "ratio": 0.5}
    if name == "OnnxHqqQuantization" and importlib.util.find_spec("torch") is None:
        # onnxruntime's HQQ solver runs on torch: without it the run says so (tox -e genai checks the contract).
        from olive.exceptions import PassRunError
        from olive.testing import run_pass

        with pytest.raises(PassRunError, match="OnnxHqqQuantization needs torch"):
            run_pass(_pass_class(name), mlp, output_dir=tmp_path / "out")
        return
    report = assert_pass_contract(
        _pass_class(name), model=mlp, entry_point_name=name, config=config, max_points=8, output_dir=tmp_path / "out"
    )
    assert report["ran"] >= 1


def test_contract_on_bert_for_static_search(bert, calib_npz, tmp_path):
    # QOperator with int8 weights is INVALID in the static space: the space skips it, so exactly the three
    # valid (format, weights, activations) triples run, once per calibration method.
    from olive_passes_quant.static import OnnxStaticQuantization

    report = assert_pass_contract(
        OnnxStaticQuantization,
        model=bert,
        config={"data_config": str(calib_npz), "per_channel": True, "reduce_range": False, "quant_preprocess": False},
        max_points=24,
        output_dir=tmp_path / "out",
    )
    assert report["points"] == report["ran"] == 3 * 3
