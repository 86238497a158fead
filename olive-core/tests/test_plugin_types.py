"""Model types (``olive.models``) and data containers (``olive.data_containers``) as plugins."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, ClassVar

import pytest

from olive.cache.store import hash_model
from olive.data.config import DataConfig
from olive.data.containers import DataContainerType, bind_input_model, new_container_registry, use_container_registry
from olive.exceptions import PluginLoadError, WorkflowConfigError
from olive.model.handler import OliveModelHandler, ONNXModelHandler
from olive.model.types import (
    UnknownModelTypeError,
    get_model_type,
    handler_from_config,
    model_from_json,
    new_model_type_registry,
    use_model_type_registry,
)
from olive.testing.models import mlp_model, save_model


class NpyModel(OliveModelHandler):
    """A model type defined by a test: a file whose bytes are hashed by the handler itself."""

    model_type = "NpyModel"

    def __init__(self, model_path: str, scale: float = 1.0, model_attributes: dict | None = None):
        super().__init__(model_path, model_attributes)
        self.scale = scale

    def _extra_json(self) -> dict[str, Any]:
        return {"scale": self.scale}

    def content_hash(self) -> str:
        data = Path(self.model_path).read_bytes() + str(self.scale).encode()
        return hashlib.sha256(data).hexdigest()


@pytest.fixture
def model_types():
    registry = new_model_type_registry(entry_points=False)
    with use_model_type_registry(registry):
        yield registry


def test_onnx_model_is_registered_through_olive_cores_own_entry_point():
    import importlib_metadata

    found = {(ep.name, ep.value, ep.dist.name) for ep in importlib_metadata.entry_points(group="olive.models")}
    assert ("ONNXModel", "olive.model.handler:ONNXModelHandler", "olive-core") in found
    assert get_model_type("ONNXModel") is ONNXModelHandler
    assert get_model_type("onnx") is ONNXModelHandler  # the old spelling


def test_from_json_dispatches_through_the_registry(model_types, tmp_path):
    model_types.register("NpyModel", NpyModel, distribution="olive-test-npy")
    (tmp_path / "w.npy").write_bytes(b"weights")
    handler = model_from_json({"type": "npymodel", "config": {"model_path": str(tmp_path / "w.npy")}})
    assert isinstance(handler, NpyModel)
    again = model_from_json(handler.to_json())
    assert isinstance(again, NpyModel) and again.scale == 1.0


def test_hash_model_uses_the_handlers_content_hash(model_types, tmp_path):
    (tmp_path / "w.npy").write_bytes(b"weights")
    one = NpyModel(str(tmp_path / "w.npy"))
    assert hash_model(one) == one.content_hash()
    assert hash_model(NpyModel(str(tmp_path / "w.npy"), scale=2.0)) != hash_model(one)
    # ONNX models keep hashing their file (and external data).
    onnx_model = save_model(mlp_model(), tmp_path / "mlp")
    assert onnx_model.content_hash() is None
    assert hash_model(onnx_model) == hash_model(ONNXModelHandler(onnx_model.model_path))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("HfModel", r"'HfModel' is provided by the distribution olive-passes-torch, which is not installed"),
        ("pytorchmodel", r'PyTorchModel.*olive-passes-torch.*pip install -e "\./olive-passes-torch\[hf\]"'),
        ("TensorFlowModel", r"'TensorFlowModel' is not available: no distribution of this project provides it"),
        ("OnnxModl", r"unknown model type 'OnnxModl' \(did you mean 'ONNXModel'\?\); available: ONNXModel"),
    ],
)
def test_a_type_nothing_installed_offers_says_what_would(model_types, name, expected):
    with pytest.raises(UnknownModelTypeError, match=expected):
        get_model_type(name)


def test_handler_from_config_names_the_field(model_types, tmp_path):
    model = save_model(mlp_model(), tmp_path / "mlp")
    rel = Path(model.model_path).relative_to(tmp_path)
    handler = handler_from_config({"type": "ONNXModel", "config": {"model_path": str(rel)}}, base_dir=tmp_path)
    assert isinstance(handler, ONNXModelHandler) and handler.model_path == model.model_path

    cases = [
        ({"type": "HfModel", "model_path": "m"}, "input_model.type", "olive-passes-torch"),
        ({"model_path": "m"}, "input_model.type", "missing"),
        (
            {"type": "ONNXModel", "model_path": str(rel), "onnx_filename": "x"},
            "input_model.onnx_filename",
            "did you mean",
        ),
        (
            {"type": "ONNXModel", "config": {"model_path": "nope.onnx"}},
            "input_model.config.model_path",
            "does not exist",
        ),
        (
            {"type": "ONNXModel", "model_path": str(rel), "config": {"model_path": str(rel)}},
            "input_model.config.model_path",
            "keep one",
        ),
        ({"type": "ONNXModel"}, "input_model.model_path", "missing"),
    ]
    for data, owner, reason in cases:
        with pytest.raises(WorkflowConfigError) as caught:
            handler_from_config(data, base_dir=tmp_path)
        assert caught.value.owner == owner, data
        assert reason in caught.value.reason, data


def test_a_class_that_is_not_a_handler_fails_that_name_only(model_types):
    with pytest.raises(PluginLoadError, match=r"not a subclass of olive\.model\.handler\.OliveModelHandler"):
        model_types.register("Broken", dict, distribution="olive-test-broken")
    with pytest.raises(PluginLoadError, match=r"cannot load model type 'Broken' from olive-test-broken==0"):
        get_model_type("Broken")
    assert get_model_type("ONNXModel") is ONNXModelHandler


def test_two_distributions_offering_one_type_name_both(model_types):
    model_types.register("NpyModel", NpyModel, distribution="olive-test-a", version="1.0")
    model_types.register("NpyModel", NpyModel, distribution="olive-test-b", version="2.0")
    with pytest.raises(UnknownModelTypeError, match=r"offered by olive-test-a==1\.0 and olive-test-b==2\.0"):
        get_model_type("NpyModel")


def test_an_empty_plugin_allowlist_keeps_onnx_models(monkeypatch):
    monkeypatch.setenv("OLIVE_LOAD_PLUGINS", "")
    registry = new_model_type_registry()
    assert registry.get("ONNXModel") is ONNXModelHandler


# --------------------------------------------------------------------------------------------- containers


def _read_lines(data_path: str, column: str = "x", data_dir: Any = None) -> list:
    import numpy as np

    values = [float(v) for v in Path(data_path).read_text().split()]
    return [({column: np.asarray([v], dtype=np.float32)}, None) for v in values]


class LinesContainer(DataContainerType):
    """A container defined by a test: one float per line of a file, scaled by a factor file."""

    components: ClassVar[dict] = {"load_dataset": _read_lines}
    checked: ClassVar[list[str]] = []

    @classmethod
    def check(cls, config, json_path, base_dir):
        cls.checked.append(json_path)
        if "column" in config.load_dataset_config.params and not config.load_dataset_config.params["column"]:
            raise WorkflowConfigError("empty; name the input", owner=f"{json_path}.load_dataset_config.column")
        return config

    @classmethod
    def files(cls, config):
        return [str(Path(config.load_dataset_config.params["data_path"]).with_suffix(".meta"))]

    @classmethod
    def bind_model(cls, config, model_path):
        params = config.load_dataset_config.params
        if "column" in params:
            return config
        return DataConfig.from_json(
            {**config.to_json(), "load_dataset_config": {**params, "column": Path(model_path).stem}}
        )


@pytest.fixture
def containers():
    registry = new_container_registry(entry_points=False)
    with use_container_registry(registry):
        yield registry


def test_a_plugin_container_supplies_its_components_and_checks(containers, tmp_path):
    containers.register("LinesContainer", LinesContainer, distribution="olive-test-lines")
    (tmp_path / "v.txt").write_text("1\n2\n3\n")
    (tmp_path / "v.meta").write_text("a")
    spec = {"name": "v", "type": "LinesContainer", "load_dataset_config": {"data_path": "v.txt"}}
    config = DataConfig.from_json(spec, json_path="data_configs[2]", base_dir=tmp_path)
    assert LinesContainer.checked[-1] == "data_configs[2]"
    batches = list(config.create_dataloader(batch_size=2))
    assert [b[0]["x"].tolist() for b in batches] == [[[1.0], [2.0]], [[3.0]]]

    before = config.content_hash()
    (tmp_path / "v.meta").write_text("b")  # a file only the container knows about
    assert DataConfig.from_json(spec, base_dir=tmp_path).content_hash() != before

    bound = bind_input_model(config, str(tmp_path / "encoder.onnx"))
    assert next(iter(bound.create_dataloader()))[0].keys() == {"encoder"}

    with pytest.raises(WorkflowConfigError) as caught:
        DataConfig.from_json(
            {**spec, "load_dataset_config": {"data_path": "v.txt", "column": ""}}, json_path="d", base_dir=tmp_path
        )
    assert caught.value.owner == "d.load_dataset_config.column"


def test_olive_containers_name_the_distribution_that_provides_them(containers):
    with pytest.raises(WorkflowConfigError) as caught:
        DataConfig.from_json({"name": "x", "type": "HuggingfaceContainer"}, json_path="data_configs[0]")
    assert caught.value.owner == "data_configs[0].type"
    assert (
        "olive-passes-torch" in caught.value.reason
        and 'pip install -e "./olive-passes-torch[hf]"' in caught.value.reason
    )
    containers.register("LinesContainer", LinesContainer, distribution="olive-test-lines")
    with pytest.raises(WorkflowConfigError, match=r"did you mean 'LinesContainer'.*NpzDataContainer, .*LinesContainer"):
        DataConfig.from_json({"name": "x", "type": "LineContainer"})


# ------------------------------------------------------------------------------------- through a real install

TYPES_MODULE = """
from olive.data.containers import DataContainerType
from olive.model.handler import OliveModelHandler


class GoodModel(OliveModelHandler):
    model_type = "GoodModel"


class GoodContainer(DataContainerType):
    pass
"""

INSTALLED = """
import json, sys
from olive.data.config import DataConfig
from olive.exceptions import OliveError
from olive.model.types import get_model_type, model_type_registry
listed = [e.name for e in model_type_registry().entries()]
imported_by_listing = sorted(m for m in sys.modules if m.startswith("olive_test_types"))
result = {"listed": listed, "imported_by_listing": imported_by_listing}
for name in ["GoodModel", "BrokenModel", "ONNXModel"]:
    try:
        cls = get_model_type(name)
        result[name] = f"{cls.__module__}:{cls.__qualname__}"
    except OliveError as exc:
        result[name] = {"error": type(exc).__name__, "message": str(exc), "cause": type(exc.__cause__).__name__}
try:
    DataConfig.from_json({"name": "d", "type": "BrokenContainer"})
except OliveError as exc:
    result["BrokenContainer"] = {"error": type(exc).__name__, "owner": exc.owner, "message": exc.reason}
print("@@" + json.dumps(result))
"""


def test_installed_model_types_load_lazily_and_a_broken_one_is_isolated(fresh_venv):
    import json

    from olive.testing.distributions import distribution_wheel

    wheel = distribution_wheel(
        "olive-test-types",
        "1.2",
        modules={"olive_test_types.py": TYPES_MODULE, "olive_test_types_broken.py": "import not_installed_at_all\n"},
        entry_points={
            "olive.models": {
                "GoodModel": "olive_test_types:GoodModel",
                "BrokenModel": "olive_test_types_broken:BrokenModel",
            },
            "olive.data_containers": {"BrokenContainer": "olive_test_types_broken:Container"},
        },
    )
    fresh_venv.pip_install("--no-deps", "--no-index", wheel)
    env = {"OLIVE_LOAD_PLUGINS": None, "OLIVE_DISABLE_PLUGINS": None, "OLIVE_STRICT_PLUGINS": None}
    out = fresh_venv.python_run(INSTALLED, env=env).stdout
    result = json.loads(out.rsplit("@@", 1)[1])
    assert {"GoodModel", "BrokenModel", "ONNXModel"} <= set(result["listed"])
    assert result["imported_by_listing"] == []
    assert result["GoodModel"] == "olive_test_types:GoodModel"
    assert result["ONNXModel"] == "olive.model.handler:ONNXModelHandler"
    broken = result["BrokenModel"]
    assert broken["error"] == "PluginLoadError" and broken["cause"] == "ModuleNotFoundError"
    assert "olive-test-types==1.2" in broken["message"] and "olive_test_types_broken:BrokenModel" in broken["message"]
    container = result["BrokenContainer"]
    assert container["error"] == "WorkflowConfigError" and container["owner"] == "data_configs[0].type"
    assert "olive-test-types==1.2" in container["message"] and "not_installed_at_all" in container["message"]
