"""The example of the "How to add a new optimization Pass" page behaves exactly as documented."""

from __future__ import annotations

from typing import Callable, Dict, Union  # noqa: UP035 - the page's own spelling must keep working

import pytest

from olive.exceptions import PassConfigError
from olive.hardware.accelerator import AcceleratorSpec, Device
from olive.passes import Pass
from olive.passes.olive_pass import PassConfigParam
from olive.passes.pass_config import ParamCategory
from olive.search.search_space import SearchSpace
from olive.strategy.search_parameter import Categorical, Conditional, ConditionalDefault

CPU = AcceleratorSpec(accelerator_type=Device.CPU, execution_provider="CPUExecutionProvider")


class NewOptimizationTrick(Pass):
    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> Dict[str, PassConfigParam]:  # noqa: UP006
        return {
            "param1": PassConfigParam(type_=int, required=True, description="param1 description"),
            "param2": PassConfigParam(type_=int, default_value=1, description="param2 description"),
            "param3": PassConfigParam(
                type_=int, default_value=1, search_defaults=Categorical([1, 2, 3]), description="param3 description"
            ),
            "param4": PassConfigParam(
                type_=Union[str, Callable[[str], Pass]],  # noqa: UP007
                category=ParamCategory.OBJECT,
                description="param4 description",
            ),
            "param5": PassConfigParam(
                type_=int,
                default_value=ConditionalDefault(parents="param2", support={(1,): 2, (2,): 3}, default=4),
                description="param5 description",
            ),
            "param6": PassConfigParam(
                type_=int,
                default_value=1,
                search_defaults=Conditional(
                    parents=("param2", "param3"),
                    support={
                        (1, 1): Categorical([1, 2, 3]),
                        (1, 2): Categorical([4, 5, 6]),
                    },
                ),
                description="param6 description",
            ),
        }

    def _run_for_config(self, model, config, output_model_path):
        return model


class StaticDefaultConfig(NewOptimizationTrick):
    """The page calls `_default_config` a static method; that spelling is accepted too."""

    @staticmethod
    def _default_config(accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {"param1": PassConfigParam(type_=int, default_value=7)}


@pytest.mark.parametrize(("param2", "param5"), [(1, 2), (2, 3), (5, 4), (-1, 4)])
def test_conditional_default_resolves_without_search(param2, param5):
    config = NewOptimizationTrick.generate_config(CPU, {"param1": 0, "param2": param2}, disable_search=True)
    assert config.param5 == param5
    assert config["param5"] == param5


def test_search_space_has_only_valid_param3_param6_combinations():
    _, fixed, search = NewOptimizationTrick.get_config_params(CPU, {"param1": 0})
    assert fixed["param2"] == 1
    assert fixed["param5"] == 2
    assert set(search) == {"param3", "param6"}
    space = SearchSpace(search)
    points = {(p["param3"], p["param6"]) for p in space.iterate()}
    # param2 is fixed at 1: (1, 1) -> [1, 2, 3], (1, 2) -> [4, 5, 6], (1, 3) -> invalid, never enumerated
    assert points == {(1, 1), (1, 2), (1, 3), (2, 4), (2, 5), (2, 6)}
    assert space.size() == 6


def test_every_point_generates_a_config():
    _, _, search = NewOptimizationTrick.get_config_params(CPU, {"param1": 0})
    for point in SearchSpace(search).iterate():
        config = NewOptimizationTrick.generate_config(CPU, {"param1": 0}, point=point)
        assert (config.param3, config.param6) == (point["param3"], point["param6"])


def test_param2_other_value_leaves_no_valid_point():
    _, _, search = NewOptimizationTrick.get_config_params(CPU, {"param1": 0, "param2": 2})
    assert SearchSpace(search).size() == 0


def test_missing_required_param_names_it():
    with pytest.raises(PassConfigError, match="param1"):
        NewOptimizationTrick.generate_config(CPU, {}, disable_search=True)


def test_static_default_config_is_accepted():
    config = StaticDefaultConfig.generate_config(CPU, {}, disable_search=True)
    assert config.param1 == 7
    assert StaticDefaultConfig(CPU, {"param1": 3}).config.param1 == 3


def test_object_param_accepts_a_callable_or_a_name():
    def factory(name: str) -> Pass:
        raise NotImplementedError

    config = NewOptimizationTrick.generate_config(CPU, {"param1": 0, "param4": factory}, disable_search=True)
    assert config.param4 is factory
    config = NewOptimizationTrick.generate_config(CPU, {"param1": 0, "param4": "make_pass"}, disable_search=True)
    assert config.param4 == "make_pass"
