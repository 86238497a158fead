"""Resolving a workflow's pass config: search on/off, pins, lists, explicit defaults, and the errors."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.passes import BasePassConfig, Pass, PassConfigParam
from olive.passes.pass_config import ParamCategory
from olive.search.search_parameter import (
    Boolean,
    Categorical,
    Conditional,
    ConditionalDefault,
    SpecialParamValue,
)


class Precision(Enum):
    INT8 = "int8"
    UINT8 = "uint8"


class Quantize(Pass):
    """A pass with one of every kind of param."""

    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "precision": PassConfigParam(
                type_=Precision, default_value=Precision.INT8, search_defaults=Categorical(["int8", "uint8"])
            ),
            "per_channel": PassConfigParam(type_=bool, default_value=False, search_defaults=Boolean()),
            "op_types": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                search_defaults=Categorical([["MatMul"], ["MatMul", "Gemm"]]),
            ),
            "nodes_to_exclude": PassConfigParam(type_=list[str] | None, default_value=None),
            "threshold": PassConfigParam(type_=float, default_value=0.5),
            "block_size": PassConfigParam(
                type_=int,
                default_value=ConditionalDefault(parents="per_channel", support={(True,): 32, (False,): 128}),
            ),
            "callback": PassConfigParam(type_=Callable | None, default_value=None),
            "weights_file": PassConfigParam(type_=str | None, category=ParamCategory.PATH),
            "options": PassConfigParam(type_=dict[str, Any], default_value={}),
        }

    def _run_for_config(self, model, config, output_model_path):
        return model


def test_search_off_uses_defaults_and_resolves_conditional_default():
    config = Quantize.generate_config(CPU, {}, disable_search=True)
    assert config.precision is Precision.INT8
    assert config.per_channel is False
    assert config.block_size == 128
    config = Quantize.generate_config(CPU, {"per_channel": True}, disable_search=True)
    assert config.block_size == 32


def test_search_on_searches_params_with_search_defaults_only():
    _, fixed, search = Quantize.get_config_params(CPU, {})
    assert set(search) == {"precision", "per_channel", "op_types", "block_size"}
    # block_size's default depends on a searched parent, so it becomes a Conditional
    assert isinstance(search["block_size"], Conditional)
    assert fixed["threshold"] == 0.5


def test_user_value_pins_a_searchable_param():
    _, fixed, search = Quantize.get_config_params(CPU, {"per_channel": True, "precision": "uint8"})
    assert fixed["per_channel"] is True
    assert fixed["precision"] is Precision.UINT8  # enum given by its value
    assert fixed["block_size"] == 32
    assert "per_channel" not in search and "block_size" not in search


def test_a_list_searches_that_list_but_a_valid_list_value_is_pinned():
    _, fixed, search = Quantize.get_config_params(CPU, {"precision": ["uint8"], "op_types": ["MatMul"]})
    assert search["precision"] == Categorical(["uint8"])
    assert fixed["op_types"] == ["MatMul"]  # a list[str] param given a list[str] is a value, not a search
    _, fixed, search = Quantize.get_config_params(CPU, {"op_types": [["Gemm"], ["Conv"]]})
    assert search["op_types"] == Categorical([["Gemm"], ["Conv"]])


def test_explicit_searchable_values_and_default_value():
    _, fixed, search = Quantize.get_config_params(CPU, {"per_channel": "DEFAULT_VALUE"})
    assert fixed["per_channel"] is False
    assert "per_channel" not in search
    _, _, search = Quantize.get_config_params(CPU, {"per_channel": "SEARCHABLE_VALUES"})
    assert search["per_channel"] == Boolean()


def test_search_parameter_json_form_is_accepted():
    value = {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": [True]}
    _, _, search = Quantize.get_config_params(CPU, {"per_channel": value})
    assert search["per_channel"] == Categorical([True])


def test_config_is_read_only_and_mapping_like():
    config = Quantize.generate_config(CPU, {"nodes_to_exclude": ["a"]}, disable_search=True)
    assert isinstance(config, BasePassConfig)
    assert config["nodes_to_exclude"] == config.nodes_to_exclude == ["a"]
    assert dict(config)["threshold"] == 0.5
    assert "threshold" in config
    with pytest.raises(AttributeError):
        config.threshold = 1.0  # type: ignore[misc]
    with pytest.raises(KeyError):
        config["nope"]
    assert config.to_json()["precision"] == "int8"


def test_int_is_accepted_for_float_and_path_params_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = Quantize.generate_config(CPU, {"threshold": 1, "weights_file": "w.bin"}, disable_search=True)
    assert config.threshold == 1.0 and isinstance(config.threshold, float)
    assert Path(config.weights_file) == tmp_path / "w.bin"


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"per_chanel": True}, "unknown param 'per_chanel' (did you mean 'per_channel'?)"),
        ({"threshold": "high"}, "param 'threshold' expects float, got 'high'"),
        ({"per_channel": 1}, "param 'per_channel' expects bool"),
        ({"precision": "int4"}, "param 'precision' expects Precision ('int8', 'uint8')"),
        ({"nodes_to_exclude": "a"}, "param 'nodes_to_exclude' expects list[str] | None"),
        ({"nodes_to_exclude": [1]}, "param 'nodes_to_exclude' expects list[str] | None"),
        ({"nodes_to_exclude": ["a", 2]}, "got ['a', 2]: at nodes_to_exclude[1], 2 is not str"),
        ({"callback": 3}, "param 'callback' expects Callable | None"),
        ({"options": []}, "param 'options' expects dict[str, any value]"),
    ],
)
def test_bad_values_are_pass_config_errors_naming_param_and_pass(config, fragment):
    with pytest.raises(PassConfigError) as info:
        Quantize.generate_config(CPU, config, disable_search=True, pass_key="quant")
    assert fragment in str(info.value)
    assert "pass 'quant' (Quantize)" in str(info.value)


def test_list_without_search_explains_why():
    with pytest.raises(PassConfigError, match="only when the workflow has a search_strategy"):
        Quantize.generate_config(CPU, {"per_channel": [True, False]}, disable_search=True)


def test_searchable_values_errors():
    with pytest.raises(PassConfigError, match="no search_strategy"):
        Quantize.get_config_params(CPU, {"per_channel": "SEARCHABLE_VALUES"}, disable_search=True)
    with pytest.raises(PassConfigError, match="has no search defaults"):
        Quantize.get_config_params(CPU, {"threshold": "SEARCHABLE_VALUES"})


def test_several_problems_are_reported_together():
    with pytest.raises(PassConfigError) as info:
        Quantize.generate_config(CPU, {"a": 1, "b": 2}, disable_search=True)
    assert "unknown param 'a'" in str(info.value) and "unknown param 'b'" in str(info.value)


def test_wrongly_typed_search_values_are_rejected():
    with pytest.raises(PassConfigError, match="search values \\['x'\\] of param 'threshold'"):
        Quantize.get_config_params(CPU, {"threshold": Categorical([0.1, "x"])})
    with pytest.raises(PassConfigError, match=r"search values \['unit8'\] of param 'precision' .*'uint8'\?"):
        Quantize.get_config_params(CPU, {"precision": Categorical(["int8", "unit8"])})


class InvalidDefault(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "mode": PassConfigParam(type_=str, default_value="a"),
            "level": PassConfigParam(type_=int, default_value=ConditionalDefault(parents="mode", support={("a",): 1})),
        }

    def _run_for_config(self, model, config, output_model_path):
        return model


def test_invalid_left_fixed_is_an_error():
    assert InvalidDefault.generate_config(CPU, {}, disable_search=True).level == 1
    with pytest.raises(PassConfigError, match="param 'level' resolves to an invalid value"):
        InvalidDefault.generate_config(CPU, {"mode": "b"}, disable_search=True)
    with pytest.raises(PassConfigError, match="resolves to an invalid value"):
        InvalidDefault.generate_config(CPU, {"level": SpecialParamValue.INVALID.value}, disable_search=True)


class Cyclic(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "a": PassConfigParam(type_=int, default_value=ConditionalDefault(parents="b", support={(1,): 1})),
            "b": PassConfigParam(type_=int, default_value=ConditionalDefault(parents="a", support={(1,): 1})),
        }

    def _run_for_config(self, model, config, output_model_path):
        return model


class DanglingParent(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return {
            "level": PassConfigParam(
                type_=int,
                default_value=1,
                search_defaults=Conditional(parents=("modee",), support={("x",): Categorical([1])}),
            ),
            "mode": PassConfigParam(type_=str, default_value="x"),
        }

    def _run_for_config(self, model, config, output_model_path):
        return model


def test_parent_cycle_names_the_cycle():
    with pytest.raises(PassConfigError, match="cycle: a -> b -> a"):
        Cyclic.generate_config(CPU, {}, disable_search=True)


def test_conditional_with_missing_parent_names_it():
    with pytest.raises(PassConfigError) as info:
        DanglingParent.get_config_params(CPU, {})
    message = str(info.value)
    assert "'level' depends on 'modee', which is not a param (did you mean 'mode'?)" in message


class NotADict(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec):
        return [PassConfigParam(type_=int)]

    def _run_for_config(self, model, config, output_model_path):
        return model


def test_default_config_must_return_param_dict():
    with pytest.raises(PassConfigError, match="must return a dict of PassConfigParam"):
        NotADict.default_config(CPU)


def test_search_defaults_must_be_a_search_parameter():
    with pytest.raises(PassConfigError, match="search_defaults must be a Categorical or Conditional"):
        PassConfigParam(type_=int, search_defaults=[1, 2])


def test_reserved_param_names_are_rejected():
    class Reserved(Pass):
        @classmethod
        def _default_config(cls, accelerator_spec):
            return {"items": PassConfigParam(type_=int, default_value=1)}

        def _run_for_config(self, model, config, output_model_path):
            return model

    with pytest.raises(PassConfigError, match="reserved"):
        Reserved.generate_config(CPU, {}, disable_search=True)


def test_unknown_key_in_search_point_is_rejected():
    with pytest.raises(PassConfigError, match="unknown param 'nope'"):
        Quantize.generate_config(CPU, {}, point={"nope": 1})
