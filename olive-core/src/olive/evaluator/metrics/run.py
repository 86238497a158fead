"""What a metric type's ``measure(run, metric)`` works with: :class:`MetricRun`, one evaluation of one model.

It lives beside the metric types rather than in :mod:`olive.evaluator.evaluator`, which finds the types through
the registry: the types import this module, the evaluator imports both, and no arrow runs back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.data.components import normalize_batch
from olive.data.feeds import check_feeds
from olive.data.user_script import get_user_function, load_user_script
from olive.evaluator.metrics.spec import Metric
from olive.exceptions import OliveError, WorkflowConfigError, closest_match_hint
from olive.measure import describe_session, synthetic_inputs

if TYPE_CHECKING:
    import onnxruntime

    from olive.data.config import DataConfig
    from olive.model.handler import OliveModelHandler

__all__ = ["MetricRun", "MetricSources"]

# A model or metric naming a provider keeps its own choice over the evaluator's default target.
_PROVIDER_KEYS = ("execution_provider", "execution_providers")


class MetricSources:
    """What a workflow gives its metrics besides the model: its data configs by name, the user script their
    functions are looked up in, the folder relative paths start at, and the reference model's outputs kept
    across the evaluations of a search.

    :param user_script: the workflow's (or evaluator's) user script, used by custom metrics that name none.
    :param base_dir: folder that relative paths in metric ``user_config`` are resolved against.
    """

    def __init__(
        self,
        data_configs: Mapping[str, DataConfig] | None = None,
        user_script: str | Path | None = None,
        base_dir: str | Path | None = None,
    ):
        self.base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
        self.user_script = str(self.path(user_script)) if user_script else None
        self.data_configs: dict[str, DataConfig] = dict(data_configs or {})
        self.reference_outputs: dict[tuple, list[Any]] = {}

    def path(self, value: str | Path) -> Path:
        """``value`` resolved against the workflow's folder."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()

    def script_of(self, metric: Metric) -> Path | None:
        """The user script ``metric``'s functions come from: its own ``user_config.user_script``, else the
        workflow's (None: neither is set)."""
        script = metric.user_config.get("user_script") or self.user_script
        if not script:
            return None
        script_dir = metric.user_config.get("script_dir")
        path = Path(script)
        if not path.is_absolute():
            path = (self.path(script_dir) if script_dir else self.base_dir) / path
        return path.resolve()

    def user_function(self, metric: Metric, key: str) -> Callable[..., Any]:
        """The function ``metric.user_config[key]`` names, from its user script."""
        name = metric.user_config[key]
        if callable(name):
            return name
        script = self.script_of(metric)
        if script is None:
            raise WorkflowConfigError(
                f"{metric.json_path}.user_config.user_script: metric '{metric.name}' names function '{name}' but "
                "no user_script is set; add user_config.user_script (the file defining it)"
            )
        script_dir = metric.user_config.get("script_dir")
        module = load_user_script(
            script, self.path(script_dir) if script_dir else None, where=f"{metric.json_path}.user_config.user_script"
        )
        return get_user_function(module, name, f"{metric.json_path}.user_config.{key}")

    def data_config_of(self, metric: Metric) -> DataConfig | None:
        return None if metric.data_config is None else self.data_configs[metric.data_config]


class MetricRun:
    """One ``evaluate`` call, as a metric type's ``measure(run, metric)`` sees it.

    ``model`` is measured, ``reference`` is what it is compared with (the model itself when there is none).
    ``session(model, metric)`` gives the model's onnxruntime session on the evaluation's target (built once per
    model and settings, shared by the metrics), ``batches(metric, model)`` the checked feeds and labels of the
    metric's data, ``run_model`` one run's outputs by name, ``metadata`` what a result records.
    """

    def __init__(
        self,
        sources: MetricSources,
        model: OliveModelHandler,
        reference: OliveModelHandler | None,
        execution_providers: list[str] | None,
    ):
        self.sources = sources
        self.model = model
        self.reference = reference if reference is not None else model
        self.execution_providers = execution_providers
        self.target_settings: dict[str, Any] = {}
        self._sessions: dict[tuple, tuple[onnxruntime.InferenceSession, dict[str, Any]]] = {}

    # ------------------------------------------------------------------------------------- sessions

    def settings_for(self, model: OliveModelHandler, metric: Metric) -> dict[str, Any]:
        # The model's own settings (e.g. from session tuning) win over the metric's.
        metric_settings = metric.user_config.get("inference_settings") or {}
        if isinstance(metric_settings, Mapping) and isinstance(metric_settings.get("onnx"), Mapping):
            # Microsoft Olive keys a metric's settings by framework: {"onnx": {...}}
            metric_settings = metric_settings["onnx"]
        settings = {k: dict(v) if isinstance(v, Mapping) else v for k, v in metric_settings.items()}
        for key, value in (getattr(model, "inference_settings", None) or {}).items():
            if isinstance(value, Mapping) and isinstance(settings.get(key), dict):
                settings[key].update(value)
            else:
                settings[key] = value
        if self.target_settings and not any(k in settings for k in _PROVIDER_KEYS):
            settings.update(self.target_settings)
        return settings

    def session(self, model: OliveModelHandler, metric: Metric) -> tuple[onnxruntime.InferenceSession, dict[str, Any]]:
        import json

        settings = self.settings_for(model, metric)
        key = (id(model), json.dumps(settings, sort_keys=True, default=str))
        if key not in self._sessions:
            providers = None if settings.get("execution_provider") else self.execution_providers
            if not hasattr(model, "prepare_session"):
                raise OliveError(f"metric '{metric.name}' needs an ONNX model to run; got {model!r}")
            session = model.prepare_session(inference_settings=settings or None, execution_providers=providers)
            described = describe_session(session)
            info = {
                "providers": described["providers"],
                "inference_settings": settings,
                "session_options": described["session_options"],
            }
            if "nodes_not_taken" in described:
                # Nodes the target provider left to another (the CPU): the candidate does not run where asked.
                info.update(
                    {k: described[k] for k in ("nodes_by_provider", "nodes_not_taken", "nodes_not_taken_count")}
                )
            self._sessions[key] = (session, info)
        return self._sessions[key]

    # ------------------------------------------------------------------------------------- data

    def batches(self, metric: Metric, model: OliveModelHandler) -> Iterator[tuple[dict[str, Any], Any]]:
        """Checked feeds and labels from the metric's data, or synthetic inputs when it names none."""

        io_config = model.get_io_config()
        data_config = self.sources.data_config_of(metric)
        model_name = f"model '{Path(model.model_path).name}'"
        if data_config is None:
            if metric.user_config.get("dataloader_func"):
                yield from self._legacy_batches(metric, io_config, model_name)
                return
            # A metric may give the input specs itself (Olive's user_config input_names/shapes/types).
            specs = {
                key: metric.user_config.get(key) or io_config[key]
                for key in ("input_names", "input_shapes", "input_types")
            }
            yield synthetic_inputs(specs, owner=f"metric '{metric.name}' ({metric.json_path})"), None
            return
        # a metric's user_config.batch_size (Olive's older place for it) overrides the data config's
        loader = data_config.create_dataloader(metric.user_config.get("batch_size") or None)
        produced = False
        for inputs, labels in loader:
            produced = True
            where = f"{data_config.where} (used by metric '{metric.name}')"
            yield check_feeds(inputs, io_config, where, model_name, cast=True), labels
        if not produced:
            raise OliveError(f"{data_config.where} yields no data; metric '{metric.name}' needs at least one sample")

    def _legacy_batches(
        self, metric: Metric, io_config: dict[str, Any], model_name: str
    ) -> Iterator[tuple[dict[str, Any], Any]]:
        # Older Olive metrics carry their own loader: dataloader_func(data_dir, batch_size, **func_kwargs).

        func = self.sources.user_function(metric, "dataloader_func")
        data_dir = metric.user_config.get("data_dir")
        kwargs = dict((metric.user_config.get("func_kwargs") or {}).get("dataloader_func") or {})
        try:
            loader = func(
                str(self.sources.path(data_dir)) if data_dir else None,
                metric.user_config.get("batch_size", 1),
                **kwargs,
            )
            for batch in loader:
                inputs, labels = normalize_batch(batch)
                where = f"dataloader_func of metric '{metric.name}'"
                yield check_feeds(inputs, io_config, where, model_name, cast=True), labels
        except OliveError:
            raise
        except Exception as exc:
            raise OliveError(
                f"{metric.json_path}.user_config.dataloader_func failed ({type(exc).__name__}: {exc})"
            ) from exc

    def run_model(self, model: OliveModelHandler, metric: Metric, feeds: dict[str, Any]) -> dict[str, Any]:
        session, _ = self.session(model, metric)
        names = [o.name for o in session.get_outputs()]
        try:
            outputs = session.run(None, feeds)
        except Exception as exc:
            raise OliveError(
                f"metric '{metric.name}': running model '{model.model_path}' failed ({type(exc).__name__}: {exc})"
            ) from exc
        return dict(zip(names, outputs, strict=True))

    def pick_output(self, outputs: dict[str, Any], metric: Metric, model: OliveModelHandler) -> Any:
        return outputs[self.output_key(outputs, metric, model)]

    @staticmethod
    def output_key(outputs: dict[str, Any], metric: Metric, model: OliveModelHandler) -> str:
        """The output a metric looks at: its ``output_name``, else the model's first output."""
        if metric.output_name is None:
            return next(iter(outputs))
        if metric.output_name not in outputs:
            raise OliveError(
                f"{metric.json_path}.output_name: model '{model.model_path}' has no output '{metric.output_name}'"
                f"{closest_match_hint(metric.output_name, outputs)}; its outputs: {', '.join(outputs)}"
            )
        return metric.output_name

    # ------------------------------------------------------------------------------------- for metric types

    def data_config(self, metric: Metric) -> DataConfig | None:
        """The metric's data config (None: the metric names none and runs on synthetic inputs)."""
        return self.sources.data_config_of(metric)

    def user_function(self, metric: Metric, key: str) -> Callable[..., Any]:
        """The function ``metric.user_config[key]`` names, from its user script."""
        return self.sources.user_function(metric, key)

    def path(self, value: str | Path) -> Path:
        """``value`` resolved against the workflow's folder."""
        return self.sources.path(value)

    @property
    def reference_outputs(self) -> dict[tuple, list[Any]]:
        """Outputs of the reference model kept across the evaluations of a search, by what produced them."""
        return self.sources.reference_outputs

    def metadata(self, metric: Metric, model: OliveModelHandler, **extra: Any) -> dict[str, Any]:
        """What a metric's result records: its data config, the session's providers and settings, ``extra``."""
        _, info = self.session(model, metric)
        data_config = self.data_config(metric)
        return {"data_config": data_config.name if data_config else None, **info, **extra}

    def predictions(self, metric: Metric) -> tuple[Any, Any, Any, int]:
        """Post-processed predictions, raw outputs and labels over all batches of the metric's data."""
        import numpy as np

        data_config = self.data_config(metric)
        post_func = (
            self.user_function(metric, "post_processing_func")
            if metric.user_config.get("post_processing_func")
            else None
        )
        preds, raws, labels = [], [], []
        count = 0
        for feeds, batch_labels in self.batches(metric, self.model):
            outputs = self.run_model(self.model, metric, feeds)
            raw = self.pick_output(outputs, metric, self.model)
            if post_func is not None:
                pred = post_func(raw)
            elif data_config is not None and data_config.post_process_data_config.type:
                pred = data_config.post_process(raw)
            else:
                pred = _default_predictions(raw)
            preds.append(np.atleast_1d(np.asarray(pred)))
            raws.append(raw)
            labels.append(None if batch_labels is None else np.asarray(batch_labels))
            count += len(raw)
        return preds, raws, labels, count

    @staticmethod
    def call_user(func: Callable[..., Any], metric: Metric, what: str, args: tuple, kwargs: dict[str, Any]) -> Any:
        try:
            return func(*args, **kwargs)
        except OliveError:
            raise
        except Exception as exc:
            raise OliveError(
                f"metric '{metric.name}' ({metric.json_path}): {what} raised {type(exc).__name__}: {exc}"
            ) from exc


# ------------------------------------------------------------------------------------------------ helpers


def _default_predictions(output: Any) -> Any:
    import numpy as np

    output = np.asarray(output)
    if np.issubdtype(output.dtype, np.floating):
        if output.ndim >= 2 and output.shape[-1] > 1:
            return output.argmax(axis=-1)
        return np.rint(output)
    return output
