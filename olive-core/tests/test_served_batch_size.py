"""The agreement metric at served batch sizes (``served_batch_size``): samples batched together the way a server
batches them, each figure the worst over the sizes, and where each was measured in the result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from olive.data.config import DataConfig
from olive.evaluator.evaluator import OliveEvaluator
from olive.evaluator.metric import parse_metrics
from olive.exceptions import WorkflowConfigError
from olive.measure import agreement_scores, served_batches
from olive.measure.int8_kernel import reduce_range_for
from olive.model.handler import ONNXModelHandler
from olive.testing.models import (
    batch_outlier_samples,
    batch_sensitive_mlp,
    bert_like_model,
    random_inputs,
    save_model,
)


def _evaluator(metrics: list[dict], data: dict[str, DataConfig]) -> OliveEvaluator:
    return OliveEvaluator(parse_metrics(metrics, data_config_names=set(data)), data)


def _npz(path: Path, batch_size: int) -> dict[str, DataConfig]:
    config = {
        "name": "d",
        "type": "NpzDataContainer",
        "load_dataset_config": {"data_path": str(path)},
        "dataloader_config": {"batch_size": batch_size},
    }
    return {"d": DataConfig.from_json(config)}


def _agreement(**options) -> dict:
    return {
        "name": "agree",
        "type": "agreement",
        "data_config": "d",
        "sub_types": ["cosine_min", "cosine_mean"],
        **options,
    }


def _quantized(reference: ONNXModelHandler, path: Path, static_data: np.ndarray | None = None) -> ONNXModelHandler:
    from onnxruntime.quantization import CalibrationDataReader, QuantType, quantize_dynamic, quantize_static

    path.mkdir(parents=True)
    out = str(path / "model.onnx")
    reduce_range = reduce_range_for("CPUExecutionProvider")
    if static_data is None:
        quantize_dynamic(
            str(reference.model_path), out, weight_type=QuantType.QInt8, per_channel=True, reduce_range=reduce_range
        )
    else:

        class Reader(CalibrationDataReader):
            def __init__(self) -> None:
                self.rows = iter([{"input": static_data[i : i + 1]} for i in range(len(static_data))])

            def get_next(self):
                return next(self.rows, None)

        quantize_static(str(reference.model_path), out, Reader(), per_channel=True, reduce_range=reduce_range)
    return ONNXModelHandler(model_path=out)


def _independent(model: ONNXModelHandler, reference: ONNXModelHandler, inputs: np.ndarray, size: int) -> dict:
    batches = served_batches([{"input": inputs}], size)
    a, b = (m.prepare_session() for m in (model, reference))
    return agreement_scores([a.run(None, f)[0] for f in batches], [b.run(None, f)[0] for f in batches])


@pytest.fixture(scope="module")
def mlp_case(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("served")
    reference = save_model(batch_sensitive_mlp(), root / "ref")
    inputs = batch_outlier_samples(seed=1, count=16, value=300.0)
    np.savez(root / "d.npz", input=inputs)
    return {"root": root, "reference": reference, "inputs": inputs, "dynamic": _quantized(reference, root / "dyn")}


@pytest.mark.int8_kernel
def test_served_agreement_is_the_worst_over_the_batch_sizes_and_says_where(mlp_case: dict) -> None:
    reference, dynamic, inputs = mlp_case["reference"], mlp_case["dynamic"], mlp_case["inputs"]
    data = _npz(mlp_case["root"] / "d.npz", 4)
    result = _evaluator([_agreement(served_batch_size=[8, 1])], data).evaluate(dynamic, reference_model=reference)
    alone, batched = (_independent(dynamic, reference, inputs, size) for size in (1, 8))
    # One outlier in a batch of 8 degrades its batch-mates; alone, every sample keeps its outputs.
    assert alone["cosine_min"] >= 0.99 and batched["cosine_min"] < 0.97
    assert result["agree-cosine_min"].value == pytest.approx(batched["cosine_min"], abs=1e-9)
    meta = result.metadata["agree"]
    assert meta["served_batch_sizes"] == [1, 8] and meta["worst_at_batch_size"]["cosine_min"] == 8
    assert meta["by_batch_size"]["1"]["cosine_min"] == pytest.approx(alone["cosine_min"], abs=1e-9)
    assert meta["largest_batch"] == {"1": 1, "8": 8} and meta["num_samples"] == 16
    # Without served_batch_size, the data config's batches as they come (4 in a row): another measurement.
    plain = _evaluator([_agreement()], data).evaluate(dynamic, reference_model=reference)
    assert plain.metadata["agree"]["batch_sizes_read"] == [4]
    assert plain["agree-cosine_min"].value != pytest.approx(result["agree-cosine_min"].value, abs=1e-6)


@pytest.mark.int8_kernel
def test_static_int8_serves_every_batch_alike(mlp_case: dict) -> None:
    reference, inputs = mlp_case["reference"], mlp_case["inputs"]
    static = _quantized(reference, mlp_case["root"] / "static", static_data=inputs)
    data = _npz(mlp_case["root"] / "d.npz", 1)
    result = _evaluator([_agreement(served_batch_size=[1, 8, 16])], data).evaluate(static, reference_model=reference)
    by_size = result.metadata["agree"]["by_batch_size"]
    for size in ("8", "16"):
        assert by_size[size]["cosine_min"] == pytest.approx(by_size["1"]["cosine_min"], abs=1e-6)


def test_served_at_batch_size_1_runs_each_sample_at_its_real_length(tmp_path: Path) -> None:
    reference = save_model(bert_like_model(num_layers=1), tmp_path / "ref")
    inputs = random_inputs(reference, batch_size=6, sequence_length=12, seed=3)
    for row, length in enumerate([3, 5, 7, 9, 11, 12]):
        inputs["attention_mask"][row, length:] = 0
    np.savez(tmp_path / "d.npz", **inputs)
    metric = _agreement(pooling="mean", output_name="last_hidden_state", trim_padding=True)
    perturbed = save_model(bert_like_model(num_layers=1, seed=1), tmp_path / "other")
    old = _evaluator([metric], _npz(tmp_path / "d.npz", 1)).evaluate(perturbed, reference_model=reference)
    served = _evaluator([{**metric, "served_batch_size": [1, 3]}], _npz(tmp_path / "d.npz", 6))
    result = served.evaluate(perturbed, reference_model=reference)
    by_size = result.metadata["agree"]["by_batch_size"]
    assert by_size["1"]["cosine_min"] == pytest.approx(old["agree-cosine_min"].value, abs=1e-9)
    assert by_size["1"]["cosine_mean"] == pytest.approx(old["agree-cosine_mean"].value, abs=1e-9)
    assert result.metadata["agree"]["largest_batch"] == {"1": 1, "3": 3}


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"served_batch_size": 0}, r"served_batch_size: expected a whole number from 1"),
        ({"served_batch_size": []}, r"served_batch_size: empty; give a batch size"),
        ({"served_batch_size": [1, "8"]}, r"served_batch_size\[1\]: expected a whole number"),
        ({"user_config": {"served_batch_size": 2.5}}, r"user_config.served_batch_size: expected a whole number"),
    ],
)
def test_a_bad_served_batch_size_is_one_error_naming_its_path(tmp_path: Path, options: dict, words: str) -> None:
    np.savez(tmp_path / "d.npz", input=np.zeros((2, 16), dtype=np.float32))
    with pytest.raises(WorkflowConfigError, match=words):
        _evaluator([_agreement(**options)], _npz(tmp_path / "d.npz", 1))


def test_served_batch_size_is_for_agreement_metrics_only() -> None:
    with pytest.raises(WorkflowConfigError, match=r"served_batch_size applies to agreement metrics only"):
        OliveEvaluator(parse_metrics([{"name": "lat", "type": "latency", "served_batch_size": 8}]))
