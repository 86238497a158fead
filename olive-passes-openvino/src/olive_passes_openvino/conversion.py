"""OpenVINOConversion: an ONNX, Hugging Face or PyTorch model converted into an OpenVINO IR folder
(``ov.convert_model``).

ONNX models are read by OpenVINO's ONNX frontend. Hugging Face and PyTorch models (olive-passes-torch's model
types, which load the module and make example inputs for its io_config) go through OpenVINO's PyTorch frontend,
traced on those inputs; the IR's inputs and outputs get the io_config's names and dynamic dimensions.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive.passes.pass_config import ParamCategory
from olive_passes_openvino.model import OpenVINOModelHandler, save_ir

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class OpenVINOConversion(Pass):
    """Convert an ONNX, Hugging Face or PyTorch model into an OpenVINO IR (``NAME.xml`` + ``NAME.bin``).

    Microsoft Olive's pass of this name, with its params. The IR computes what the ONNX model computes; with
    ``compress_to_fp16`` (the default, as in Olive) its weights are stored as float16 and the CPU widens them
    again when it compiles the model, so outputs move by float16 rounding of the weights only.
    """

    accepts_model_types: ClassVar[tuple[str, ...]] = ("ONNXModel", "HfModel", "PyTorchModel")
    fits_on_data: ClassVar[bool] = False

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "input_shapes": PassConfigParam(
                type_=Callable | str | list | None,
                category=ParamCategory.OBJECT,
                default_value=None,
                description=(
                    "With static: one shape per input (e.g. [[1, 128], [1, 128]]; -1 leaves a dimension dynamic), "
                    "or a function in user_script that returns them. None keeps the ONNX model's shapes."
                ),
            ),
            "example_input_func": PassConfigParam(
                type_=Callable | str | None,
                category=ParamCategory.OBJECT,
                default_value=None,
                description="A function in user_script returning example inputs, given to ov.convert_model.",
            ),
            "compress_to_fp16": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Store the IR's weights as float16 (half the .bin); the CPU computes with them widened.",
            ),
            "extra_configs": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description='More arguments of ov.convert_model by name (e.g. {"output": ["last_hidden_state"]}).',
            ),
            "model_name": PassConfigParam(
                type_=str,
                default_value="ov_model",
                description="The IR's file name without suffix: MODEL_NAME.xml and MODEL_NAME.bin.",
            ),
            "static": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Give the IR input_shapes' shapes (nothing changes while input_shapes is None).",
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        shapes = config.input_shapes
        if isinstance(shapes, list) and not all(
            isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in shape)
            for shape in shapes
        ):
            raise PassParamError(
                f"param 'input_shapes' is {shapes!r}; give one list of whole numbers per input, e.g. [[1, 128]]",
                params="input_shapes",
            )
        if "/" in str(config.model_name) or not str(config.model_name).strip():
            raise PassParamError(
                f"param 'model_name' is {config.model_name!r}; give a plain file name such as 'ov_model'",
                params="model_name",
            )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OpenVINOModelHandler:
        import openvino as ov

        args: dict[str, Any] = {}
        extra = dict(config.extra_configs or {})
        accepted = set(inspect.signature(ov.convert_model).parameters) - {"input_model"}
        unknown = [key for key in extra if key not in accepted]
        if unknown:
            raise PassParamError(
                f"param 'extra_configs' has {', '.join(repr(k) for k in unknown)}, which ov.convert_model does not "
                f"take; it takes {', '.join(sorted(accepted))}",
                params="extra_configs",
            )
        args.update(extra)
        if config.example_input_func is not None:
            args["example_input"] = _called(config.example_input_func, "example_input_func")
        if config.static and config.input_shapes is not None:
            shapes = config.input_shapes
            args["input"] = _called(shapes, "input_shapes") if not isinstance(shapes, list) else shapes
        source = Path(model.model_path)
        try:
            if model.model_type == "ONNXModel":
                converted = ov.convert_model(str(source), **args)
            else:
                converted = _convert_torch(model, args)
        except (PassParamError, PassRunError):
            raise
        except Exception as exc:  # openvino's frontends raise OpConversionFailure, RuntimeError and others
            raise PassRunError(
                f"OpenVINO could not convert '{source}' ({type(exc).__name__}: {_first_lines(exc)}); check "
                "input_shapes and extra_configs, or the model's operators against OpenVINO's ONNX frontend"
            ) from exc
        result = save_ir(converted, output_model_path, config.model_name, compress_to_fp16=config.compress_to_fp16)
        logger.info("OpenVINOConversion: '%s' -> %s", source.name, result.xml_path)
        result.model_attributes = {
            **(model.model_attributes or {}),
            "openvino_source": {"type": model.model_type, "file": source.name},
        }
        return result


def _convert_torch(model: Any, args: dict[str, Any]) -> Any:
    """A torch model type's module traced by OpenVINO's PyTorch frontend on the model type's example inputs."""
    import openvino as ov
    import torch

    from olive_passes_torch.torch_model import exportable

    module = model.load_model()
    io = model.io_config_for(module)
    wrapper = exportable(module, io, model.forward_kwargs(module), model.inputs_by_name)
    arrays = model.example_inputs(io, vary=False, module=module)
    example = tuple(torch.from_numpy(arrays[name]) for name in io.input_names)
    if "input" not in args:
        # The io_config's dynamic axes stay dynamic; other dimensions are the example's.
        args["input"] = [
            ov.PartialShape(
                [-1 if axis in io.dynamic_axes.get(name, {}) else size for axis, size in enumerate(t.shape)]
            )
            for name, t in zip(io.input_names, example, strict=True)
        ]
    args.setdefault("example_input", example)
    with torch.no_grad():
        converted = ov.convert_model(wrapper, **args)
    for port, name in zip(converted.inputs, io.input_names, strict=True):
        port.get_tensor().set_names({name})
    for port, name in zip(converted.outputs, io.output_names, strict=True):
        port.get_tensor().set_names({name})
    return converted


def _called(value: Any, param: str) -> Any:
    if callable(value):
        return value()
    raise PassParamError(
        f"param '{param}' is {value!r}, which is not a function; name a function of the workflow's user_script "
        "(set user_script on the pass or the workflow), or give the function itself in direct use",
        params=param,
    )


def _first_lines(exc: BaseException, count: int = 3) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines[:count]) or type(exc).__name__
