"""A pass's own error reaches the user once, under the engine's one prefix naming the pass key."""

from __future__ import annotations

from typing import Any

import pytest
from test_engine_support import base_workflow

import olive
from olive.exceptions import PassConfigError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive.plugins.registry import PassRegistry, use_registry


class Refuses(Pass):
    """Raises an error whose message already names the pass, as many passes' errors do."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {"config_problem": PassConfigParam(type_=bool, default_value=False)}

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        if config.config_problem:
            raise PassConfigError(f"pass {self.pass_name()}: the calibration data has no input 'x'; rename it")
        raise RuntimeError(f"{self.pass_name()}: the graph has no MatMul to rewrite")


@pytest.fixture
def registry() -> PassRegistry:
    registry = PassRegistry(entry_points=False)
    registry.register(Refuses, name="Refuses")
    return registry


@pytest.mark.parametrize(
    ("config_problem", "error", "expected"),
    [
        (True, PassConfigError, "pass 'q' (Refuses): the calibration data has no input 'x'; rename it"),
        (False, PassRunError, "pass 'q' (Refuses) failed: RuntimeError: the graph has no MatMul to rewrite"),
    ],
)
def test_pass_is_named_once(tmp_path, registry, config_problem, error, expected):
    workflow = base_workflow(tmp_path, passes={"q": {"type": "Refuses", "config_problem": config_problem}})
    with use_registry(registry), pytest.raises(error) as info:
        olive.run(workflow)
    assert str(info.value) == expected
