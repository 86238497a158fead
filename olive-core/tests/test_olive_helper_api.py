"""The helper API that Microsoft Olive's own ONNX passes import, with Olive's names and behaviour: the
``_validators()`` hook (pydantic validators, honoured: an invalid config is refused, not a silent no-op),
``Conditional.get_ignored_choice()`` / ``get_invalid_choice()``, ``olive.common.utils.hardlink_copy_dir``,
``olive.passes.onnx.common.ir_model_to_olive_model`` / ``fix_dim_params``, ``ONNXModelHandler.load_ir_model`` and
``olive.model.config.ModelConfig``; each on real ONNX models run by onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from click.testing import CliRunner
from pydantic import field_validator, model_validator

import olive
from olive.cli.main import cli
from olive.common.utils import hardlink_copy_dir, hardlink_copy_file
from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.model import ONNXModelHandler
from olive.model.config import ModelConfig
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import (
    fix_dim_params,
    fix_input_shapes,
    get_external_data_config,
    ir_model_to_olive_model,
    model_proto_to_olive_model,
)
from olive.search.search_parameter import Categorical, Conditional, ConditionalDefault, SpecialParamValue
from olive.testing.models import mlp_model, save_model


def _outputs(path: str | Path, rows: int = 2) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = np.random.default_rng(0).standard_normal((rows, 16)).astype(np.float32)
    return session.run(None, {"input": feed})[0]


# -------------------------------------------------------------------------------------------------- _validators()
def _jointly_validate(cls: Any, values: dict) -> dict:
    # As Olive's DynamicToFixedShape writes its rule: a plain function with cls, made a model validator.
    if (not values.get("dim_param")) ^ (not values.get("dim_value")):
        raise ValueError("dim_param and dim_value must be both provided or both None.")
    return values


class FixDims(Pass):
    """Olive's way: a pydantic model validator and a field validator that rewrites a value."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {
            "dim_param": PassConfigParam(type_=list[str] | None, default_value=None),
            "dim_value": PassConfigParam(type_=list[int] | None, default_value=None),
            "graph_name": PassConfigParam(type_=str, default_value="main"),
            **get_external_data_config(),
        }

    @classmethod
    def _validators(cls) -> dict[str, Any]:
        return {
            "validate_configs": model_validator(mode="before")(_jointly_validate),
            "lower_graph_name": field_validator("graph_name", mode="before")(lambda cls, value: value.lower()),
        }

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        proto = model.load_model()
        if config.dim_param:
            fix_dim_params(proto, config.dim_param, config.dim_value)
        proto.graph.name = config.graph_name
        return model_proto_to_olive_model(proto, output_model_path, config)


def _workflow(tmp_path: Path, passes: dict, search: bool = False) -> dict:
    model = save_model(mlp_model(), tmp_path / "input")
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(model.model_path)},
        "passes": passes,
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    if search:
        workflow["search_strategy"] = {"execution_order": "joint"}
    return workflow


def test_an_invalid_config_is_refused_by_the_pass_validators(tmp_path: Path, isolated_registry) -> None:
    isolated_registry.register(FixDims, name="FixDims")
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(_workflow(tmp_path, {"fix": {"type": "FixDims", "dim_param": ["batch"]}})))
    result = CliRunner().invoke(cli, ["run", str(config)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        "Error: passes.fix (FixDims): the pass's validator 'validate_configs' refuses the config: dim_param and "
        "dim_value must be both provided or both None."
    )
    assert not (tmp_path / "out" / "model.onnx").exists()
    with pytest.raises(PassConfigError, match="validate_configs"):
        FixDims(CPU, {"dim_value": [2]})


def test_a_valid_config_runs_with_what_the_validators_rewrote(tmp_path: Path, isolated_registry) -> None:
    isolated_registry.register(FixDims, name="FixDims")
    params = {"type": "FixDims", "dim_param": ["batch"], "dim_value": [2], "graph_name": "Fixed"}
    olive.run(_workflow(tmp_path, {"fix": params}))
    fixed = onnx.load(str(tmp_path / "out" / "model.onnx"))
    assert fixed.graph.name == "fixed"
    assert [d.dim_value for d in fixed.graph.input[0].type.tensor_type.shape.dim] == [2, 16]
    assert [d.dim_value for d in fixed.graph.output[0].type.tensor_type.shape.dim] == [2, 8]
    assert _outputs(tmp_path / "out" / "model.onnx").shape == (2, 8)


def test_a_searched_point_the_validators_refuse_is_pruned_with_the_reason(tmp_path: Path, isolated_registry) -> None:
    isolated_registry.register(FixDims, name="FixDims")
    searched = {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": [None, ["batch"]]}
    params = {"type": "FixDims", "dim_param": searched, "dim_value": [2]}
    output = olive.run(_workflow(tmp_path, {"fix": params}, search=True))
    nodes = {json.dumps(n.config["dim_param"]): n for n in output.footprint if n.pass_key == "fix"}
    assert nodes['["batch"]'].status == "ok"
    assert nodes["null"].status == "pruned"
    assert "validator 'validate_configs' refuses the config: dim_param and dim_value" in nodes["null"].error


def test_a_pydantic_after_validator_sees_the_config_object(isolated_registry) -> None:
    def positive(config: Any) -> Any:
        if config.block <= 0:
            raise ValueError(f"block must be > 0, got {config.block}")
        return config

    class Blocked(FixDims):
        @classmethod
        def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
            return {**super()._default_config(accelerator_spec), "block": PassConfigParam(type_=int, default_value=1)}

        @classmethod
        def _validators(cls) -> dict[str, Any]:
            return {"positive": model_validator(mode="after")(positive)}

    assert Blocked(CPU, {"block": 4}).config.block == 4
    with pytest.raises(PassConfigError, match=r"validator 'positive' refuses the config: block must be > 0, got 0"):
        Blocked(CPU, {"block": 0})


# -------------------------------------------------------------------------------------------------- Conditional
class Calibrated(Pass):
    """Olive's quantization pass's shape: a param that applies in one mode, is ignored in another, and is invalid
    in a third."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {
            "mode": PassConfigParam(
                type_=str, default_value="static", search_defaults=Categorical(["static", "dynamic", "odd"])
            ),
            "calibrate": PassConfigParam(
                type_=str,
                default_value=ConditionalDefault(
                    parents=("mode",),
                    support={("static",): "minmax", ("dynamic",): ConditionalDefault.get_ignored_choice()},
                    default=ConditionalDefault.get_invalid_choice(),
                ),
                search_defaults=Conditional(
                    parents=("mode",),
                    support={
                        ("static",): Categorical(["minmax", "entropy"]),
                        ("dynamic",): Conditional.get_ignored_choice(),
                    },
                    default=Conditional.get_invalid_choice(),
                ),
            ),
            **get_external_data_config(),
        }

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        proto = model.load_model()
        proto.doc_string = f"{config.mode}/{config.calibrate}"
        return model_proto_to_olive_model(proto, output_model_path, config)


def test_conditional_ignored_and_invalid_choices_as_in_olive(tmp_path: Path, isolated_registry) -> None:
    assert Conditional.get_ignored_choice() == Categorical([SpecialParamValue.IGNORED])
    assert Conditional.get_invalid_choice() == Categorical([SpecialParamValue.INVALID])
    assert ConditionalDefault.get_ignored_choice() == SpecialParamValue.IGNORED
    isolated_registry.register(Calibrated, name="Calibrated")
    output = olive.run(_workflow(tmp_path, {"q": {"type": "Calibrated"}}, search=True))
    ran = sorted(
        onnx.load(output.get_node(n.model_id).model_path).doc_string
        for n in output.footprint
        if n.pass_key == "q" and n.status == "ok"
    )
    # "odd" lands on the invalid choice: never run; "dynamic" runs with the param ignored.
    assert ran == ["dynamic/OLIVE_IGNORED_PARAM_VALUE", "static/entropy", "static/minmax"]


# -------------------------------------------------------------------------------------------------- helpers
def test_hardlink_copy_dir_links_a_model_folder_and_the_copy_runs(tmp_path: Path) -> None:
    source = tmp_path / "model"
    model_proto_to_olive_model(mlp_model(), source, {"save_as_external_data": True, "size_threshold": 0})
    (source / "sub").mkdir()
    (source / "sub" / "notes.txt").write_text("kept")
    copy = hardlink_copy_dir(source, tmp_path / "copy")
    for name in ("model.onnx", "model.onnx.data", "sub/notes.txt"):
        assert (copy / name).stat().st_ino == (source / name).stat().st_ino
    np.testing.assert_array_equal(_outputs(copy / "model.onnx"), _outputs(source / "model.onnx"))
    single = hardlink_copy_file(source / "model.onnx", tmp_path)
    assert single == tmp_path / "model.onnx" and single.stat().st_nlink == 3
    with pytest.raises(ValueError, match="into itself"):
        hardlink_copy_dir(source, source / "sub")
    with pytest.raises(ValueError, match="does not exist"):
        hardlink_copy_file(tmp_path / "missing.onnx", tmp_path / "x.onnx")


def test_load_ir_model_and_ir_model_to_olive_model_round_trip(tmp_path: Path) -> None:
    handler = save_model(mlp_model(), tmp_path / "input")
    ir_model = handler.load_ir_model()
    assert [value.name for value in ir_model.graph.inputs] == ["input"]
    ir_model.graph.name = "from_ir"
    inline = ir_model_to_olive_model(ir_model, tmp_path / "inline")
    assert inline.model_path == str(tmp_path / "inline" / "model.onnx")
    external = ir_model_to_olive_model(
        handler.load_ir_model(), tmp_path / "external" / "m.onnx", {"save_as_external_data": True}
    )
    assert (tmp_path / "external" / "m.onnx.data").stat().st_size > 0
    assert external.model_path == str(tmp_path / "external" / "m.onnx")
    assert onnx.load(inline.model_path).graph.name == "from_ir"
    # A model whose weights are external reads back whole, and saves inline again.
    again = ir_model_to_olive_model(external.load_ir_model(), tmp_path / "again")
    assert not list((tmp_path / "again").glob("*.data"))
    for model in (inline, external, again):
        np.testing.assert_allclose(_outputs(model.model_path), _outputs(handler.model_path), rtol=1e-6)
    (tmp_path / "bad.onnx").write_bytes(b"not onnx")
    with pytest.raises(Exception, match="could not be read as an ONNX model"):
        ONNXModelHandler(str(tmp_path / "bad.onnx")).load_ir_model()


def test_fix_dim_params_fixes_inputs_and_outputs(tmp_path: Path) -> None:
    proto = mlp_model()
    fix_dim_params(proto, ["batch"], [3])
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [3, 16]
    assert [d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim] == [3, 8]
    model = save_model(proto, tmp_path / "fixed")
    assert _outputs(model.model_path, rows=3).shape == (3, 8)
    with pytest.raises(PassConfigError, match="dim_param has 1 name"):
        fix_dim_params(mlp_model(), ["batch"], [])
    proto = mlp_model()
    fix_input_shapes(proto, ["input"], [[4, 16]])
    assert [d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim] == [4, 8]
    with pytest.raises(PassConfigError, match="the model has no input 'inputs'; its inputs: input"):
        fix_input_shapes(mlp_model(), ["inputs"], [[4, 16]])


def test_model_config_builds_the_handler_from_its_json(tmp_path: Path) -> None:
    handler = save_model(mlp_model(), tmp_path / "input")
    config = ModelConfig.model_validate({**handler.to_json(), "type": "onnxmodel"})
    assert config.type == "ONNXModel"
    rebuilt = config.create_model()
    assert isinstance(rebuilt, ONNXModelHandler) and rebuilt.model_path == handler.model_path
    assert ModelConfig.parse_obj(config.to_json()) == config
    with pytest.raises(Exception, match="TensorFlowModel' is a Microsoft Olive model type"):
        ModelConfig.model_validate({"type": "TensorFlowModel", "config": {}})
