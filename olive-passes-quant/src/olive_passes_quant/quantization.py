"""``OnnxQuantization``: onnxruntime int8 quantization, static or dynamic as ``quant_mode`` says.

``OnnxDynamicQuantization`` and ``OnnxStaticQuantization`` are this pass with the mode fixed.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassConfigError, PassRunError
from olive.passes import PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.search.search_parameter import Categorical, SpecialParamValue
from olive_passes_quant._calibration import no_data_message
from olive_passes_quant._checks import check_data_config_value, check_op_types, quantizable_op_types, warn_unknown_nodes
from olive_passes_quant._explained import ExplainedPass
from olive_passes_quant._legacy import translate_legacy_params
from olive_passes_quant._params import (
    EXTRA_OPTION_PARAMS,
    common_params,
    data_params,
    extra_options_param,
    ignored_unless_static,
    static_params,
)
from olive_passes_quant._types import Precision, QuantFormat, QuantMode

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

_IGNORED = SpecialParamValue.IGNORED


def _value(config: Mapping[str, Any], name: str) -> Any:
    value = config.get(name)
    return None if isinstance(value, str) and value == _IGNORED else value


class OnnxQuantization(ExplainedPass):
    """Quantize an ONNX model to int8 with onnxruntime, statically (calibrated) or dynamically.

    ``quant_mode`` chooses; with a search strategy both modes are tried, and the static-only params are
    IGNORED for dynamic points. Static quantization needs ``data_config`` (calibration data).
    """

    #: Set by the single-mode subclasses; None means ``quant_mode`` is a param.
    _fixed_mode: ClassVar[QuantMode | None] = None

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "quant_mode": PassConfigParam(
                type_=QuantMode,
                default_value=QuantMode.STATIC,
                search_defaults=Categorical([QuantMode.DYNAMIC, QuantMode.STATIC]),
                description="'dynamic' (activation ranges computed at run time) or 'static' (calibrated).",
            ),
            **common_params(),
            **data_params(required=False),
            **ignored_unless_static(static_params()),
            **extra_options_param(),
            **get_external_data_config(),
        }

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        # Calibration runs the model on the accelerator's provider, so static results depend on it.
        return cls._fixed_mode == QuantMode.DYNAMIC

    # ----------------------------------------------------------------------------------------------
    # Config checks
    # ----------------------------------------------------------------------------------------------
    @classmethod
    def _mode(cls, config: Mapping[str, Any]) -> str:
        return str(cls._fixed_mode or config.get("quant_mode") or QuantMode.STATIC)

    @classmethod
    def get_config_params(
        cls,
        accelerator_spec: AcceleratorSpec,
        config: Mapping[str, Any] | None = None,
        disable_search: bool = False,
        pass_key: str | None = None,
    ):
        owner = f"pass '{pass_key}' ({cls.pass_name()})" if pass_key else f"pass {cls.pass_name()}"
        user = translate_legacy_params(owner, config)
        if cls._fixed_mode == QuantMode.STATIC and user.get("data_config") is None:
            # Say what calibration data is and where it comes from, not just "missing required param".
            raise PassConfigError(no_data_message(owner))
        config_class, fixed, search = super().get_config_params(accelerator_spec, user, disable_search, pass_key)
        check_op_types(owner, fixed)
        check_data_config_value(owner, fixed.get("data_config"))
        if "quant_mode" not in search and cls._mode(fixed) == QuantMode.STATIC and fixed.get("data_config") is None:
            raise PassConfigError(no_data_message(owner))
        return config_class, fixed, search

    @classmethod
    def explain_invalid(cls, config: Mapping[str, Any], accelerator_spec: AcceleratorSpec | None = None) -> str | None:
        """Why onnxruntime cannot run this config, or None when it can. ``validate_config`` logs the reason."""
        if cls._mode(config) != QuantMode.STATIC:
            return None
        if _value(config, "data_config") is None:
            return "static quantization needs calibration data (data_config)"
        samples = _value(config, "calibration_sampling_size")
        if samples is not None and samples < 1:
            return f"calibration_sampling_size must be at least 1 (or null for every sample), got {samples}"
        precision = _value(config, "precision")
        activation_type = _value(config, "activation_type")
        if precision == Precision.UINT8 and activation_type == Precision.INT8:
            return (
                "onnxruntime cannot pair uint8 weights (precision) with int8 activations (activation_type); "
                "use int8 weights or uint8 activations"
            )
        extra = _value(config, "extra_options") or {}
        if extra.get("EnableSubgraph"):
            return "extra_options EnableSubgraph works with dynamic quantization only"
        return None

    # ----------------------------------------------------------------------------------------------
    # Running
    # ----------------------------------------------------------------------------------------------
    def _initialize(self) -> None:
        # Preprocessed inputs are reused across the search points this instance runs.
        self._tmp = tempfile.TemporaryDirectory(prefix="olive-quant-pre-")
        self._preprocessed: dict[str, str] = {}

    def _preprocess(self, model: ONNXModelHandler) -> str:
        from olive_passes_quant._preprocess import quant_pre_process

        if not hasattr(self, "_tmp"):
            self._initialize()
        path = Path(model.model_path)
        stat = path.stat()
        key = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
        if key not in self._preprocessed:
            out = Path(self._tmp.name) / key / "model.onnx"
            out.parent.mkdir(parents=True)
            if quant_pre_process(path, out):
                logger.warning("%s: preprocessed %s without symbolic shape inference", self.pass_name(), path)
            self._preprocessed[key] = str(out)
        return self._preprocessed[key]

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        import onnx

        owner = f"pass {self.pass_name()}"
        reason = self.explain_invalid(config, self.accelerator_spec)
        if reason:
            raise PassConfigError(f"{owner}: {reason}")
        check_op_types(owner, config)
        is_static = self._mode(config) == QuantMode.STATIC

        # Everything that can reject the input happens before anything is written.
        reader = None
        if is_static:
            from olive_passes_quant._calibration import calibration_reader

            reader = calibration_reader(config.data_config, model, _value(config, "calibration_sampling_size"), owner)

        proto = model.load_model(load_external_data=False)
        node_names = [node.name for node in proto.graph.node]
        for param in ("nodes_to_quantize", "nodes_to_exclude"):
            if config[param]:
                warn_unknown_nodes(config[param], param, node_names)
        nodes_to_exclude = list(config.nodes_to_exclude or [])
        op_types_to_quantize = list(config.op_types_to_quantize or []) or None
        if config.op_types_to_exclude and not op_types_to_quantize:
            # onnxruntime has no op_types_to_exclude; excluding the nodes of those types is equivalent.
            excluded = set(config.op_types_to_exclude)
            nodes_to_exclude += [n.name for n in proto.graph.node if n.op_type in excluded and n.name]
        quant_format = _value(config, "quant_format") if is_static else None
        if op_types_to_quantize:
            handled = quantizable_op_types("static" if is_static else "dynamic", quant_format)
            unhandled = [op for op in op_types_to_quantize if op not in handled]
            if unhandled:
                logger.warning(
                    "%s: %s quantization does not handle op types %s; they stay in float",
                    self.pass_name(),
                    "static " + str(quant_format) if is_static else "dynamic",
                    ", ".join(unhandled),
                )

        extra_options = dict(config.extra_options or {})
        overridden = sorted(set(extra_options) & set(EXTRA_OPTION_PARAMS))
        if overridden:
            logger.warning("%s: extra_options %s are set from the params of the same meaning", owner, overridden)
        for key, (param, used_by_dynamic) in EXTRA_OPTION_PARAMS.items():
            value = _value(config, param)
            if value is not None and (is_static or used_by_dynamic):
                extra_options[key] = value
        if not is_static:
            # Fused graphs (Attention, SkipLayerNormalization...) leave tensor types that shape inference
            # cannot see; without a default type quantize_dynamic fails on them.
            extra_options.setdefault("DefaultTensorType", onnx.TensorProto.FLOAT)
        elif config.per_channel and quant_format == QuantFormat.QDQ:
            # LayerNormalization weights are 1-D, so onnxruntime's default per-channel axis (1) is out of range:
            # it logs that once per node and falls back to per-tensor. Axis 0 quantizes them per element instead,
            # with no log noise.
            extra_options.setdefault("QDQOpTypePerChannelSupportToAxis", {"LayerNormalization": 0})

        precision = Precision(_value(config, "precision") or Precision.INT8)
        if is_static and quant_format == QuantFormat.QOPERATOR and _value(config, "activation_type") == Precision.INT8:
            logger.warning("%s: QOperator with int8 activations is slow on x86-64 CPUs; QDQ is faster", owner)

        input_path = self._preprocess(model) if config.quant_preprocess else model.model_path
        with tempfile.TemporaryDirectory(prefix="olive-quant-") as tmp:
            tmp_output = Path(tmp) / "model.onnx"
            try:
                if is_static:
                    self._quantize_static(
                        config,
                        input_path,
                        tmp_output,
                        reader,
                        precision,
                        nodes_to_exclude,
                        op_types_to_quantize,
                        extra_options,
                    )
                else:
                    from onnxruntime.quantization import quantize_dynamic

                    quantize_dynamic(
                        input_path,
                        tmp_output,
                        op_types_to_quantize=op_types_to_quantize,
                        per_channel=config.per_channel,
                        reduce_range=config.reduce_range,
                        weight_type=precision.to_quant_type(),
                        nodes_to_quantize=config.nodes_to_quantize,
                        nodes_to_exclude=nodes_to_exclude,
                        use_external_data_format=True,
                        extra_options=extra_options,
                    )
            except (ValueError, RuntimeError, AttributeError) as exc:
                raise PassRunError(f"{owner}: onnxruntime could not quantize '{model.model_path}': {exc}") from exc
            quantized = onnx.load(str(tmp_output))
        return model_proto_to_olive_model(quantized, output_model_path, config)

    def _quantize_static(
        self,
        config: BasePassConfig,
        input_path: str,
        output_path: Path,
        reader: Any,
        precision: Precision,
        nodes_to_exclude: list[str],
        op_types_to_quantize: list[str] | None,
        extra_options: dict[str, Any],
    ) -> None:
        from onnxruntime.quantization import CalibrationMethod, quantize_static
        from onnxruntime.quantization import QuantFormat as OrtQuantFormat

        activation_type = Precision(_value(config, "activation_type") or Precision.INT8)
        calibrate_method = CalibrationMethod[str(_value(config, "calibrate_method") or "MinMax")]
        providers = _value(config, "calibration_providers")
        quant_format = QuantFormat(_value(config, "quant_format") or QuantFormat.QDQ)
        if quant_format == QuantFormat.QDQ and _value(config, "prepare_qdq_config"):
            from onnxruntime.quantization import get_qdq_config, quantize

            keys = ("ActivationSymmetric", "WeightSymmetric")
            symmetric = {k: extra_options.pop(k) for k in keys if k in extra_options}
            qdq_config = get_qdq_config(
                input_path,
                reader,
                calibrate_method=calibrate_method,
                activation_type=activation_type.to_quant_type(),
                weight_type=precision.to_quant_type(),
                activation_symmetric=symmetric.get("ActivationSymmetric", False),
                weight_symmetric=symmetric.get("WeightSymmetric"),
                per_channel=config.per_channel,
                reduce_range=config.reduce_range,
                min_real_range=extra_options.pop("MinimumRealRange", None),
                tensor_quant_overrides=extra_options.pop("TensorQuantOverrides", None),
                calibration_providers=providers,
                op_types_to_quantize=op_types_to_quantize,
                nodes_to_exclude=nodes_to_exclude or None,
                extra_options=extra_options or None,
            )
            qdq_config.use_external_data_format = True
            quantize(input_path, str(output_path), qdq_config)
            return
        kwargs: dict[str, Any] = {}
        if providers:
            kwargs["calibration_providers"] = providers
        quantize_static(
            input_path,
            output_path,
            reader,
            quant_format=OrtQuantFormat.QDQ if quant_format == QuantFormat.QDQ else OrtQuantFormat.QOperator,
            op_types_to_quantize=op_types_to_quantize,
            per_channel=config.per_channel,
            reduce_range=config.reduce_range,
            activation_type=activation_type.to_quant_type(),
            weight_type=precision.to_quant_type(),
            nodes_to_quantize=config.nodes_to_quantize,
            nodes_to_exclude=nodes_to_exclude,
            use_external_data_format=True,
            calibrate_method=calibrate_method,
            extra_options=extra_options,
            **kwargs,
        )
