"""OpenVINOQuantization and OpenVINOQuantizationWithAccuracy: NNCF's post-training int8 quantization.

Both take an OpenVINO model (and write an OpenVINO IR, ``NAME_quant.xml``) or an ONNX model (and write an ONNX
model with QuantizeLinear/DequantizeLinear pairs, through NNCF's ONNX backend), as Microsoft Olive's passes of
these names do. Activation ranges are calibrated on ``data_config``'s samples. The accuracy-controlled one
then returns layers to float, most harmful first, until ``validation_func`` (by default: top-1 accuracy
against the data's labels) has dropped by at most ``max_drop``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive.passes.pass_config import ParamCategory
from olive_passes_openvino import _nncf
from olive_passes_openvino._data import data_items, nncf_dataset
from olive_passes_openvino.model import OpenVINOModelHandler, save_ir

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

MODEL_TYPES = ("TRANSFORMER",)
PRESETS = ("PERFORMANCE", "MIXED")
DROP_TYPES = ("ABSOLUTE", "RELATIVE")
# Keys of an extra_configs entry that are not nncf.quantize's own arguments.
ADVANCED_KEY = "advanced_quantization_parameters"


class OpenVINOQuantizationBase(Pass):
    """What both NNCF int8 passes share: params, data and the model in and out."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("OpenVINOModel", "ONNXModel")

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **_nncf.shared_params(accelerator_spec, data_required=True, data_use="Calibration data"),
            "model_type": PassConfigParam(
                type_=str | None,
                default_value=None,
                description=(
                    "'TRANSFORMER': NNCF's scheme for transformer encoders (BERT-like), which keeps the ops that "
                    "lose most in int8 in float. None: the generic scheme."
                ),
            ),
            "preset": PassConfigParam(
                type_=str,
                default_value="PERFORMANCE",
                description="'PERFORMANCE' (symmetric activations, fastest) or 'MIXED' (asymmetric activations).",
            ),
            "extra_configs": PassConfigParam(
                type_=list | None,
                default_value=None,
                description=(
                    'Dicts of more nncf.quantize arguments by name (e.g. {"subset_size": 64}); the key '
                    "'advanced_quantization_parameters' takes nncf.AdvancedQuantizationParameters fields."
                ),
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        _nncf.check_shared(config)
        if config.model_type is not None and str(config.model_type).upper() not in MODEL_TYPES:
            raise PassParamError(
                f"param 'model_type' is {config.model_type!r}; use 'TRANSFORMER' or leave it unset", params="model_type"
            )
        if str(config.preset).upper() not in PRESETS:
            raise PassParamError(f"param 'preset' is {config.preset!r}; use {' or '.join(PRESETS)}", params="preset")
        for entry in config.extra_configs or []:
            if not isinstance(entry, dict):
                raise PassParamError(
                    f"param 'extra_configs' holds {entry!r}; give a list of dicts of nncf.quantize arguments",
                    params="extra_configs",
                )

    def _quantize_arguments(self, config: BasePassConfig) -> dict[str, Any]:
        import nncf

        arguments: dict[str, Any] = {
            "preset": nncf.QuantizationPreset[str(config.preset).upper()],
            "target_device": _nncf.target_device(config),
        }
        if config.model_type is not None:
            arguments["model_type"] = nncf.ModelType[str(config.model_type).upper()]
        scope = _nncf.ignored_scope(config)
        if scope is not None:
            arguments["ignored_scope"] = scope
        for entry in config.extra_configs or []:
            entry = dict(entry)
            advanced = entry.pop(ADVANCED_KEY, None)
            _nncf.check_arguments(nncf.quantize, entry, "extra_configs", tuple(arguments))
            arguments.update(entry)
            if advanced is not None:
                try:
                    arguments["advanced_parameters"] = nncf.AdvancedQuantizationParameters(**advanced)
                except TypeError as exc:
                    raise PassParamError(
                        f"param 'extra_configs' has {ADVANCED_KEY} {advanced!r}, which "
                        f"nncf.AdvancedQuantizationParameters does not take ({exc})",
                        params="extra_configs",
                    ) from None
        return arguments

    def _run_for_config(
        self, model: OliveModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OliveModelHandler:
        if model.model_type not in self.accepts_model_types:
            raise PassRunError(
                f"{self.pass_name()} takes OpenVINO or ONNX models, got a {model.model_type}; put OpenVINOConversion "
                "before it"
            )
        if config.reuse_cache:
            logger.info("%s: reuse_cache changes nothing here (the cache keeps each pass's output)", self.pass_name())
        owner = f"{self.pass_name()}"
        items = data_items(config.data_config, model, owner)
        dataset = nncf_dataset(items, config.transform_fn, owner)
        arguments = self._quantize_arguments(config)
        source = model.load_model()
        try:
            quantized = self._quantize(source, dataset, items, config, arguments)
        except (PassParamError, PassRunError):
            raise
        except Exception as exc:  # nncf raises ValidationError, RuntimeError and others
            raise PassRunError(
                f"NNCF could not quantize '{model.model_path}' ({type(exc).__name__}: {exc}); check ignored_scope, "
                "extra_configs and the data"
            ) from exc
        return _save(model, quantized, output_model_path, config)

    def _quantize(self, source: Any, dataset: Any, items: list, config: BasePassConfig, arguments: dict) -> Any:
        import nncf

        return nncf.quantize(source, dataset, **arguments)


class OpenVINOQuantization(OpenVINOQuantizationBase):
    """Post-training int8 (NNCF ``quantize``): weights and activations int8, activation ranges from data_config.

    Microsoft Olive's pass of this name, with its params.
    """


class OpenVINOQuantizationWithAccuracy(OpenVINOQuantizationBase):
    """Post-training int8 with NNCF's accuracy control (``quantize_with_accuracy_control``): layers return to
    float until the metric has dropped by at most ``max_drop``. Microsoft Olive's pass of this name."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **super()._default_config(accelerator_spec),
            "validation_func": PassConfigParam(
                type_=Callable | str | None,
                category=ParamCategory.OBJECT,
                default_value=None,
                description=(
                    "A function in user_script, f(compiled_model, data_items) -> float (higher is better), where "
                    "data_items are the data's (feeds, labels); default: top-1 accuracy of the first output."
                ),
            ),
            "max_drop": PassConfigParam(
                type_=float,
                default_value=0.01,
                description="The largest drop of the validation metric to accept.",
            ),
            "drop_type": PassConfigParam(
                type_=str,
                default_value="ABSOLUTE",
                description="How max_drop is measured: 'ABSOLUTE' (metric difference) or 'RELATIVE' (its fraction).",
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        super()._check_config(config, accelerator_spec)
        if str(config.drop_type).upper() not in DROP_TYPES:
            raise PassParamError(
                f"param 'drop_type' is {config.drop_type!r}; use {' or '.join(DROP_TYPES)}", params="drop_type"
            )
        if config.max_drop < 0:
            raise PassParamError(f"param 'max_drop' is {config.max_drop}; give a drop >= 0", params="max_drop")

    def _quantize(self, source: Any, dataset: Any, items: list, config: BasePassConfig, arguments: dict) -> Any:
        import nncf

        validate = config.validation_func
        if validate is None:
            if any(labels is None for _, labels in items):
                raise PassParamError(
                    "the default validation_func scores top-1 accuracy against the data's labels, and data_config "
                    "has none; give labels (e.g. an .npz with a 'labels' array) or a validation_func",
                    params=("validation_func", "data_config"),
                )
            validate = top1_accuracy
        elif not callable(validate):
            raise PassParamError(
                f"param 'validation_func' is {validate!r}, which is not a function; name a function of the "
                "workflow's user_script (set user_script on the pass or the workflow)",
                params="validation_func",
            )
        # Microsoft Olive validates on the calibration data, too.
        return nncf.quantize_with_accuracy_control(
            source,
            calibration_dataset=dataset,
            validation_dataset=dataset,
            validation_fn=validate,
            max_drop=config.max_drop,
            drop_type=nncf.DropType[str(config.drop_type).upper()],
            **arguments,
        )


def top1_accuracy(compiled_model: Any, data: Any) -> float:
    """Share of samples whose argmax over the last axis of the first output equals their label."""
    import numpy as np

    correct = total = 0
    output = compiled_model.outputs[0]
    for item in data:
        feeds, labels = item
        predicted = np.argmax(np.asarray(compiled_model(feeds)[output]), axis=-1).reshape(-1)
        expected = np.asarray(labels).reshape(-1)
        correct += int(np.sum(predicted == expected))
        total += expected.size
    return correct / max(total, 1)


def _save(
    model: OliveModelHandler, quantized: Any, output_model_path: str, config: BasePassConfig
) -> OliveModelHandler:
    attributes = {**(model.model_attributes or {}), "quantization": {"tool": "nncf", "preset": str(config.preset)}}
    if isinstance(model, OpenVINOModelHandler):
        name = f"{model.xml_path.stem}_quant"
        result = save_ir(quantized, output_model_path, name, compress_to_fp16=True)
        _nncf.carry_folder_files(model, output_model_path)
        result.inference_settings = model.inference_settings
        result.model_attributes = attributes
        return result
    from olive.passes.onnx.common import model_proto_to_olive_model

    result = model_proto_to_olive_model(quantized, Path(output_model_path), None)
    result.model_attributes = attributes
    return result
