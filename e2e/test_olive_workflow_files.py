"""A Microsoft Olive 0.13 workflow file, run unchanged: its evaluator named ``OnnxEvaluator``, and a data
component from a ``user_script`` registered with ``@Registry.register_dataset()`` that returns a torch
``Dataset`` of ``(dict of tensors, label)``, batched by ``default_dataloader``, feeding both the calibration of
static quantization and an accuracy metric.

Needs torch (the e2e environment installs the CPU wheel); skipped without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from journey import olive

USER_SCRIPT = """
import numpy as np
import torch
from torch.utils.data import Dataset

from olive.data.registry import Registry


class RandomFeatures(Dataset):
    def __init__(self, data_dir, num_samples):
        arrays = np.load(data_dir)
        self.features = torch.from_numpy(arrays["features"][:num_samples])
        self.labels = torch.from_numpy(arrays["labels"][:num_samples])

    def __len__(self):
        return len(self.features)

    def __getitem__(self, index):
        return {"input": self.features[index]}, self.labels[index]


@Registry.register_dataset()
def random_features(data_dir, num_samples=24, **kwargs):
    return RandomFeatures(data_dir, num_samples)
"""


@pytest.fixture
def olive_013_workflow(tmp_path: Path) -> Path:
    pytest.importorskip("torch")
    import numpy as np
    import onnxruntime

    from olive.testing.models import mlp_model, save_model

    model = save_model(mlp_model(seed=3), tmp_path / "model")
    features = np.random.default_rng(0).standard_normal((32, 16)).astype(np.float32)
    session = onnxruntime.InferenceSession(model.model_path, providers=["CPUExecutionProvider"])
    labels = session.run(None, {"input": features})[0].argmax(axis=-1).astype(np.int64)
    np.savez(tmp_path / "features.npz", features=features, labels=labels)
    (tmp_path / "user_script.py").write_text(USER_SCRIPT)
    data_config = {
        "name": "train_data",
        "type": "DataContainer",
        "user_script": "user_script.py",
        "load_dataset_config": {"type": "random_features", "data_dir": "features.npz", "num_samples": 24},
        "dataloader_config": {"type": "default_dataloader", "batch_size": 4},
    }
    workflow = {
        "input_model": {"type": "ONNXModel", "config": {"model_path": "model/model.onnx"}},
        "systems": {
            "local_system": {
                "type": "LocalSystem",
                "accelerators": [{"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}],
            }
        },
        "data_configs": [data_config],
        "evaluators": {
            "common_evaluator": {
                "type": "OnnxEvaluator",
                "metrics": [
                    {
                        "name": "accuracy",
                        "type": "accuracy",
                        "data_config": "train_data",
                        "sub_types": [
                            {"name": "accuracy_score", "priority": 1, "goal": {"type": "max-degradation", "value": 0.5}}
                        ],
                    },
                    {
                        "name": "latency",
                        "type": "latency",
                        "data_config": "train_data",
                        "sub_types": [{"name": "avg", "priority": 2}],
                    },
                ],
            }
        },
        "passes": {
            "quantization": {
                "type": "OnnxStaticQuantization",
                "data_config": "train_data",
                "quant_preprocess": False,
            }
        },
        "evaluator": "common_evaluator",
        "host": "local_system",
        "target": "local_system",
        "output_dir": "output",
    }
    path = tmp_path / "bert_ptq_cpu.json"
    path.write_text(json.dumps(workflow, indent=2))
    return path


def test_olive_013_workflow_with_a_torch_dataset_runs_unchanged(olive_013_workflow: Path) -> None:
    result = olive("run", "--config", str(olive_013_workflow))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "have no effect" not in result.stderr
    output = olive_013_workflow.parent / "output"
    metrics = json.loads((output / "metrics.json").read_text())
    # The input model agrees with the labels it produced; the quantized one is measured on the same batches.
    assert metrics["input_model"]["accuracy-accuracy_score"]["value"] == 1.0
    assert metrics["best"]["accuracy-accuracy_score"]["value"] >= 0.5
    footprint = json.loads((output / "footprint.json").read_text())
    quantized = [n for n in footprint["nodes"] if n["pass_name"] == "OnnxStaticQuantization"]
    assert quantized and quantized[0]["status"] == "ok"
