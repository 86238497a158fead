"""Helpers shared by the passes: output hygiene, handler bookkeeping, onnxruntime offline optimization."""

from __future__ import annotations

import contextlib
import copy
import logging
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import ExecutionProviderError, ModelLoadError, PassRunError
from olive.execution_providers.registry import adapter_for
from olive.measure import create_session

if TYPE_CHECKING:
    import onnx

    from olive.model.handler import ONNXModelHandler

logger = logging.getLogger(__name__)

#: Accepted spellings of onnxruntime's graph optimization levels, mapped to ``GraphOptimizationLevel`` names.
GRAPH_LEVELS: dict[str, str] = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}
# The integer levels the transformer optimizer and older workflow files use.
_INT_LEVELS = {0: "ORT_DISABLE_ALL", 1: "ORT_ENABLE_BASIC", 2: "ORT_ENABLE_EXTENDED", 99: "ORT_ENABLE_ALL"}


def graph_level_name(value: Any) -> str | None:
    """The ``GraphOptimizationLevel`` member name for ``value`` (int, short or full name), or None if unknown."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return _INT_LEVELS.get(value)
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in _INT_LEVELS.values():
            return text.upper()
        return GRAPH_LEVELS.get(text.lower())
    return None


@contextlib.contextmanager
def output_guard(output_model_path: str | Path) -> Iterator[None]:
    """Remove whatever the body created under ``output_model_path`` if it raises.

    The engine hands each run a fresh path; a failed run must not leave a half-written model there that a
    later run (or a person) could mistake for a result.
    """
    path = Path(output_model_path)
    target = path if path.suffix != ".onnx" else path.parent
    existed = target.exists()
    before = set(target.iterdir()) if existed and target.is_dir() else set()
    try:
        yield
    except BaseException:
        if not existed:
            shutil.rmtree(target, ignore_errors=True)
        elif target.is_dir():
            for entry in set(target.iterdir()) - before:
                if entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        raise


def carry_over(
    source: ONNXModelHandler,
    result: ONNXModelHandler,
    inference_settings: Mapping[str, Any] | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> ONNXModelHandler:
    """Give ``result`` the input model's attributes and inference settings, updated with the pass's own."""
    merged_attributes = copy.deepcopy(dict(source.model_attributes or {}))
    merged_attributes.update(copy.deepcopy(dict(attributes or {})))
    result.model_attributes = merged_attributes
    settings = copy.deepcopy(dict(getattr(source, "inference_settings", None) or {}))
    for key, value in (inference_settings or {}).items():
        if key == "session_options" and isinstance(value, Mapping):
            settings["session_options"] = {**dict(settings.get("session_options") or {}), **copy.deepcopy(value)}
        else:
            settings[key] = copy.deepcopy(value)
    result.inference_settings = settings or None
    return result


def check_loads(model: ONNXModelHandler, providers: list[str] | None = None) -> None:
    """Raise :class:`ModelLoadError` naming the file unless onnxruntime can build a session for ``model``."""
    # Loading is the check; optimizing here would only cost time.
    settings = {
        "execution_provider": providers or ["CPUExecutionProvider"],
        "session_options": {"graph_optimization_level": "ORT_DISABLE_ALL"},
    }
    try:
        create_session(model.model_path, settings)
    except ModelLoadError as exc:
        raise ModelLoadError(
            f"{exc.reason}; check that the file is a valid ONNX model for the installed onnxruntime"
        ) from exc


def check_output_loads(source: ONNXModelHandler, result: ONNXModelHandler) -> None:
    """:func:`check_loads` for a pass's output; when the input does not load either, the error names the input.

    The output sits in a scratch folder of the cache; an input onnxruntime already refuses (an unknown op, say)
    is the user's file to fix, not the pass's result.
    """
    try:
        check_loads(result)
    except ModelLoadError as output_error:
        try:
            check_loads(source)
        except ModelLoadError as input_error:
            raise input_error from output_error
        raise


def session_providers(execution_provider: str, pass_name: str) -> list[str]:
    """The providers for an offline-optimization session on ``execution_provider`` (with CPU fallback).

    A plugin provider (OpenVINO's, say) compiles the nodes it takes when a session starts: the graph written
    offline is what onnxruntime's own optimizers make of it, on the CPU provider.
    """
    import onnxruntime as ort

    if adapter_for(execution_provider) is not None:
        return ["CPUExecutionProvider"]
    available = ort.get_available_providers()
    if execution_provider not in available:
        raise ExecutionProviderError(
            f"{pass_name}: execution provider {execution_provider} is not in the installed onnxruntime "
            f"({', '.join(available)}); install the onnxruntime package that provides it or target one of those"
        )
    return list(dict.fromkeys([execution_provider, "CPUExecutionProvider"]))


def ort_offline_optimize(
    model_path: str,
    level: str,
    providers: list[str],
    disabled_optimizers: list[str] | None = None,
) -> onnx.ModelProto:
    """Let onnxruntime optimize ``model_path`` at ``level`` and return the graph it would run (weights loaded)."""
    import onnx

    with tempfile.TemporaryDirectory(prefix="olive-ort-opt-") as tmp:
        optimized = ort_offline_optimize_to(model_path, Path(tmp), level, providers, disabled_optimizers)
        return onnx.load(str(optimized), load_external_data=True)


def ort_offline_optimize_to(
    model_path: str,
    folder: Path,
    level: str,
    providers: list[str],
    disabled_optimizers: list[str] | None = None,
) -> Path:
    """Let onnxruntime optimize ``model_path`` at ``level`` into ``folder``; returns the optimized model's path.

    onnxruntime writes the optimized graph (``optimized_model_path``), the way its own transformer optimizer
    does, without the PyTorch import that its helper makes. Weights go to ``optimized.data`` beside it, so
    models past protobuf's 2 GB limit are written too and nothing is loaded back here.
    """
    optimized = folder / "optimized.onnx"
    session_options = {
        "graph_optimization_level": level,
        # Its warning that "all" graphs are hardware specific is handled: such outputs pin their provider.
        "log_severity_level": 3,
        "extra_session_config": {
            "session.optimized_model_external_initializers_file_name": "optimized.data",
            "session.optimized_model_external_initializers_min_size_in_bytes": "1024",
        },
    }
    try:
        create_session(
            model_path,
            {"execution_provider": providers, "session_options": session_options},
            disabled_optimizers=disabled_optimizers,
            optimized_model_path=optimized,
        )
    except ModelLoadError as exc:
        raise ModelLoadError(
            f"{exc.reason}; check that the file is a valid ONNX model for the installed onnxruntime"
        ) from exc
    if not optimized.is_file():
        raise PassRunError(f"onnxruntime did not write the optimized model for '{model_path}'")
    return optimized


def copy_model_files(model: ONNXModelHandler, output_model_path: str | Path) -> Path:
    """Copy the model file and its external data under ``output_model_path``.

    Copies (through the kernel, not through memory), never hard links: onnx refuses to read a data file that
    has a second link, so a link would make the user's own input model unreadable while the copy lasts.
    """
    from olive.passes.onnx.common import resolve_onnx_path

    source = Path(model.model_path)
    destination = Path(resolve_onnx_path(output_model_path, source.name))
    for file in [source, *(Path(f) for f in model.external_data_files())]:
        target = destination.parent / file.relative_to(source.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.unlink()
        shutil.copyfile(file, target)
    return destination


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
