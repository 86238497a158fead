"""OpenVINOWeightCompression: NNCF's weight-only compression (``nncf.compress_weights``) of an OpenVINO model (an
IR out) or an ONNX model (an ONNX model out, through NNCF's ONNX backend).

Weights of MatMuls and embeddings become int8 (``mode`` ``int8_asym``, NNCF's default) or int4 in groups
(``int4_sym`` / ``int4_asym``, with ``ratio`` of the layers int4 and the rest ``backup_mode``); activations
stay float. It is what decoders need: their time goes into reading weights. Data (``data_config``) is only
needed by the data-aware options (``awq``, ``scale_estimation``, ``gptq``, a ``sensitivity_metric`` other than
weight quantization error). Microsoft Olive's pass of this name, with its params.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive_passes_openvino import _nncf
from olive_passes_openvino._data import data_items, nncf_dataset
from olive_passes_openvino.model import OpenVINOModelHandler, save_ir

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

# compress_config keys that take one of NNCF's enums, by its name or value.
_ENUM_KEYS = {
    "mode": "CompressWeightsMode",
    "sensitivity_metric": "SensitivityMetric",
    "backup_mode": "BackupMode",
    "compression_format": "CompressionFormat",
}
# Arguments of nncf.compress_weights that the pass's own params set.
_SET_BY_PARAMS = ("model", "dataset", "ignored_scope")
ADVANCED_KEY = "advanced_compression_parameters"
# Microsoft Olive's extra_args key that hands the model's tokenizer to transform_fn (as ``tokenizer=``).
TOKENIZER_KEY = "tokenizer"


class OpenVINOWeightCompression(Pass):
    """int8 or int4 weights for an OpenVINO or ONNX model (NNCF ``compress_weights``); see the module docstring."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("OpenVINOModel", "ONNXModel")

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **_nncf.shared_params(accelerator_spec, data_required=False, data_use="Data for the data-aware options"),
            "compress_config": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description=(
                    "nncf.compress_weights arguments by name: mode ('int8_asym' default, 'int8_sym', 'int4_sym', "
                    "'int4_asym', ...), ratio, group_size, all_layers, sensitivity_metric, awq, scale_estimation, "
                    "gptq, backup_mode, subset_size..."
                ),
            ),
            "extra_args": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description=(
                    "More arguments: 'advanced_compression_parameters' (nncf.AdvancedCompressionParameters fields); "
                    "any other key is an nncf.compress_weights argument, as in compress_config."
                ),
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        _nncf.check_shared(config)

    def _arguments(self, config: BasePassConfig) -> dict[str, Any]:
        import nncf

        given = dict(config.compress_config or {})
        extra = dict(config.extra_args or {})
        advanced = extra.pop(ADVANCED_KEY, None)
        extra.pop(TOKENIZER_KEY, None)
        # Microsoft Olive's extra_args also carried quantize-only keys (model_type, preset, library) for its
        # optimum-intel path; compress_weights takes none of them.
        for key in ("model_type", "preset", "library"):
            if extra.pop(key, None) is not None:
                logger.info("OpenVINOWeightCompression: extra_args.%s does not apply to compress_weights", key)
        _nncf.check_arguments(nncf.compress_weights, given, "compress_config", _SET_BY_PARAMS)
        _nncf.check_arguments(nncf.compress_weights, extra, "extra_args", _SET_BY_PARAMS)
        arguments = {**given, **extra}
        for key, enum_name in _ENUM_KEYS.items():
            if key in arguments:
                arguments[key] = _nncf.enum_value(arguments[key], getattr(nncf, enum_name), f"compress_config.{key}")
        scope = _nncf.ignored_scope(config)
        if scope is not None:
            arguments["ignored_scope"] = scope
        if advanced is not None:
            try:
                arguments["advanced_parameters"] = nncf.AdvancedCompressionParameters(**advanced)
            except TypeError as exc:
                raise PassParamError(
                    f"param 'extra_args' has {ADVANCED_KEY} {advanced!r}, which nncf.AdvancedCompressionParameters "
                    f"does not take ({exc})",
                    params="extra_args",
                ) from None
        return arguments

    def _run_for_config(
        self, model: OpenVINOModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OpenVINOModelHandler:
        import nncf

        if model.model_type not in self.accepts_model_types:
            raise PassRunError(
                f"OpenVINOWeightCompression takes OpenVINO or ONNX models, got a {model.model_type}; put "
                "OpenVINOConversion before it"
            )
        if config.reuse_cache:
            logger.info("OpenVINOWeightCompression: reuse_cache changes nothing here (the cache keeps each output)")
        arguments = self._arguments(config)
        if config.data_config is not None:
            owner = "OpenVINOWeightCompression"
            transform = config.transform_fn
            if (config.extra_args or {}).get(TOKENIZER_KEY) and callable(transform):
                transform = functools.partial(transform, tokenizer=_tokenizer(model))
            arguments["dataset"] = nncf_dataset(data_items(config.data_config, model, owner), transform, owner)
        try:
            compressed = nncf.compress_weights(model.load_model(), **arguments)
        except PassParamError:
            raise
        except Exception as exc:  # nncf raises ValidationError, ValueError, RuntimeError...
            raise PassRunError(
                f"NNCF could not compress the weights of '{model.model_path}' ({type(exc).__name__}: {exc}); check "
                "compress_config (data-aware options need data_config)"
            ) from exc
        mode = arguments.get("mode")
        attributes = {
            **(model.model_attributes or {}),
            "weight_compression": {"tool": "nncf", "mode": str(getattr(mode, "value", mode or "int8_asym"))},
        }
        if not isinstance(model, OpenVINOModelHandler):
            from olive.passes.onnx.common import model_proto_to_olive_model

            onnx_result = model_proto_to_olive_model(compressed, output_model_path, None)
            onnx_result.model_attributes = attributes
            return onnx_result
        result = save_ir(compressed, output_model_path, f"{model.xml_path.stem}_compressed", compress_to_fp16=True)
        _nncf.carry_folder_files(model, output_model_path)
        result.inference_settings = model.inference_settings
        result.model_attributes = attributes
        return result


def _tokenizer(model: Any) -> Any:
    """The tokenizer saved in the model's folder (transformers' files), for extra_args.tokenizer."""
    folder = Path(str(model.model_path))
    folder = folder if folder.is_dir() else folder.parent
    try:
        import transformers

        return transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # ImportError, OSError for a folder without tokenizer files
        raise PassParamError(
            f"extra_args.tokenizer asks for the model's tokenizer, which cannot be loaded from '{folder}' "
            f"({type(exc).__name__}: {exc}); save it there (tokenizer.save_pretrained(folder)) or drop the key",
            params="extra_args",
        ) from exc
