"""onnxruntime's ``quant_pre_process`` steps, run on the graph while the weights stay on disk.

onnxruntime's own function loads the whole model, copies it for symbolic shape inference and holds it
while an onnxruntime session optimizes a saved copy: about three times the model in memory. The three
steps need the weights only in the session, so here symbolic shape inference runs on the graph alone
(large tensors left in their files), the graph is saved beside a copy of the input's data files (made by
the kernel, not in memory), and the session (``optimized_model_filepath``, weights written to external
data) and ONNX shape inference (``infer_shapes_path``) read the weights from disk. Models below opset 11,
which onnxruntime first converts (Upsample to Resize), still go through its own function.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from olive.exceptions import ModelLoadError
from olive.logs import onnxruntime_logs
from olive.measure import create_session
from olive.model.handler import ONNXModelHandler
from olive.passes.onnx.common import copy_external_data, load_without_weights, release_memory, require_protobuf_size

if TYPE_CHECKING:
    import onnx

logger = logging.getLogger(__name__)

_CWD_LOCK = threading.Lock()
# onnxruntime's own quant_pre_process converts models below this opset before anything else.
_FIRST_UNCONVERTED_OPSET = 11


@contextlib.contextmanager
def scratch_cwd() -> Iterator[None]:
    # When symbolic shape inference gives up, onnxruntime saves its partial model (and, for big models,
    # an external data file with a random name) into the current directory. Run it from a throwaway one.
    with _CWD_LOCK, tempfile.TemporaryDirectory(prefix="olive-quant-cwd-") as scratch, contextlib.chdir(scratch):
        yield


def quant_pre_process(
    input_path: str | Path,
    output_path: str | Path,
    skip_optimization: bool = False,
    skip_onnx_shape: bool = False,
    skip_symbolic_shape: bool = False,
) -> bool:
    """Preprocess ``input_path`` into ``output_path`` (weights as external data beside it).

    Returns True when symbolic shape inference had to be skipped: some exports make it fail with
    "Incomplete symbolic shape inference", and the rest of the preprocessing still helps quantization.
    """
    input_path, output_path = Path(input_path).resolve(), Path(output_path).resolve()
    graph = load_without_weights(input_path)
    opset = next((o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is not None and opset < _FIRST_UNCONVERTED_OPSET:
        del graph
        require_protobuf_size(
            ONNXModelHandler(str(input_path)),
            f"onnxruntime's quant_pre_process (which converts opset {opset} models to opset 11 first)",
            "convert the model to opset 11 or later first (OnnxOpVersionConversion, before it grows past 2 GB), "
            "or set quant_preprocess to false",
        )
        return _ort_quant_pre_process(input_path, output_path, skip_optimization, skip_onnx_shape, skip_symbolic_shape)
    skipped = False
    if not skip_symbolic_shape:
        try:
            graph = _symbolic_shapes(graph)
        except Exception as exc:
            if "symbolic shape" not in str(exc).lower() and not isinstance(exc, ImportError):
                raise
            logger.warning(
                "quant_pre_process: symbolic shape inference failed (%s); retrying with skip_symbolic_shape=True", exc
            )
            skipped = True
    with tempfile.TemporaryDirectory(prefix="olive-quant-pre-", dir=output_path.parent) as tmp:
        work = Path(tmp)
        copy_external_data(input_path, work)
        current = work / "graph.onnx"
        _save_graph(graph, current)
        del graph
        if not skip_optimization:
            current = _optimize(current, work / "optimized.onnx")
            release_memory()
        if not skip_onnx_shape:
            import onnx

            inferred = work / "inferred.onnx"
            onnx.shape_inference.infer_shapes_path(str(current), str(inferred))
            current = inferred
        _move_model(current, output_path)
    return skipped


def _symbolic_shapes(graph: onnx.ModelProto) -> onnx.ModelProto:
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    # The settings onnxruntime's quant_pre_process uses.
    with scratch_cwd(), onnxruntime_logs(logger):
        return SymbolicShapeInference.infer_shapes(graph, 2**31 - 1, True, False, 0)


def _save_graph(graph: onnx.ModelProto, path: Path) -> None:
    import onnx

    # Large tensors still refer to the data files copied beside ``path``; the small ones stay inline.
    onnx.save_model(graph, str(path))


def _optimize(path: Path, optimized: Path) -> Path:
    """onnxruntime's basic graph optimizations, as quant_pre_process applies them; on failure the input."""
    settings = {
        "execution_provider": ["CPUExecutionProvider"],
        "session_options": {
            "graph_optimization_level": "ORT_ENABLE_BASIC",
            "extra_session_config": {
                "session.optimized_model_external_initializers_file_name": "optimized.onnx.data",
            },
        },
    }
    try:
        with onnxruntime_logs(logger):
            create_session(path, settings, optimized_model_path=optimized)
    except ModelLoadError as exc:
        # As onnxruntime's quant_pre_process does: the optimization is skipped, the rest still runs.
        logger.error("quant_pre_process: onnxruntime's graph optimization failed, continuing without it: %s", exc)
        return path
    return optimized


def _move_model(source: Path, target: Path) -> None:
    """Move the model ``source`` (graph and the data files it uses) to ``target`` and ``<target>.data``."""
    import onnx
    from onnx.external_data_helper import ExternalDataInfo, _get_all_tensors, uses_external_data
    from onnxruntime.quantization.quant_utils import add_pre_process_metadata

    graph = onnx.load(str(source), load_external_data=False)
    add_pre_process_metadata(graph)
    external = [t for t in _get_all_tensors(graph) if uses_external_data(t)]
    locations = sorted({ExternalDataInfo(t).location for t in external})
    if len(locations) == 1:
        names = {locations[0]: f"{target.name}.data"}
    else:
        names = {location: location for location in locations}
    for location, name in names.items():
        (source.parent / location).replace(target.parent / name)
    for tensor in external:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = names[entry.value]
    onnx.save_model(graph, str(target))


def _ort_quant_pre_process(
    input_path: Path, output_path: Path, skip_optimization: bool, skip_onnx_shape: bool, skip_symbolic_shape: bool
) -> bool:
    from onnxruntime.quantization.shape_inference import quant_pre_process as ort_quant_pre_process

    def run(skip_symbolic: bool) -> None:
        with scratch_cwd(), onnxruntime_logs(logger):
            ort_quant_pre_process(
                input_model=str(input_path),
                output_model_path=str(output_path),
                skip_optimization=skip_optimization,
                skip_onnx_shape=skip_onnx_shape,
                skip_symbolic_shape=skip_symbolic,
                auto_merge=True,
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                external_data_location=output_path.name + ".data",
            )

    if skip_symbolic_shape:
        run(True)
        return False
    try:
        run(False)
    except Exception as exc:
        if "symbolic shape" not in str(exc).lower() and not isinstance(exc, ImportError):
            raise
        logger.warning(
            "quant_pre_process: symbolic shape inference failed (%s); retrying with skip_symbolic_shape=True", exc
        )
        run(True)
        return True
    return False
