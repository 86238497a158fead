"""GraphSurgeries: apply a list of named graph rewrites (Microsoft Olive's surgeons) to an ONNX model."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassParamError, PassRunError, closest_match_hint
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, load_without_weights, model_proto_to_olive_model
from olive_passes_graph._common import carry_over, check_output_loads, first_line, output_guard
from olive_passes_graph.surgeons import OLIVE_ONLY_SURGEONS, Surgeon, SurgeonParamError

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class GraphSurgeries(Pass):
    """Apply ``surgeries`` in order, each ``{"surgeon": NAME, PARAM: VALUE...}`` with a surgeon name of Microsoft
    Olive (any case). Surgeons here: RenameInputs, RenameOutputs, RenameInputDims, RenameOutputDims,
    ReplaceAttentionMaskValue, MatMulAddToGemm, GemmToMatMulAdd, ReciprocalMulToDiv, TieWordEmbeddings,
    DeduplicateNodes, DeduplicateSubgraphInitializers, RemoveMemcpy, SimplifiedLayerNormToL2Norm,
    PowReduceSumPowDiv2LpNorm, RemoveGidxFromMatMulNBits, AttentionMaskToSequenceLengths, RemoveRopeMultiCache.
    A surgeon's params are checked with the pass config; a param it does not take is ignored with a warning, as
    in Olive. ``remove_duplicate_initializers`` then merges initializers of equal content.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "surgeries": PassConfigParam(
                type_=list[dict[str, Any]],
                required=True,
                description='The surgeries, in order: each {"surgeon": NAME, and that surgeon\'s params}.',
            ),
            "remove_duplicate_initializers": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Merge initializers of equal content afterwards (surgeries can add duplicates).",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if not config.surgeries:
            raise PassParamError("param 'surgeries' is empty; list at least one surgery", params="surgeries")
        for index, surgery in enumerate(config.surgeries):
            build_surgeon(surgery, index, warn=False)

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        import onnx_ir as ir

        source = Path(model.model_path)
        proto = load_without_weights(model)
        counts = []
        ir_model = None
        for index, surgery in enumerate(config.surgeries):
            surgeon = build_surgeon(surgery, index, warn=True)
            name = type(surgeon).__name__
            try:
                if surgeon.on_proto:
                    if ir_model is not None:
                        proto, ir_model = ir.to_proto(ir_model), None
                    counts.append(f"{name}: {surgeon.apply_proto(proto)}")
                else:
                    if ir_model is None:
                        ir_model = _to_ir(proto, source.parent)
                    counts.append(f"{name}: {surgeon.apply(ir_model)}")
            except (ValueError, TypeError) as exc:
                raise PassRunError(
                    f"surgeries[{index}] ({name}) cannot be applied to '{model.model_path}': {first_line(exc)}",
                    owner=self.config_owner(),
                ) from exc
        if config.remove_duplicate_initializers:
            from onnx_ir.passes.common import DeduplicateHashedInitializersPass

            ir_model = ir_model if ir_model is not None else _to_ir(proto, source.parent)
            DeduplicateHashedInitializersPass()(ir_model)
        if ir_model is not None:
            proto = ir.to_proto(ir_model)
        logger.info("GraphSurgeries: changes per surgery: %s", ", ".join(counts))
        with output_guard(output_model_path):
            target = Path(output_model_path)
            target = target if target.suffix == ".onnx" else target / source.name
            result = model_proto_to_olive_model(proto, target, config, weights_dir=source.parent)
            check_output_loads(model, result)
        return carry_over(model, result)


def _to_ir(proto: Any, weights_dir: Path) -> Any:
    import onnx_ir as ir

    model = ir.from_proto(proto)
    # Weights still in the input's external data are read from its folder, when a surgeon needs them.
    ir.external_data.set_base_dir(model.graph, str(weights_dir))
    return model


def build_surgeon(surgery: Mapping[str, Any], index: int, warn: bool) -> Surgeon:
    """The surgeon ``surgery`` names, built with its params; a :class:`PassParamError` naming ``surgeries[index]``
    for an unknown surgeon, a missing param or a value the surgeon cannot use."""
    where = f"surgeries[{index}]"
    name = surgery.get("surgeon")
    if not isinstance(name, str) or not name:
        raise PassParamError(
            f'{where} has no "surgeon"; give the surgeon\'s name, e.g. {{"surgeon": "MatMulAddToGemm"}}',
            params="surgeries",
        )
    surgeon_class = Surgeon.registry.get(name.lower())
    if surgeon_class is None:
        here = sorted(cls.__name__ for cls in Surgeon.registry.values())
        olive_only = {n.lower(): n for n in OLIVE_ONLY_SURGEONS}
        if name.lower() in olive_only:
            reason = "is a Microsoft Olive surgeon that GraphSurgeries here does not implement"
        else:
            reason = f"is not a surgeon{closest_match_hint(name, [*here, *OLIVE_ONLY_SURGEONS])}"
        raise PassParamError(f"{where}: '{name}' {reason}; the surgeons here: {', '.join(here)}", params="surgeries")
    parameters = {
        key: param
        for key, param in inspect.signature(surgeon_class.__init__).parameters.items()
        if key != "self" and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
    }
    given = {key: value for key, value in surgery.items() if key != "surgeon"}
    missing = [key for key, param in parameters.items() if param.default is param.empty and key not in given]
    if missing:
        raise PassParamError(
            f"{where} ({surgeon_class.__name__}) lacks param(s) {', '.join(missing)}; it takes "
            f"{', '.join(parameters) or 'no params'}",
            params="surgeries",
        )
    for key in sorted(set(given) - set(parameters)):
        if warn:
            logger.warning(
                "%s (%s): param '%s' is not one it takes; ignored%s",
                where,
                surgeon_class.__name__,
                key,
                closest_match_hint(key, parameters),
            )
        del given[key]
    try:
        return surgeon_class(**given)
    except (SurgeonParamError, TypeError, ValueError) as exc:
        raise PassParamError(f"{where} ({surgeon_class.__name__}): {first_line(exc)}", params="surgeries") from exc
