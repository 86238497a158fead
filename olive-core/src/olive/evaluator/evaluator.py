"""``OliveEvaluator``: measures a model's metrics on real onnxruntime sessions."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.data.components import normalize_batch
from olive.data.feeds import check_feeds
from olive.data.user_script import get_user_function, load_user_script
from olive.evaluator.metric import RATIO_PREFIX, Metric, assign_priorities, plugin_metrics
from olive.evaluator.result import MetricResult, SubMetricResult, joint_key
from olive.evaluator.scores import classification_scores
from olive.exceptions import OliveError, WorkflowConfigError, closest_match_hint
from olive.measure import (
    OutputVectors,
    agreement_scores,
    check_one_sample,
    describe_session,
    interleaved_runs,
    latency_summary,
    paired_round_size,
    ratios_to_reference,
    session_runner,
    synthetic_inputs,
    timed_runs,
    trim_right_padding,
)

if TYPE_CHECKING:
    import onnxruntime

    from olive.data.config import DataConfig
    from olive.model.handler import OliveModelHandler

logger = logging.getLogger(__name__)

# A model or metric naming a provider keeps its own choice over the evaluator's default target.
_PROVIDER_KEYS = ("execution_provider", "execution_providers")


class OliveEvaluator:
    """Evaluates models on a list of metrics.

    :param metrics: parsed metrics (:func:`olive.evaluator.metric.parse_metric`).
    :param data_configs: the workflow's data configs by name.
    :param user_script: the workflow's (or evaluator's) user script, used by custom metrics that name none.
    :param base_dir: folder that relative paths in metric ``user_config`` are resolved against.
    """

    def __init__(
        self,
        metrics: Sequence[Metric],
        data_configs: Mapping[str, DataConfig] | None = None,
        user_script: str | Path | None = None,
        base_dir: str | Path | None = None,
    ):
        if not metrics:
            raise WorkflowConfigError("an evaluator needs at least one metric")
        self.metrics = assign_priorities(list(metrics))
        self.base_dir = Path(base_dir) if base_dir is not None else Path.cwd()
        self.user_script = str(self._path(user_script)) if user_script else None
        self.data_configs: dict[str, DataConfig] = dict(data_configs or {})
        for metric in self.metrics:
            if metric.inline_data_config is not None:
                self.data_configs.setdefault(metric.inline_data_config.name, metric.inline_data_config)
            elif metric.data_config is not None and metric.data_config not in self.data_configs:
                names = sorted(self.data_configs)
                raise WorkflowConfigError(
                    f"{metric.json_path}.data_config: no data config named '{metric.data_config}'"
                    f"{closest_match_hint(metric.data_config, names)}; defined: {', '.join(names) or 'none'} "
                    "(add it to data_configs)"
                )
        self._reference_outputs: dict[tuple, list[Any]] = {}
        self._validated = False

    # ------------------------------------------------------------------------------------------ checks

    def _path(self, value: str | Path) -> Path:
        path = Path(value).expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()

    def _script_of(self, metric: Metric) -> Path | None:
        script = metric.user_config.get("user_script") or self.user_script
        if not script:
            return None
        script_dir = metric.user_config.get("script_dir")
        path = Path(script)
        if not path.is_absolute():
            path = (self._path(script_dir) if script_dir else self.base_dir) / path
        return path.resolve()

    def _user_function(self, metric: Metric, key: str) -> Callable[..., Any]:

        name = metric.user_config[key]
        if callable(name):
            return name
        script = self._script_of(metric)
        if script is None:
            raise WorkflowConfigError(
                f"{metric.json_path}.user_config.user_script: metric '{metric.name}' names function '{name}' but "
                "no user_script is set; add user_config.user_script (the file defining it)"
            )
        script_dir = metric.user_config.get("script_dir")
        module = load_user_script(
            script, self._path(script_dir) if script_dir else None, where=f"{metric.json_path}.user_config.user_script"
        )
        return get_user_function(module, name, f"{metric.json_path}.user_config.{key}")

    def validate(self) -> None:
        """Import user scripts and check every function the metrics and their data configs name exists.

        Raises :class:`WorkflowConfigError` naming the JSON path; cheap to call again.
        """
        if self._validated:
            return
        for metric in self.metrics:
            for key in ("evaluate_func", "metric_func", "post_processing_func", "dataloader_func"):
                if metric.user_config.get(key):
                    self._user_function(metric, key)
            if metric.data_config is not None:
                self.data_configs[metric.data_config].check_user_script()
        self._validated = True

    # ------------------------------------------------------------------------------------------ evaluate

    def evaluate(
        self,
        model: OliveModelHandler,
        reference_model: OliveModelHandler | None = None,
        execution_providers: Sequence[str] | str | None = None,
        target_settings: Mapping[str, Any] | None = None,
    ) -> MetricResult:
        """Measure every metric on ``model``.

        :param reference_model: what ``agreement`` metrics compare against (the workflow's input model);
            ``None`` compares the model with itself.
        :param execution_providers: used when the model's ``inference_settings`` name none.
        :param target_settings: the target's settings (provider, its options and device,
            :meth:`AcceleratorSpec.inference_settings`), used for models whose settings name no provider.
        """
        self.validate()
        if isinstance(execution_providers, str):
            execution_providers = [execution_providers]
        run = _Run(self, model, reference_model, list(execution_providers) if execution_providers else None)
        run.target_settings = dict(target_settings or {})
        result = MetricResult()
        for metric in self.metrics:
            values, metadata = run.measure(metric)
            missing = [sub.name for sub in metric.sub_types if sub.name not in values]
            if missing:
                raise OliveError(
                    f"metric '{metric.name}' ({metric.json_path}) returned no value for sub type(s) "
                    f"{', '.join(missing)}; it returned {', '.join(values) or 'nothing'}"
                )
            for sub in metric.sub_types:
                result[joint_key(metric.name, sub.name)] = SubMetricResult(
                    float(values[sub.name]), sub.priority, sub.higher_is_better
                )
            result.metadata[metric.name] = metadata
        return result

    def release(self) -> None:
        """Let go of the reference model's outputs kept for the comparisons of a search (call when it ends)."""
        self._reference_outputs.clear()

    def data_config_of(self, metric: Metric) -> DataConfig | None:
        return None if metric.data_config is None else self.data_configs[metric.data_config]


class _Run:
    """State of one ``evaluate`` call: sessions are built once per model and shared by its metrics."""

    def __init__(
        self,
        evaluator: OliveEvaluator,
        model: OliveModelHandler,
        reference: OliveModelHandler | None,
        execution_providers: list[str] | None,
    ):
        self.evaluator = evaluator
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
        data_config = self.evaluator.data_config_of(metric)
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

        func = self.evaluator._user_function(metric, "dataloader_func")
        data_dir = metric.user_config.get("data_dir")
        kwargs = dict((metric.user_config.get("func_kwargs") or {}).get("dataloader_func") or {})
        try:
            loader = func(
                str(self.evaluator._path(data_dir)) if data_dir else None,
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

    # ------------------------------------------------------------------------------------- metrics

    def measure(self, metric: Metric) -> tuple[dict[str, float], dict[str, Any]]:
        kind = metric.type
        if kind in ("latency", "throughput"):
            return self._latency(metric)
        if kind == "accuracy":
            return self._accuracy(metric)
        if kind == "agreement":
            return self._agreement(metric)
        if kind == "size_on_disk":
            return {"bytes": float(_size_on_disk(self.model))}, {"model_path": str(self.model.model_path)}
        if kind == "custom":
            return self._custom(metric)
        return self._plugin(metric)

    def _metadata(self, metric: Metric, model: OliveModelHandler, **extra: Any) -> dict[str, Any]:
        _, info = self.session(model, metric)
        data_config = self.evaluator.data_config_of(metric)
        return {"data_config": data_config.name if data_config else None, **info, **extra}

    def _latency(self, metric: Metric) -> tuple[dict[str, float], dict[str, Any]]:
        import numpy as np

        feeds, _ = next(iter(self.batches(metric, self.model)))
        batch = len(next(iter(feeds.values()))) if feeds and next(iter(feeds.values())).ndim else 1
        io_bind = bool(metric.user_config.get("io_bind"))
        # The input model evaluated in a worker process is another handler of the same file: still itself.
        # (The same file on another target is not itself: its sessions run elsewhere.)
        itself = self.reference is self.model or (
            str(self.reference.model_path) == str(self.model.model_path)
            and self.settings_for(self.reference, metric) == self.settings_for(self.model, metric)
        )
        paired = not itself and any(s.name.startswith(RATIO_PREFIX) for s in metric.sub_types)
        infer = self._infer(self.model, metric, feeds, io_bind)
        timing = {"warmup": metric.warmup_num, "sleep_s": metric.sleep_num}
        if paired:
            ref_name = f"reference model '{Path(self.reference.model_path).name}'"
            ref_feeds = check_feeds(
                feeds, self.reference.get_io_config(), f"metric '{metric.name}'", ref_name, cast=True
            )
            ref_infer = self._infer(self.reference, metric, ref_feeds, io_bind)
            per_round = paired_round_size(metric.repeat_test_num)
            rounds = interleaved_runs([infer, ref_infer], metric.repeat_test_num, per_round=per_round, **timing)
            seconds = [t for times in rounds for t in times[0]]
        else:
            rounds, seconds = None, timed_runs(infer, metric.repeat_test_num, **timing)

        def measured(times: Any) -> Any:
            # latency in milliseconds per run; throughput in samples per second
            times = np.maximum(np.asarray(times, dtype=np.float64), 1e-12)
            return times * 1000.0 if metric.type == "latency" else batch / times

        stats = latency_summary(measured(seconds))
        extra: dict[str, Any] = {}
        if rounds is not None:
            ref_stats = latency_summary(measured([t for times in rounds for t in times[1]]))
            relative = ratios_to_reference(rounds)
            ratios = relative if metric.type == "latency" else 1.0 / np.maximum(relative, 1e-12)
            stats.update({RATIO_PREFIX + k: v for k, v in latency_summary(ratios).items()})
            extra["paired_with"] = {"model": str(self.reference.model_path), **ref_stats}
        else:
            # The reference model against itself (or no reference given): the ratio is 1 by definition.
            stats.update({RATIO_PREFIX + k: 1.0 for k in list(stats)})
        meta = self._metadata(
            metric,
            self.model,
            unit="ms" if metric.type == "latency" else "samples/s",
            batch_size=batch,
            warmup_num=metric.warmup_num,
            repeat_test_num=metric.repeat_test_num,
            io_bind=io_bind,
            synthetic_inputs=self.evaluator.data_config_of(metric) is None,
            **extra,
        )
        return stats, meta

    def _infer(
        self, model: OliveModelHandler, metric: Metric, feeds: dict[str, Any], io_bind: bool
    ) -> Callable[[], None]:
        """One timed unit of work: a run of ``model`` on ``feeds``; failures name the metric and the model."""
        session, _ = self.session(model, metric)
        return session_runner(
            session, feeds, io_bind, what=f"model '{model.model_path}'", owner=f"metric '{metric.name}'"
        )

    def _predictions(self, metric: Metric) -> tuple[Any, Any, Any, int]:
        """Post-processed predictions, raw outputs and labels over all batches of the metric's data."""
        import numpy as np

        data_config = self.evaluator.data_config_of(metric)
        post_func = (
            self.evaluator._user_function(metric, "post_processing_func")
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

    def _accuracy(self, metric: Metric) -> tuple[dict[str, float], dict[str, Any]]:
        import numpy as np

        preds, _, labels, count = self._predictions(metric)
        where = self.evaluator.data_config_of(metric)
        if any(label is None for label in labels):
            # The workflow pairs a labelled metric with unlabelled data: a config error, like a missing input.
            raise WorkflowConfigError(
                f"metric '{metric.name}' ({metric.json_path}) needs labels, but "
                f"{where.where if where else 'its data'} yields batches without them; add a 'labels' array to "
                "the .npz or return (inputs, label) from the dataset"
            )
        y_pred = np.concatenate([p.reshape(-1) for p in preds])
        y_true = np.concatenate([lab.reshape(-1) for lab in labels])
        if y_pred.shape != y_true.shape:
            raise OliveError(
                f"metric '{metric.name}': {y_pred.size} predictions but {y_true.size} labels; the labels need one "
                "entry per prediction (use post_process_data_config to turn outputs into class ids)"
            )
        values = {}
        for sub in metric.sub_types:
            values[sub.name] = classification_scores(y_true, y_pred, sub.name, sub.metric_config)
        return values, self._metadata(metric, self.model, num_samples=count)

    def _agreement(self, metric: Metric) -> tuple[dict[str, float], dict[str, Any]]:
        data_config = self.evaluator.data_config_of(metric)
        ref_key = None
        if data_config is not None and self.reference is not self.model:
            ref_key = (
                _file_identity(self.reference),
                data_config.name,
                metric.output_name,
                metric.pooling,
                metric.mask_input,
                metric.trim_padding,
                metric.user_config.get("batch_size"),
            )
        cached = self.evaluator._reference_outputs.get(ref_key) if ref_key else None
        ref_io = self.reference.get_io_config() if self.reference is not self.model else None
        vectors = OutputVectors(
            pooling=metric.pooling, mask_input=metric.mask_input, owner=f"{metric.json_path}.pooling"
        )
        candidates, references = [], []
        io_config = self.model.get_io_config() if metric.trim_padding else None
        for index, (feeds, _) in enumerate(self.batches(metric, self.model)):
            if io_config is not None:
                check_one_sample(feeds, metric.mask_input, owner=f"{metric.json_path}.trim_padding")
                feeds = trim_right_padding(feeds, metric.mask_input, io_config)
            candidates.append(self._vectors(self.model, metric, feeds, vectors))
            if cached is not None and index < len(cached):
                references.append(cached[index])
            else:
                ref_feeds = feeds
                if ref_io is not None:
                    # the reference may take other input dtypes (e.g. float32 against a float16 candidate)

                    ref_name = f"reference model '{Path(self.reference.model_path).name}'"
                    ref_feeds = check_feeds(feeds, ref_io, f"metric '{metric.name}'", ref_name, cast=True)
                references.append(self._vectors(self.reference, metric, ref_feeds, vectors))
        if ref_key is not None:
            self.evaluator._reference_outputs[ref_key] = references
        try:
            # batch by batch: unpooled samples at their real length differ in shape from one another
            values = agreement_scores(candidates, references)
        except OliveError as exc:
            raise OliveError(
                f"{exc.reason}; the model's and the reference model's outputs must match (set output_name)",
                owner=f"metric '{metric.name}'",
            ) from exc
        meta = self._metadata(
            metric,
            self.model,
            num_samples=int(sum(len(c) for c in candidates)),
            reference_model=str(self.reference.model_path) if self.reference is not self.model else "self",
            synthetic_inputs=data_config is None,
        )
        return values, meta

    def _vectors(self, model: OliveModelHandler, metric: Metric, feeds: dict[str, Any], vectors: OutputVectors) -> Any:
        outputs = self.run_model(model, metric, feeds)
        name = self.output_key(outputs, metric, model)
        return vectors.of({name: outputs[name]}, feeds)

    def _custom(self, metric: Metric) -> tuple[dict[str, float], dict[str, Any]]:
        data_config = self.evaluator.data_config_of(metric)
        if metric.user_config.get("evaluate_func"):
            func = self.evaluator._user_function(metric, "evaluate_func")
            data_dir = metric.user_config.get("data_dir")
            available = {
                "data": data_config.create_dataloader() if data_config else None,
                "data_config": data_config,
                "data_dir": str(self.evaluator._path(data_dir)) if data_dir else None,
                "batch_size": metric.user_config.get("batch_size", 1),
                "device": "cpu",
                "execution_providers": self.execution_providers,
                "reference_model": self.reference,
            }
            kwargs = dict(metric.user_config.get("evaluate_func_kwargs") or {})
            raw = self._call_user(func, metric, "evaluate_func", (self.model,), _fit_kwargs(func, available, kwargs))
            name = "evaluate_func"
        else:
            import numpy as np

            func = self.evaluator._user_function(metric, "metric_func")
            preds, raws, labels, _ = self._predictions(metric)
            targets = None if any(lab is None for lab in labels) else np.concatenate(labels)
            model_output = (np.concatenate(preds), np.concatenate(raws))
            kwargs = dict(metric.user_config.get("metric_func_kwargs") or {})
            raw = self._call_user(func, metric, "metric_func", (model_output, targets), kwargs)
            name = "metric_func"
        values = _as_values(raw, metric, name)
        return values, {"data_config": data_config.name if data_config else None, "function": name}

    def _plugin(self, metric: Metric) -> tuple[dict[str, float], dict[str, Any]]:
        evaluate = plugin_metrics().get(metric.type)
        if evaluate is None:
            raise OliveError(
                f"{metric.json_path}.type: metric type '{metric.type}' is no longer registered by any plugin; "
                "reinstall the plugin that provides it"
            )
        # A metric that compares with the input model (agreement, paired timing) declares reference_model.
        extra = {"reference_model": self.reference} if _declares(evaluate, "reference_model") else {}
        raw = self._call_user(
            evaluate,
            metric,
            f"plugin metric '{metric.type}'",
            (self.model, metric.json, self.evaluator.data_config_of(metric)),
            extra,
        )
        return _as_values(raw, metric, f"plugin metric '{metric.type}'"), {"plugin_metric": metric.type}

    @staticmethod
    def _call_user(func: Callable[..., Any], metric: Metric, what: str, args: tuple, kwargs: dict[str, Any]) -> Any:
        try:
            return func(*args, **kwargs)
        except OliveError:
            raise
        except Exception as exc:
            raise OliveError(
                f"metric '{metric.name}' ({metric.json_path}): {what} raised {type(exc).__name__}: {exc}"
            ) from exc


# ------------------------------------------------------------------------------------------------ helpers


def _size_on_disk(model: OliveModelHandler) -> int:
    size = getattr(model, "size_on_disk", None)
    if size is not None:
        return int(size)
    path = Path(str(model.model_path))
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def _file_identity(model: OliveModelHandler) -> tuple:
    path = Path(str(model.model_path))
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns, str(getattr(model, "inference_settings", None)))


def _default_predictions(output: Any) -> Any:
    import numpy as np

    output = np.asarray(output)
    if np.issubdtype(output.dtype, np.floating):
        if output.ndim >= 2 and output.shape[-1] > 1:
            return output.argmax(axis=-1)
        return np.rint(output)
    return output


def _declares(func: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _fit_kwargs(func: Callable[..., Any], available: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Pass the optional arguments the function declares (all of Olive's when it takes ``**kwargs``)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return given
    names = list(params)[1:]  # the first parameter receives the model
    takes_var = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in available.items() if k in names and k not in given}
    if takes_var:
        kwargs.update({k: available[k] for k in ("device", "execution_providers") if k not in given})
    return {**kwargs, **given}


def _as_values(raw: Any, metric: Metric, what: str) -> dict[str, float]:
    import numbers

    def number(value: Any, sub: str) -> float:
        if isinstance(value, Mapping) and "value" in value:
            value = value["value"]
        value = getattr(value, "value", value)
        try:
            return float(value)
        except (TypeError, ValueError):
            raise OliveError(
                f"metric '{metric.name}' ({metric.json_path}): {what} returned {value!r} for '{sub}'; return a number"
            ) from None

    if isinstance(raw, numbers.Real) or (hasattr(raw, "item") and getattr(raw, "ndim", 1) == 0):
        if len(metric.sub_types) != 1:
            raise OliveError(
                f"metric '{metric.name}' ({metric.json_path}): {what} returned one number but the metric has "
                f"sub types {', '.join(s.name for s in metric.sub_types)}; return a dict keyed by sub type"
            )
        return {metric.sub_types[0].name: number(raw, metric.sub_types[0].name)}
    if isinstance(raw, Mapping):
        values: dict[str, float] = {}
        for key, value in raw.items():
            # a MetricResult-style key "name-sub" is accepted too
            sub = key[len(metric.name) + 1 :] if key.startswith(f"{metric.name}-") else key
            values[sub] = number(value, sub)
        return values
    raise OliveError(
        f"metric '{metric.name}' ({metric.json_path}): {what} returned {type(raw).__name__}; return a number or a "
        "dict of sub type -> number"
    )
