"""Running one pass on one model the way the engine does, for tests."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError
from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR
from olive.measure.sessions import create_session
from olive.model.handler import ONNXModelHandler
from olive.testing.scratch import scratch_dir

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler
    from olive.passes.olive_pass import Pass

__all__ = ["check_model_loads", "run_pass"]


def check_model_loads(model: OliveModelHandler) -> None:
    """Raise :class:`OliveError` unless ``model`` is an ONNX model whose file onnxruntime can load."""
    if not isinstance(model, ONNXModelHandler):
        return
    try:
        create_session(model.model_path, {"execution_provider": "CPUExecutionProvider"})
    except OliveError as exc:
        raise OliveError(f"the model at {model.model_path} does not load in onnxruntime: {exc.reason}") from exc


def run_pass(
    pass_class: type[Pass],
    model: OliveModelHandler,
    config: Mapping[str, Any] | None = None,
    accelerator_spec: AcceleratorSpec | None = None,
    output_dir: str | os.PathLike[str] | None = None,
) -> OliveModelHandler:
    """Run ``pass_class`` on ``model`` with ``config`` (no search) and return the output model's handler.

    The pass writes into a fresh folder under ``output_dir`` (when None, a temporary folder removed at
    interpreter exit), as the engine gives it a fresh cache path; the output is checked to load in
    onnxruntime.
    """
    spec = accelerator_spec or DEFAULT_CPU_ACCELERATOR
    pass_config = pass_class.generate_config(spec, dict(config or {}), disable_search=True)
    instance = pass_class(spec, pass_config)
    base = Path(output_dir) if output_dir is not None else scratch_dir("olive-run-pass-")
    base.mkdir(parents=True, exist_ok=True)
    output_path = Path(tempfile.mkdtemp(prefix=f"{pass_class.pass_name()}-", dir=base)) / "output_model"
    result = instance.run(model, output_path)
    check_model_loads(result)
    return result
