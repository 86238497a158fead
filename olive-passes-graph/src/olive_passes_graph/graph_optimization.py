"""OrtGraphOptimization: save onnxruntime's optimized graph so deployments skip that work at load time."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from olive.exceptions import PassParamError, closest_match_hint
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.search.search_parameter import Categorical
from olive_passes_graph._common import (
    GRAPH_LEVELS,
    carry_over,
    check_loads,
    graph_level_name,
    ort_offline_optimize,
    output_guard,
    session_providers,
)

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

_LEVEL_CHOICES = ["basic", "extended", "all"]


class OrtGraphOptimization(Pass):
    """Apply onnxruntime's graph optimizations offline and save the optimized graph.

    onnxruntime optimizes every model each time it builds a session. This pass does it once, at the chosen
    ``graph_optimization_level``, and writes the result (``SessionOptions.optimized_model_filepath``).
    ``basic`` rewrites are provider-independent, so the model stays portable. ``extended`` and ``all``
    bake in rewrites for the accelerator's execution provider: the output then records that provider and
    ``graph_optimization_level: ORT_DISABLE_ALL`` in its ``inference_settings`` (the work is done; redoing
    it only costs load time), and must be run on that provider and hardware.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "graph_optimization_level": PassConfigParam(
                type_=str,
                default_value="all",
                search_defaults=Categorical(list(_LEVEL_CHOICES)),
                description="onnxruntime level to apply: basic (portable), extended or all (provider specific).",
            ),
            "disabled_optimizers": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description="onnxruntime optimizer names to skip (e.g. ConstantSharing).",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        # The session that writes the graph runs on the accelerator's execution provider.
        return False

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        value = config.graph_optimization_level
        level = graph_level_name(value)
        if level is None or level == "ORT_DISABLE_ALL":
            raise PassParamError(
                f"param 'graph_optimization_level' is {value!r}{closest_match_hint(str(value), _LEVEL_CHOICES)}; "
                f"use one of {', '.join(_LEVEL_CHOICES)}",
                params="graph_optimization_level",
            )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        level = graph_level_name(config.graph_optimization_level)
        short = next(name for name, full in GRAPH_LEVELS.items() if full == level)
        provider = self.accelerator_spec.execution_provider
        providers = session_providers(provider, self.pass_name())
        proto = ort_offline_optimize(model.model_path, level, providers, config.disabled_optimizers)
        settings = None
        if short != "basic":
            settings = {
                "execution_provider": providers,
                "session_options": {"graph_optimization_level": "ORT_DISABLE_ALL"},
            }
        with output_guard(output_model_path):
            result = model_proto_to_olive_model(proto, output_model_path, config)
            check_loads(result, providers)
        return carry_over(
            model,
            result,
            inference_settings=settings,
            attributes={"ort_graph_optimization": {"level": short, "execution_provider": provider}},
        )
