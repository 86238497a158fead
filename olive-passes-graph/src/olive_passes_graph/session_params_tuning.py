"""OrtSessionParamsTuning: measure onnxruntime session settings and attach the fastest to the model."""

from __future__ import annotations

import itertools
import logging
import os
from typing import TYPE_CHECKING, Any, ClassVar

from olive.config_errors import param_in_range
from olive.exceptions import OliveError, PassConfigError, PassParamError
from olive.execution_providers.registry import adapter_for
from olive.measure import FREE_DIM_SIZE, latency_summary, session_runner, synthetic_inputs, timed_runs
from olive.passes import Pass, PassConfigParam
from olive_passes_graph._common import carry_over, copy_model_files, graph_level_name, output_guard

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

_EXECUTION_MODES = {0: "ORT_SEQUENTIAL", 1: "ORT_PARALLEL", "sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}


class OrtSessionParamsTuning(Pass):
    """Find the fastest onnxruntime session settings for the model and record them in ``inference_settings``.

    Every combination of the ``*_list`` params is measured (``warmup_num`` runs, then ``repeat_test_num``
    timed runs, as :func:`olive.measure.timed_runs` times them) on the first batch of ``data_config``, or on
    :func:`olive.measure.synthetic_inputs` made from the model's io config. The
    model itself is unchanged (linked or copied to the output path); the winner goes into its
    ``inference_settings`` (``execution_provider`` + ``session_options``), which the evaluator and
    ``ONNXModelHandler.prepare_session`` use, and the full table into ``model_attributes``.
    """

    # Its samples are inputs to time, not data to fit: the settings it picks change how fast the model runs,
    # never what it outputs, so a data config it shares with the metrics is not split for it.
    fits_on_data: ClassVar[bool] = False

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "data_config": PassConfigParam(
                type_=Any,
                default_value=None,
                description="Inputs to time: a DataConfig, its JSON, a workflow data config name, or an .npz "
                "path. None: inputs made from the model's io config.",
            ),
            "dynamic_dim_values": PassConfigParam(
                type_=dict[str, int] | None,
                default_value=None,
                description='Without data_config: sizes for symbolic dims, e.g. {"sequence": 128}; others are 1 '
                f"for the batch axis and {FREE_DIM_SIZE} for the rest (olive.measure.synthetic).",
            ),
            "providers_list": PassConfigParam(
                type_=str | list[str] | None,
                default_value=None,
                description="Execution providers to try (None: the accelerator's); ones the installed "
                "onnxruntime lacks are skipped.",
            ),
            "execution_mode_list": PassConfigParam(
                type_=int | str | list[int | str] | None,
                default_value=None,
                description="Execution modes to try: ORT_SEQUENTIAL/0, ORT_PARALLEL/1 (None: sequential).",
            ),
            "opt_level_list": PassConfigParam(
                type_=int | str | list[int | str] | None,
                default_value=None,
                description="Graph optimization levels to try: 0/1/2/99 or ORT_ENABLE_* names (None: ORT_ENABLE_ALL).",
            ),
            "intra_thread_num_list": PassConfigParam(
                type_=int | list[int] | None,
                default_value=None,
                description="intra_op_num_threads values to try; 0 is onnxruntime's default "
                "(None: 0, 1 and the CPU count).",
            ),
            "inter_thread_num_list": PassConfigParam(
                type_=int | list[int] | None,
                default_value=None,
                description="inter_op_num_threads values to try (only matters in parallel mode; None: 0).",
            ),
            "cpu_cores": PassConfigParam(
                type_=int | None, default_value=None, description="Upper bound of the default thread counts."
            ),
            "io_bind": PassConfigParam(
                type_=bool, default_value=False, description="Also time runs with IO binding (inputs bound once)."
            ),
            "extra_session_config": PassConfigParam(
                type_=dict[str, Any] | None,
                default_value=None,
                description="Session config entries applied to every trial and kept in the result.",
            ),
            "force_evaluate_other_eps": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Also time providers other than the accelerator's (by default they are skipped).",
            ),
            "warmup_num": PassConfigParam(type_=int, default_value=3, description="Untimed runs per setting."),
            "repeat_test_num": PassConfigParam(type_=int, default_value=20, description="Timed runs per setting."),
        }

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        return False

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        param_in_range(config, "warmup_num", minimum=0)
        param_in_range(config, "repeat_test_num", minimum=1)
        param_in_range(config, "cpu_cores", minimum=1)
        for value in _as_list(config.execution_mode_list):
            if _execution_mode(value) is None:
                raise PassParamError(
                    f"param 'execution_mode_list' has {value!r}; use ORT_SEQUENTIAL (0) or ORT_PARALLEL (1)",
                    params="execution_mode_list",
                )
        for value in _as_list(config.opt_level_list):
            if graph_level_name(value) is None:
                raise PassParamError(
                    f"param 'opt_level_list' has {value!r}; use 0, 1, 2, 99 or "
                    "ORT_DISABLE_ALL / ORT_ENABLE_BASIC / ORT_ENABLE_EXTENDED / ORT_ENABLE_ALL",
                    params="opt_level_list",
                )
        bad_dims = {k: v for k, v in (config.dynamic_dim_values or {}).items() if isinstance(v, bool) or not v or v < 1}
        if bad_dims:
            raise PassParamError(
                f"param 'dynamic_dim_values' has sizes below 1 {bad_dims}; use 1 or more", params="dynamic_dim_values"
            )
        for name in ("intra_thread_num_list", "inter_thread_num_list"):
            bad = [v for v in _as_list(config[name]) if v < 0]
            if bad:
                raise PassParamError(f"param '{name}' has negative thread counts {bad}; use 0 or more", params=name)

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        owner = f"pass {self.pass_name()}"
        providers = self._providers(config, owner)
        inputs = _load_inputs(model, config, owner)
        cpu_count = config.cpu_cores or os.cpu_count() or 1
        intra = _as_list(config.intra_thread_num_list) or sorted({0, 1, cpu_count})
        inter = _as_list(config.inter_thread_num_list) or [0]
        modes = [_execution_mode(v) for v in _as_list(config.execution_mode_list)] or ["ORT_SEQUENTIAL"]
        levels = [graph_level_name(v) for v in _as_list(config.opt_level_list)] or ["ORT_ENABLE_ALL"]
        io_binds = [False, True] if config.io_bind else [False]

        table: list[dict[str, Any]] = []
        for provider, mode, level, intra_n, inter_n, io_bind in itertools.product(
            providers, list(dict.fromkeys(modes)), list(dict.fromkeys(levels)), intra, inter, io_binds
        ):
            if mode == "ORT_SEQUENTIAL" and inter_n != inter[0]:
                # inter-op threads are unused in sequential mode; timing them again only adds noise.
                continue
            session_options: dict[str, Any] = {
                "execution_mode": mode,
                "graph_optimization_level": level,
                "intra_op_num_threads": intra_n,
                "inter_op_num_threads": inter_n,
            }
            if config.extra_session_config:
                session_options["extra_session_config"] = dict(config.extra_session_config)
            settings = self._settings(provider, session_options)
            row: dict[str, Any] = {"execution_provider": provider, "io_bind": io_bind, **session_options}
            row.pop("extra_session_config", None)
            try:
                latencies = _measure(model, settings, inputs, config.warmup_num, config.repeat_test_num, io_bind)
            except OliveError as exc:
                row["error"] = str(exc)
                logger.warning("%s: settings %s failed: %s", owner, row, exc)
                table.append(row)
                continue
            summary = latency_summary(latencies)
            row["latency_ms_avg"] = round(summary["avg"], 4)
            row["latency_ms_p50"] = round(summary["p50"], 4)
            table.append(row)
        measured = [row for row in table if "error" not in row]
        if not measured:
            raise OliveError(
                f"{owner}: no session setting could run '{model.model_path}'; first error: {table[0]['error']}"
            )
        # The median resists the odd slow run on a busy machine better than the mean.
        best = min(measured, key=lambda row: row["latency_ms_p50"])
        best_settings = self._settings(
            best["execution_provider"],
            {
                key: best[key]
                for key in (
                    "execution_mode",
                    "graph_optimization_level",
                    "intra_op_num_threads",
                    "inter_op_num_threads",
                )
            },
        )
        if config.extra_session_config:
            best_settings["session_options"]["extra_session_config"] = dict(config.extra_session_config)
        logger.info(
            "%s: best of %d settings: %s (p50 %.3f ms)", owner, len(measured), best_settings, best["latency_ms_p50"]
        )

        from olive.model.handler import ONNXModelHandler

        with output_guard(output_model_path):
            destination = copy_model_files(model, output_model_path)
        result = ONNXModelHandler(
            str(destination.parent) if model.external_data_files() else str(destination),
            onnx_file_name=destination.name if model.external_data_files() else None,
        )
        tuned = carry_over(
            model,
            result,
            attributes={"session_params_tuning": {"best": dict(best), "io_bind": best["io_bind"], "table": table}},
        )
        # The tuned settings replace (not merge with) what the input model had: they were measured as a whole.
        tuned.inference_settings = best_settings
        return tuned

    def _settings(self, provider: str, session_options: dict[str, Any]) -> dict[str, Any]:
        """Settings that time (and then run) the model on ``provider``: on the accelerator's own provider, with
        its options and device (a plugin provider's session is made for its device by ``olive.measure``)."""
        settings: dict[str, Any] = {"execution_provider": _with_cpu_fallback(provider)}
        if provider == self.accelerator_spec.execution_provider:
            settings = self.accelerator_spec.inference_settings()
            if adapter_for(provider) is None:
                settings["execution_provider"] = _with_cpu_fallback(provider)
        return {**settings, "session_options": session_options}

    def _providers(self, config: BasePassConfig, owner: str) -> list[str]:
        import onnxruntime as ort

        requested = _as_list(config.providers_list) or [self.accelerator_spec.execution_provider]
        available = ort.get_available_providers()
        # A plugin provider's library is registered by the first session that needs it.
        kept = [p for p in dict.fromkeys(requested) if p in available or adapter_for(p) is not None]
        missing = [p for p in requested if p not in kept]
        if missing:
            logger.warning("%s: skipping execution providers the installed onnxruntime lacks: %s", owner, missing)
        if not config.force_evaluate_other_eps:
            other = [p for p in kept if p != self.accelerator_spec.execution_provider]
            if other:
                logger.info(
                    "%s: skipping %s (not the accelerator's provider; see force_evaluate_other_eps)", owner, other
                )
            kept = [p for p in kept if p == self.accelerator_spec.execution_provider]
        if not kept:
            raise PassConfigError(
                f"none of the providers to tune ({', '.join(requested)}) is usable: the installed onnxruntime offers "
                f"{', '.join(available)} and the accelerator uses {self.accelerator_spec.execution_provider} (set "
                "force_evaluate_other_eps to time others)",
                owner=owner,
            )
        return kept


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _execution_mode(value: Any) -> str | None:
    if isinstance(value, str) and value.upper() in ("ORT_SEQUENTIAL", "ORT_PARALLEL"):
        return value.upper()
    if isinstance(value, bool):
        return None
    return _EXECUTION_MODES.get(value.lower() if isinstance(value, str) else value)


def _with_cpu_fallback(provider: str) -> list[str]:
    return list(dict.fromkeys([provider, "CPUExecutionProvider"]))


def _measure(
    model: ONNXModelHandler,
    settings: dict[str, Any],
    inputs: dict[str, Any],
    warmup: int,
    repeat: int,
    io_bind: bool,
) -> list[float]:
    """Milliseconds of each timed run of ``model`` with ``settings``."""
    session = model.prepare_session(inference_settings=settings)
    feed = {item.name: inputs[item.name] for item in session.get_inputs()}
    run = session_runner(session, feed, io_bind, what=f"'{model.model_path}'")
    return [seconds * 1000.0 for seconds in timed_runs(run, repeat, warmup)]


def _load_inputs(model: ONNXModelHandler, config: BasePassConfig, owner: str) -> dict[str, Any]:
    io_config = model.get_io_config()
    if config.data_config is None:
        return synthetic_inputs(io_config, config.dynamic_dim_values, owner=f"{owner}: param 'dynamic_dim_values'")
    data_config = _data_config(config.data_config, owner)
    try:
        batch = next(iter(data_config.create_dataloader()))
    except StopIteration:
        raise PassConfigError(f"{owner}: data_config '{data_config.name}' yields no batch") from None
    inputs = batch[0] if isinstance(batch, tuple) else batch
    from olive.data.calibration import check_feeds

    # Names, ranks, fixed dims and dtypes checked here give one clear error instead of an onnxruntime one.
    return check_feeds(inputs, io_config, where=f"{owner}: data_config '{data_config.name}'")


def _data_config(value: Any, owner: str) -> Any:
    from olive.data.calibration import as_data_config

    return as_data_config(value, where=f"{owner}: param 'data_config'")
