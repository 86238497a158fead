"""OpenVINOIoUpdate: an OpenVINO model's inputs renamed and, with ``static``, given fixed shapes.

Microsoft Olive's pass of this name, with its params: inputs get ``input_names`` (one per input, in order);
an input or output without any name gets ``input_{i}`` / ``output_{i}``; with ``static`` the model is reshaped
to ``input_shapes`` (what NPUs and a fixed-shape service need) and written as ``NAME_st``, else ``NAME_dy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from olive.exceptions import PassParamError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive_passes_openvino import _nncf
from olive_passes_openvino.model import OpenVINOModelHandler, save_ir

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.pass_config import BasePassConfig


class OpenVINOIoUpdate(Pass):
    """Rename an OpenVINO model's inputs and fix their shapes (see the module docstring)."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("OpenVINOModel",)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "input_shapes": PassConfigParam(
                type_=list | None,
                default_value=None,
                description="With static: one shape per input, in order (e.g. [[1, 128], [1, 128]]).",
            ),
            "input_names": PassConfigParam(
                type_=list | None,
                default_value=None,
                description="New names of the inputs, one per input, in order.",
            ),
            "static": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Reshape the model to input_shapes (required then).",
            ),
            "extra_configs": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description="Accepted for Microsoft Olive's workflows; nothing here reads it.",
            ),
            "reuse_cache": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Accepted for Microsoft Olive's workflows; the cache keeps every pass's output here.",
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if config.static and not config.input_shapes:
            raise PassParamError(
                "param 'static' is true but 'input_shapes' is not given; give one shape per input (e.g. [[1, 128]])",
                params=("static", "input_shapes"),
            )
        for shape in config.input_shapes or []:
            if not isinstance(shape, list) or not all(type(d) is int and d > 0 for d in shape):
                raise PassParamError(
                    f"param 'input_shapes' holds {shape!r}; give each shape as a list of positive whole numbers",
                    params="input_shapes",
                )
        names = config.input_names or []
        if not all(isinstance(name, str) and name for name in names) or len(set(names)) != len(names):
            raise PassParamError(
                f"param 'input_names' is {names!r}; give distinct non-empty names", params="input_names"
            )

    def _run_for_config(
        self, model: OpenVINOModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OpenVINOModelHandler:
        import openvino as ov

        if not isinstance(model, OpenVINOModelHandler):
            raise PassRunError(f"OpenVINOIoUpdate takes OpenVINO models, got a {model.model_type}")
        loaded = model.load_model()
        inputs = list(loaded.inputs)
        for param, given in (("input_names", config.input_names), ("input_shapes", config.input_shapes)):
            if given is not None and len(given) != len(inputs):
                raise PassParamError(
                    f"param '{param}' has {len(given)} entries but the model has {len(inputs)} inputs "
                    f"({', '.join(p.any_name for p in inputs)}); give one per input",
                    params=param,
                )
        for index, port in enumerate(loaded.inputs):
            if config.input_names:
                port.get_tensor().set_names({config.input_names[index]})
            elif not port.get_names():
                port.get_tensor().set_names({f"input_{index}"})
        for index, port in enumerate(loaded.outputs):
            if not port.get_names():
                port.get_tensor().set_names({f"output_{index}"})
        if config.static:
            try:
                loaded.reshape(
                    {
                        port: ov.PartialShape(shape)
                        for port, shape in zip(loaded.inputs, config.input_shapes, strict=True)
                    }
                )
            except Exception as exc:  # openvino raises RuntimeError for a shape the graph cannot take
                raise PassRunError(
                    f"OpenVINO could not reshape '{model.model_path}' to {config.input_shapes} ({exc}); check "
                    "input_shapes against the model's inputs"
                ) from exc
        suffix = "_st" if config.static else "_dy"
        result = save_ir(loaded, output_model_path, f"{model.xml_path.stem}{suffix}", compress_to_fp16=False)
        _nncf.carry_folder_files(model, output_model_path)
        result.inference_settings = model.inference_settings
        result.model_attributes = dict(model.model_attributes or {})
        return result
