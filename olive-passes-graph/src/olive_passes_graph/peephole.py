"""OnnxPeepholeOptimizer: local clean-ups that never change what the model computes."""

from __future__ import annotations

import errno
import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from olive.cache.space import disk_full_reason
from olive.exceptions import PassParamError, PassRunError, closest_match_hint
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import (
    copy_external_data,
    get_external_data_config,
    load_without_weights,
    model_proto_to_olive_model,
    resolve_onnx_path,
)
from olive_passes_graph._common import carry_over, output_guard

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class OnnxPeepholeOptimizer(Pass):
    """Fold constants, drop dead code, identities and no-op casts (onnxscript optimizer and/or onnxoptimizer).

    Each tool can be switched off. The graph's inputs, outputs and results stay the same; only nodes that
    compute nothing useful go, which makes the model smaller and every later pass and session load faster.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "onnxscript_optimize": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Run onnxscript's optimizer: constant folding, dead code and identity removal, "
                "no-op cast and cast-chain rewrites.",
            ),
            "onnxoptimizer_optimize": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Run onnxoptimizer's fuse-and-eliminate passes (nop casts, identities, dead ends, "
                "consecutive transposes/squeezes, unused initializers...).",
            ),
            "onnxoptimizer_passes": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description="onnxoptimizer pass names to run instead of its fuse-and-eliminate set.",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if not config.onnxscript_optimize and not config.onnxoptimizer_optimize:
            raise PassParamError(
                "both onnxscript_optimize and onnxoptimizer_optimize are false, so the pass would do nothing; enable "
                "one of them or drop the pass",
                params=("onnxscript_optimize", "onnxoptimizer_optimize"),
            )
        if config.onnxoptimizer_passes is not None:
            import onnxoptimizer

            available = set(onnxoptimizer.get_available_passes())
            unknown = [name for name in config.onnxoptimizer_passes if name not in available]
            if unknown:
                hints = "; ".join(f"'{name}'{closest_match_hint(name, available)}" for name in unknown)
                raise PassParamError(
                    f"param 'onnxoptimizer_passes' has unknown pass names: {hints}. "
                    "onnxoptimizer.get_available_passes() lists the valid ones",
                    params="onnxoptimizer_passes",
                )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        import onnx

        # Both tools rewrite the graph and fold small constants; the large weights pass through untouched, so
        # they stay in their files and are copied into the output one at a time.
        proto = load_without_weights(model.model_path)
        before = len(proto.graph.node)
        if config.onnxscript_optimize:
            proto = _onnxscript_optimize(proto, model.model_path)
        with output_guard(output_model_path):
            output = Path(resolve_onnx_path(output_model_path))
            with tempfile.TemporaryDirectory(prefix=".olive-peephole-", dir=output.parent) as tmp:
                weights_dir = Path(model.model_path).parent
                if config.onnxoptimizer_optimize:
                    work = Path(tmp)
                    # onnxoptimizer reads the weights beside the graph; it writes them anew beside its output.
                    copy_external_data(model.model_path, work)
                    graph = work / ".olive-graph.onnx"
                    onnx.save_model(proto, str(graph))
                    del proto
                    proto = _onnxoptimizer_optimize(graph, work / ".olive-optimized.onnx", config.onnxoptimizer_passes)
                    weights_dir = work
                after = len(proto.graph.node)
                result = model_proto_to_olive_model(proto, output_model_path, config, weights_dir=weights_dir)
        logger.info("OnnxPeepholeOptimizer: %d nodes -> %d nodes", before, after)
        return carry_over(model, result, attributes={"peephole_node_count": {"before": before, "after": after}})


def _onnxscript_optimize(proto: onnx.ModelProto, path: str) -> onnx.ModelProto:
    import onnxscript.optimizer

    try:
        return onnxscript.optimizer.optimize(proto)
    except Exception as first:
        # Shape inference is the usual failure on graphs with custom or contrib ops; folding still works without it.
        logger.info("onnxscript optimizer failed (%s); retrying without ONNX shape inference", first)
        try:
            return onnxscript.optimizer.optimize(proto, onnx_shape_inference=False)
        except Exception as exc:
            raise PassRunError(
                f"onnxscript's optimizer failed on '{path}' ({type(exc).__name__}: {exc}); "
                "set onnxscript_optimize to false to skip it"
            ) from exc


def _onnxoptimizer_optimize(path: Path, optimized: Path, passes: list[str] | None) -> onnx.ModelProto:
    """onnxoptimizer on the model at ``path``; returns the graph, its weights in ``<optimized>.data``.

    onnxoptimizer's own entry point for models past 2 GB (``optimize_from_path``, which its ``optimize``
    falls back to) reads and writes the weights in C++, so no Python copy of them is made at any size.
    """
    import onnx
    import onnxoptimizer
    from onnxoptimizer import onnx_opt_cpp2py_export as onnxoptimizer_c

    source = path
    try:
        # Casts and other no-ops are only recognized as such when tensor types are known.
        inferred = path.with_name(path.name + ".inferred.onnx")
        onnx.shape_inference.infer_shapes_path(str(path), str(inferred))
        source = inferred
    except Exception as exc:
        logger.info("ONNX shape inference failed before onnxoptimizer (%s); continuing without it", exc)
    names = list(passes) if passes is not None else onnxoptimizer.get_fuse_and_elimination_passes()
    try:
        onnxoptimizer_c.optimize_from_path(str(source), str(optimized), names, f"{optimized.name}.data")
    except Exception as exc:
        # onnxoptimizer writes from C++: on a full disk it leaves a truncated file and then fails to parse it,
        # and no ENOSPC reaches Python. Said here, while the partial file still fills the disk.
        if disk_full_reason(optimized.parent, exc) is not None:
            raise OSError(errno.ENOSPC, "onnxoptimizer's output was cut short by the full disk") from exc
        raise PassRunError(
            f"onnxoptimizer failed on '{path}' ({type(exc).__name__}: {exc}); "
            "set onnxoptimizer_optimize to false to skip it"
        ) from exc
    return onnx.load(str(optimized), load_external_data=False)
