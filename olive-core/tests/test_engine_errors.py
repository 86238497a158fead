"""A pass's own error reaches the user once, under the engine's one prefix naming the pass key.

An :class:`~olive.exceptions.OliveError` names its owner apart from its reason, so the engine replaces the
owner with its own; any other exception's message is shown as it is.
"""

from __future__ import annotations

from typing import Any

import pytest
from engine_support import base_workflow

import olive
from olive.exceptions import PassConfigError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive.plugins.registry import PassRegistry, use_registry


class Refuses(Pass):
    """Raises an error naming itself as its owner, or a plain exception."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {
            "config_problem": PassConfigParam(type_=bool, default_value=False),
            "olive_error": PassConfigParam(type_=bool, default_value=False),
        }

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        owner = f"pass {self.pass_name()}"
        if config.config_problem:
            raise PassConfigError("the calibration data has no input 'x'; rename it", owner=owner)
        if config.olive_error:
            raise PassRunError("the graph has no MatMul to rewrite", owner=owner)
        raise RuntimeError("the graph has no MatMul to rewrite")


@pytest.fixture
def registry() -> PassRegistry:
    registry = PassRegistry(entry_points=False)
    registry.register(Refuses, name="Refuses")
    return registry


@pytest.mark.parametrize(
    ("params", "error", "expected"),
    [
        (
            {"config_problem": True},
            PassConfigError,
            "pass 'q' (Refuses): the calibration data has no input 'x'; rename it",
        ),
        (
            {"olive_error": True},
            PassRunError,
            "pass 'q' (Refuses) failed: PassRunError: the graph has no MatMul to rewrite",
        ),
        ({}, PassRunError, "pass 'q' (Refuses) failed: RuntimeError: the graph has no MatMul to rewrite"),
    ],
)
def test_pass_is_named_once(tmp_path, registry, params, error, expected):
    workflow = base_workflow(tmp_path, passes={"q": {"type": "Refuses", **params}})
    with use_registry(registry), pytest.raises(error) as info:
        olive.run(workflow)
    assert str(info.value) == expected
    assert info.value.__cause__ is not None  # the pass's own exception, with its traceback
