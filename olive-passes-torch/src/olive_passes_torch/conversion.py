"""``OnnxConversion``: a PyTorch or Hugging Face model to ONNX with ``torch.onnx.export``, checked against PyTorch.

The pass loads the input model (``HfModel`` or ``PyTorchModel``), runs it once in PyTorch, exports it
(TorchScript exporter by default; ``use_dynamo_exporter`` for the ``torch.export`` one), then runs the ONNX
model in onnxruntime and PyTorch side by side, on the workflow's ``data_config`` or on synthetic inputs at
other sizes than the export's on every free axis. A difference beyond ``atol + rtol * |value|`` fails the
run with the output and the difference named; nothing is kept. The check's numbers go into the output's
``model_attributes["conversion_check"]``; a Hugging Face model's config fields go there too
(``model_type``, ``num_attention_heads``, ``hidden_size``...), so ``OrtTransformersOptimization`` needs no
params. Exporter warnings go to this module's logger.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import (
    ModelLoadError,
    OliveError,
    PassConfigError,
    PassParamError,
    PassRunError,
    WorkflowConfigError,
)
from olive.hardware.accelerator import AcceleratorSpec
from olive.measure import create_session
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model, resolve_onnx_path
from olive_passes_torch._logs import routed_logs
from olive_passes_torch.io_config import IoConfig, check_io_config
from olive_passes_torch.torch_model import DTYPES, TorchModelHandler, exportable

if TYPE_CHECKING:
    import numpy as np
    import torch

    from olive.model.handler import OliveModelHandler, ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

CHECK_ATTRIBUTE = "conversion_check"
DEVICES = ("cpu", "cuda")
STAGING = ".torch-export"


class OnnxConversion(Pass):
    """Convert a PyTorch or Hugging Face model to ONNX with torch.onnx.export and check it against PyTorch."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("HfModel", "PyTorchModel")
    # Its data gives example inputs to trace and to check the export with; nothing is fit on it, so a data
    # config it shares with the metrics is not split for it.
    fits_on_data: ClassVar[bool] = False

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "target_opset": PassConfigParam(
                type_=int, default_value=17, description="The version of the default (ai.onnx) opset to target."
            ),
            "use_dynamo_exporter": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Export with the torch.export-based exporter instead of the TorchScript one. The "
                "TorchScript exporter gives the MatMul/Softmax attention that onnxruntime's transformer optimizer "
                "fuses.",
            ),
            "dynamic": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Keep the io_config's dynamic axes free (false: the exported shapes are fixed).",
            ),
            "optimize": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Fold constants (TorchScript) / run the exporter's graph optimization (dynamo).",
            ),
            "io_config": PassConfigParam(
                type_=dict[str, Any] | None,
                default_value=None,
                description="io_config keys that replace the input model's (input_names, output_names, "
                "dynamic_axes...).",
            ),
            "torch_dtype": PassConfigParam(
                type_=str | None,
                default_value=None,
                description="Cast the model to float32, float16 or bfloat16 before exporting.",
            ),
            "device": PassConfigParam(
                type_=str, default_value="cpu", description="Where the model runs while exported: cpu or cuda."
            ),
            "data_config": PassConfigParam(
                type_="DataConfig | dict | str | None",
                default_value=None,
                description="Samples the check runs both models on: a workflow data config name, a DataConfig, its "
                "JSON form or an .npz path. Default: synthetic inputs at other sizes than the export's.",
            ),
            "verify": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Check the ONNX model against PyTorch (false: export only, no numbers recorded).",
            ),
            "atol": PassConfigParam(type_=float, default_value=1e-4, description="Absolute tolerance of the check."),
            "rtol": PassConfigParam(
                type_=float, default_value=1e-3, description="Tolerance relative to PyTorch's value."
            ),
            "verify_max_samples": PassConfigParam(
                type_=int, default_value=8, description="Check on at most this many samples of data_config."
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if config.torch_dtype is not None and config.torch_dtype not in DTYPES:
            raise PassParamError(
                f"param 'torch_dtype' must be one of {', '.join(DTYPES)}, got {config.torch_dtype!r}",
                params="torch_dtype",
            )
        if config.device not in DEVICES:
            raise PassParamError(
                f"param 'device' must be one of {', '.join(DEVICES)}, got {config.device!r}", params="device"
            )
        if config.atol < 0 or config.rtol < 0:
            raise PassParamError("params 'atol' and 'rtol' must be 0 or more", params=("atol", "rtol"))
        if config.verify_max_samples < 1:
            raise PassParamError("param 'verify_max_samples' must be 1 or more", params="verify_max_samples")
        if config.target_opset < 7:
            raise PassParamError(
                f"param 'target_opset' must be 7 or more, got {config.target_opset}", params="target_opset"
            )
        if config.io_config is not None:
            try:
                check_io_config(config.io_config, "io_config", partial=True)
            except WorkflowConfigError as exc:
                raise PassParamError(f"param {exc.owner}: {exc.reason}", params="io_config") from None

    def _run_for_config(
        self, model: OliveModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        owner = f"pass {self.pass_name()}"
        if not isinstance(model, TorchModelHandler):
            raise PassConfigError(
                f"the input model is a {model.model_type}; OnnxConversion converts HfModel and PyTorchModel models",
                owner=owner,
            )
        if config.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise PassConfigError("param 'device' is cuda but torch sees no CUDA device; use cpu", owner=owner)
        model.validate()
        onnx_path = Path(resolve_onnx_path(output_model_path))
        out_dir = onnx_path.parent
        before = set(out_dir.iterdir())
        try:
            return self._convert(model, config, onnx_path, owner)
        except BaseException:
            # Nothing half-written stays: remove what this run added to its output folder.
            for path in set(out_dir.iterdir()) - before:
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
            raise

    def _convert(
        self, model: TorchModelHandler, config: BasePassConfig, onnx_path: Path, owner: str
    ) -> ONNXModelHandler:
        import onnx

        start = time.perf_counter()
        module = model.load_model(config.torch_dtype).to(config.device)
        io = model.io_config_for(module, config.io_config)
        if not config.dynamic:
            io = io.without_dynamic_axes()
        model.check_forward(module, io)
        wrapper = exportable(module, io, model.forward_kwargs(module), model.inputs_by_name)
        export_inputs = model.example_inputs(io, vary=False, module=module)
        _run_once(wrapper, export_inputs, io, config.device, model)
        staging = onnx_path.parent / STAGING
        staging.mkdir()
        exporter = "dynamo" if config.use_dynamo_exporter else "torchscript"
        _export(wrapper, export_inputs, io, staging / onnx_path.name, config, owner)
        proto = onnx.load(str(staging / onnx_path.name))
        output = model_proto_to_olive_model(proto, onnx_path, config)
        del proto
        shutil.rmtree(staging)
        attributes = model.output_attributes()
        attributes["io_config"] = io.to_json()
        if config.verify:
            check = self._check(model, config, wrapper, io, output, owner)
            check.update({"exporter": exporter, "opset": config.target_opset, "input": model.describe()})
            attributes[CHECK_ATTRIBUTE] = check
        output.model_attributes = attributes
        logger.info(
            "%s: converted %s '%s' with the %s exporter (opset %d) in %.1f s%s",
            owner,
            model.model_type,
            model.model_path,
            exporter,
            config.target_opset,
            time.perf_counter() - start,
            _summary(attributes.get(CHECK_ATTRIBUTE)),
        )
        return output

    def _check(
        self,
        model: TorchModelHandler,
        config: BasePassConfig,
        wrapper: torch.nn.Module,
        io: IoConfig,
        output: ONNXModelHandler,
        owner: str,
    ) -> dict[str, Any]:
        from olive_passes_torch._verify import compare

        if config.data_config is not None:
            batches, source = _data_batches(config.data_config, model, io, config.verify_max_samples, owner)
        else:
            feeds = model.example_inputs(io, vary=True, module=wrapper)
            batches = [feeds]
            shape = next(iter(feeds.values())).shape if feeds else ()
            source = f"synthetic inputs (shape {list(shape)} for {io.input_names[0]})" if feeds else "no inputs"
        session = _session(output, owner)
        try:
            result = compare(wrapper, session, batches, io, config.atol, config.rtol, config.device)
        except OliveError:
            raise
        except Exception as exc:
            raise PassRunError(
                f"onnxruntime could not run the exported model on {source} ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:400]}); the export did not generalize to these inputs: try "
                f"use_dynamo_exporter={not config.use_dynamo_exporter} or another target_opset",
                owner=owner,
            ) from exc
        result.update({"source": source, "samples": sum(len(next(iter(b.values()))) for b in batches if b)})
        result.update({"atol": config.atol, "rtol": config.rtol})
        if not result["passed"]:
            worst = max(result["outputs"], key=lambda name: result["outputs"][name]["max_abs_diff"])
            stats = result["outputs"][worst]
            raise PassRunError(
                f"the exported model disagrees with PyTorch on {source}: output '{worst}' differs by up to "
                f"{stats['max_abs_diff']:.3g} (allowed: atol {config.atol:g} + rtol {config.rtol:g} x |value|; cosine "
                f"min {stats['cosine_min']:.6f}). The export traced something that does not hold for these inputs "
                f"(data-dependent control flow) or an operator converted inexactly: try use_dynamo_exporter="
                f"{str(not config.use_dynamo_exporter).lower()} or another target_opset; if the difference is "
                "expected (torch_dtype float16), raise atol/rtol",
                owner=owner,
            )
        return result


def _run_once(wrapper: torch.nn.Module, feeds: dict[str, np.ndarray], io: IoConfig, device: str, model: Any) -> None:
    """One forward call in PyTorch before exporting: a model that cannot run on these inputs fails here, with
    its own error, instead of deep inside the exporter."""
    from olive_passes_torch._verify import torch_outputs

    try:
        with routed_logs(logger):
            torch_outputs(wrapper, feeds, io, device)
    except OliveError:
        raise
    except Exception as exc:
        shapes = ", ".join(f"{k} {list(v.shape)} {v.dtype}" for k, v in feeds.items())
        raise PassRunError(
            f"the model raised {type(exc).__name__} on the export inputs ({shapes}): "
            f"{' '.join(str(exc).split())[:400]}; check {model.json_path}.io_config (names, shapes, types)",
            owner=f"{model.json_path}",
        ) from exc


def _export(
    wrapper: torch.nn.Module, feeds: dict[str, np.ndarray], io: IoConfig, path: Path, config: Any, owner: str
) -> None:
    import torch

    args = tuple(torch.from_numpy(feeds[name]).to(config.device) for name in io.input_names)
    kwargs: dict[str, Any] = {
        "input_names": list(io.input_names),
        "output_names": list(io.output_names),
        "opset_version": config.target_opset,
        "verbose": False,
    }
    if config.use_dynamo_exporter:
        kwargs.update(dynamo=True, optimize=config.optimize, external_data=True)
        if io.dynamic_axes:
            kwargs["dynamic_shapes"] = (_dynamic_shapes(io),)
    else:
        kwargs.update(dynamo=False, do_constant_folding=config.optimize, dynamic_axes=io.dynamic_axes or None)
    try:
        with routed_logs(logger):
            torch.onnx.export(wrapper, args, str(path), **kwargs)
    except OliveError:
        raise
    except Exception as exc:
        raise PassRunError(
            f"torch.onnx.export failed ({type(exc).__name__}: {' '.join(str(exc).split())[:600]}); try "
            f"use_dynamo_exporter={str(not config.use_dynamo_exporter).lower()} or another target_opset",
            owner=owner,
        ) from exc
    finally:
        wrapper.eval()  # the exporter restores the mode the module had; it must stay in eval mode


def _dynamic_shapes(io: IoConfig) -> tuple[dict[int, Any] | None, ...]:
    """The io_config's dynamic axes as torch.export dims (one ``Dim`` per dim name, shared across inputs)."""
    import re

    import torch

    dims: dict[str, Any] = {}

    def dim(name: str) -> Any:
        if name not in dims:
            dims[name] = torch.export.Dim(name if name.isidentifier() else re.sub(r"\W", "_", name))
        return dims[name]

    return tuple(
        {axis: dim(n) for axis, n in io.dynamic_axes[name].items()} if name in io.dynamic_axes else None
        for name in io.input_names
    )


def _session(model: ONNXModelHandler, owner: str) -> Any:
    settings = {"execution_provider": ["CPUExecutionProvider"], "session_options": {"log_severity_level": 3}}
    try:
        return create_session(model.model_path, settings, what="the exported model")
    except ModelLoadError as exc:
        raise PassRunError(exc.reason, owner=owner) from exc


def _data_batches(
    data_config: Any, model: TorchModelHandler, io: IoConfig, max_samples: int, owner: str
) -> tuple[list[dict[str, np.ndarray]], str]:
    """Up to ``max_samples`` samples of ``data_config`` as feeds of the io_config's inputs and types."""
    import numpy as np

    from olive.data.calibration import as_data_config
    from olive.data.containers import bind_input_model

    try:
        data = bind_input_model(as_data_config(data_config, where="data_config"), model.model_path)
    except OliveError as exc:
        raise PassConfigError(f"param 'data_config': {exc}", owner=owner) from exc
    batches: list[dict[str, np.ndarray]] = []
    seen = 0
    for inputs, _ in data.create_dataloader():
        missing = [n for n in io.input_names if n not in inputs]
        if missing:
            raise PassConfigError(
                f"{data.where} has no {', '.join(repr(m) for m in missing)} (it has {', '.join(map(repr, inputs))}); "
                f"the model takes {', '.join(io.input_names)}",
                owner=owner,
            )
        types = io.input_types or ("int64",) * len(io.input_names)
        feeds = {
            n: np.ascontiguousarray(np.asarray(inputs[n]).astype(t)) for n, t in zip(io.input_names, types, strict=True)
        }
        left = max_samples - seen
        feeds = {k: v[:left] for k, v in feeds.items()}
        batches.append(feeds)
        seen += len(next(iter(feeds.values())))
        if seen >= max_samples:
            break
    if not batches:
        raise PassConfigError(f"{data.where} yields no samples; the check needs at least one", owner=owner)
    return batches, f"{seen} samples of {data.where}"


def _summary(check: dict[str, Any] | None) -> str:
    if not check:
        return " (not checked: verify is false)"
    return (
        f"; checked against PyTorch on {check['source']}: max abs diff {check['max_abs_diff']:.3g}, cosine min "
        f"{check['cosine_min']:.6f}"
    )
