"""``OnnxQuantization``: onnxruntime int8 quantization, static or dynamic as ``quant_mode`` says.

``OnnxDynamicQuantization`` and ``OnnxStaticQuantization`` are this pass with the mode fixed.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.config_errors import param_in_range
from olive.exceptions import PassParamError, PassRunError
from olive.logs import onnxruntime_logs
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model, release_memory
from olive.search.search_parameter import Categorical
from olive_passes_quant._calibration import calibration_reader
from olive_passes_quant._checks import (
    applied,
    check_data_config_value,
    check_op_types,
    quantizable_op_types,
    warn_unknown_nodes,
)
from olive_passes_quant._lean import calibrate_first, reload_without_copy
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


class OnnxQuantization(Pass):
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
            **common_params(accelerator_spec),
            **data_params("Calibration data, which static quantization needs"),
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
    def _mode(cls, config: Any) -> str:
        return str(cls._fixed_mode or applied(config, "quant_mode") or QuantMode.STATIC)

    @classmethod
    def _upgrade_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        return translate_legacy_params(config)

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        check_op_types(config)
        check_data_config_value(applied(config, "data_config"))
        if cls._mode(config) != QuantMode.STATIC:
            return
        # Which params decide: with quant_mode searched, only its static points are affected.
        mode = () if cls._fixed_mode else ("quant_mode",)
        if config.data_config is None:
            raise PassParamError(
                "param 'data_config' is not set, and static quantization needs calibration data; set data_config to "
                "the name of one of the workflow's data_configs (e.g. an NpzDataContainer), a DataConfig, or a path "
                "to an .npz file keyed by the model's input names (or quantize dynamically, which needs none)",
                params=("data_config", *mode),
            )
        param_in_range(config, "calibration_sampling_size", minimum=1, note="null for every sample")
        if applied(config, "precision") == Precision.UINT8 and applied(config, "activation_type") == Precision.INT8:
            raise PassParamError(
                "onnxruntime cannot pair uint8 weights (precision) with int8 activations (activation_type); use "
                "int8 weights or uint8 activations",
                params=("precision", "activation_type"),
            )
        if (applied(config, "extra_options") or {}).get("EnableSubgraph"):
            raise PassParamError(
                "extra_options EnableSubgraph works with dynamic quantization only", params=("extra_options", *mode)
            )

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

        owner = self.config_owner()
        is_static = self._mode(config) == QuantMode.STATIC

        # Everything that can reject the input happens before anything is written.
        reader = None
        if is_static:
            reader = calibration_reader(config.data_config, model, applied(config, "calibration_sampling_size"), owner)

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
        quant_format = applied(config, "quant_format") if is_static else None
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
            value = applied(config, param)
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

        precision = Precision(applied(config, "precision") or Precision.INT8)
        if is_static and quant_format == QuantFormat.QOPERATOR and applied(config, "activation_type") == Precision.INT8:
            logger.warning("%s: QOperator with int8 activations is slow on x86-64 CPUs; QDQ is faster", owner)

        del proto
        input_path = self._preprocess(model) if config.quant_preprocess else model.model_path
        # Each step below loads the model anew; freed memory goes back first, so their peaks do not add up.
        release_memory()
        with tempfile.TemporaryDirectory(prefix="olive-quant-") as tmp, onnxruntime_logs(logger):
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

                    with reload_without_copy():
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
                raise PassRunError(f"onnxruntime could not quantize '{model.model_path}': {exc}", owner=owner) from exc
            release_memory()
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

        activation_type = Precision(applied(config, "activation_type") or Precision.INT8)
        calibrate_method = CalibrationMethod[str(applied(config, "calibrate_method") or "MinMax")]
        providers = applied(config, "calibration_providers")
        quant_format = QuantFormat(applied(config, "quant_format") or QuantFormat.QDQ)
        if quant_format == QuantFormat.QDQ and applied(config, "prepare_qdq_config"):
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
        cache = calibrate_first(
            input_path, output_path.parent, reader, calibrate_method, op_types_to_quantize, extra_options, providers
        )
        if cache is not None:
            kwargs["calibration_cache_path"] = str(cache)
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
