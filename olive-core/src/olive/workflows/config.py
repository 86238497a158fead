"""Reading and validating a workflow config (JSON or YAML).

Every error is a :class:`~olive.exceptions.WorkflowConfigError` whose message starts with the JSON path
of the offending value (``passes.quant.type``, ``search_strategy.sampler``) and says how to fix it.
Relative paths resolve against the config file's folder (the current folder for a dict).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from olive.cache.location import default_cache_dir
from olive.cache.remote import REMOTE_KEY, RemoteCacheConfig, parse_remote_cache
from olive.cache.size import SizeLimit, workflow_limit
from olive.config_errors import (
    check_document,
    check_keys,
    choice,
    config_error,
    expect,
    json_path,
    load_json,
    load_yaml,
    number,
    printable,
    quoted,
    type_name,
    user_path,
    whole_number,
)
from olive.data.config import DataConfig
from olive.evaluator.metric import Metric, parse_metrics
from olive.exceptions import ModelLoadError, WorkflowConfigError, closest_match_hint
from olive.hardware.constants import PROVIDER_DEVICE
from olive.measure.sessions import check_inference_settings
from olive.model.handler import OliveModelHandler
from olive.model.types import handler_from_config
from olive.paths import UnusablePath, resolve_user_path

logger = logging.getLogger(__name__)

# key -> (type, how an error names it, default)
ENGINE_KEYS: dict[str, tuple[type, str, Any]] = {
    # None: the per-user cache (olive.cache.location), shared by every workflow that names none.
    "cache_dir": (str, "a string", None),
    # None: OLIVE_CACHE_MAX_SIZE, else the default (olive.cache.size).
    "cache_max_size": ((str, int), 'a size such as "2GB", or "unlimited"', None),
    "output_dir": (str, "a string", "output"),
    "evaluate_input_model": (bool, "true or false", True),
    "clean_cache": (bool, "true or false", False),
    "clean_evaluation_cache": (bool, "true or false", False),
    "log_severity_level": (int, "a whole number from 0 to 4", 1),
    "plot_pareto_frontier": (bool, "true or false", False),
    "no_artifacts": (bool, "true or false", False),
}
# Keys older files nest under "engine" besides the engine keys.
_ENGINE_SECTION_KEYS = {*ENGINE_KEYS, "search_strategy", "evaluator", "host", "target", "workflow_id"}
# Microsoft Olive's engine keys that have no effect here: accepted under "engine" and at the top level (where
# the deprecation note tells users to move them), and ignored with a note.
_ENGINE_IGNORED = ("log_to_file", "ort_log_severity_level", "ort_py_log_severity_level", "output_name")
TOP_LEVEL_KEYS = (
    "workflow_id",
    "input_model",
    "systems",
    "data_configs",
    "evaluators",
    "passes",
    "search_strategy",
    "evaluator",
    "host",
    "target",
    "engine",
    "user_script",
    "script_dir",
    REMOTE_KEY,
    *ENGINE_KEYS,
    *_ENGINE_IGNORED,
)
PASS_RESERVED_KEYS = ("type", "config", "user_script", "script_dir", "disable_search")
# Microsoft Olive's names of the evaluator that runs ONNX models with onnxruntime (registered as
# "OnnxEvaluator" and by the framework name "ONNX"; "OliveEvaluator" is their base class), compared without case.
ACCEPTED_EVALUATOR_NAMES = ("OnnxEvaluator", "OliveEvaluator")
EVALUATOR_TYPES = frozenset({"onnxevaluator", "oliveevaluator", "onnx"})
# Microsoft Olive's other evaluators: what each evaluates.
OLIVE_ONLY_EVALUATORS = {
    "pytorchevaluator": "PyTorch models",
    "pytorch": "PyTorch models",
    "openvinoevaluator": "OpenVINO models",
    "openvino": "OpenVINO models",
    "qnnevaluator": "Qualcomm QNN models",
    "qnn": "Qualcomm QNN models",
    "lmevaluator": "language-model benchmarks (lm-eval)",
    "mtebevaluator": "sentence-embedding benchmarks (MTEB)",
}
# Keys of Microsoft Olive's schema that are accepted and have no effect here (one warning names those a
# workflow uses): JSON path suffix -> what happens instead.
_SEARCH_IGNORED = ("output_model_num", "include_pass_params")
_METRIC_IGNORED = ("backend",)
_USER_CONFIG_IGNORED = ("shared_kv_buffer",)
SAMPLERS = ("sequential", "random", "tpe")
# sampler_config keys the built-in samplers read: a type and its words, or the (minimum, maximum) of a whole
# number (plugin samplers check their own).
SAMPLER_OPTIONS: dict[str, dict[str, tuple[type, str] | tuple[int, int]]] = {
    "sequential": {},
    "random": {},
    "tpe": {
        "n_startup_trials": (0, 10_000),
        "multivariate": (bool, "true or false"),
        "group": (bool, "true or false"),
        # TPE is asked again this many times in a row for a point it has not proposed before.
        "max_repeats": (1, 1_000),
    },
}
# Seeds go to numpy and optuna, which take 32-bit unsigned seeds.
SEED_MAX = 2**32 - 1
# Workers and trials in flight: beyond these a machine runs out of processes before the search does.
MAX_WORKERS = 1024
MAX_PENDING = 100_000
EXECUTION_ORDERS = ("joint", "pass-by-pass")
EXECUTOR_TYPES = ("sequential", "process", "ray")
START_METHODS = ("fork", "forkserver", "spawn")
_OLD_ALGORITHMS = {"exhaustive": "sequential", "random": "random", "tpe": "tpe"}
SEARCH_KEYS = (
    "execution_order",
    "sampler",
    "sampler_config",
    "max_samples",
    "seed",
    "stop_when_goals_met",
    "max_iter",
    "max_time",
    "executor",
    "search_algorithm",
    "search_algorithm_config",
    "output_model_num",
    "include_pass_params",
)


# --------------------------------------------------------------------------------------------------
# Parsed pieces
# --------------------------------------------------------------------------------------------------
@attrs.frozen
class InputModelConfig:
    """The workflow's input model: the handler its model type built from the fields (see
    :mod:`olive.model.types`), checked and with absolute paths."""

    handler: OliveModelHandler = attrs.field(eq=False)

    @property
    def type(self) -> str:
        return self.handler.model_type

    @property
    def config(self) -> dict[str, Any]:
        return self.handler.to_json()["config"]

    def create_handler(self) -> OliveModelHandler:
        return self.handler

    def to_json(self) -> dict[str, Any]:
        return self.handler.to_json()


@attrs.frozen
class AcceleratorConfig:
    """One accelerator of a system: a device and the execution providers to run on it.

    Each provider is a target the workflow's candidates are evaluated on (several: the search covers them).
    ``provider_options`` maps a provider to its options, given in the workflow as ``[name, {options}]``; an
    option's value may be a search parameter (``{"olive_parameter_type": "SearchParameter", "type":
    "Categorical", "support": [...]}``) or ``"SEARCHABLE_VALUES"``, which the search covers too.
    """

    device: str
    execution_providers: list[str]
    provider_options: dict[str, dict[str, Any]] = attrs.Factory(dict)
    json_path: str = "accelerator"


@attrs.frozen
class SystemConfig:
    name: str
    type: str
    accelerators: list[AcceleratorConfig]
    json_path: str = "systems"


@attrs.frozen
class EvaluatorConfig:
    name: str
    metrics: list[Metric]
    user_script: Path | None = None
    script_dir: Path | None = None


@attrs.frozen
class PassSpec:
    """One configuration of a pass as the workflow gives it (before the pass class is loaded)."""

    key: str
    type: str
    params: dict[str, Any]
    json_path: str
    params_path: str
    user_script: Path | None = None
    script_dir: Path | None = None
    disable_search: bool = False


@attrs.frozen
class ExecutorConfig:
    """Where search trials run (``search_strategy.executor``).

    - ``sequential`` (default): one after another in this process.
    - ``process``: ``max_workers`` local worker processes (default: one per CPU); ``start_method`` ``fork``
      (default where available: workers inherit in-process passes), ``forkserver`` or ``spawn``.
    - ``ray``: Ray tasks; ``address`` ``"auto"``, ``"ray://host:port"`` or null (start a local Ray);
      ``num_cpus_per_trial`` CPUs Ray reserves per trial. Needs ``olive-core[ray]``.
    - ``max_pending``: trials handed out before their results are in (default: twice the workers).
    """

    type: str = "sequential"
    max_workers: int | None = None
    address: str | None = None
    num_cpus_per_trial: float = 1
    max_pending: int | None = None
    start_method: str | None = None


@attrs.frozen
class SearchStrategyConfig:
    """How to search (present iff the workflow has ``search_strategy``).

    - ``execution_order``: ``joint`` searches the product of every pass's space, each point a full chain;
      ``pass-by-pass`` searches one pass at a time and feeds the best model to the next pass.
    - ``sampler``: ``sequential``, ``random``, ``tpe`` or a plugin sampler; ``sampler_config`` its options.
    - ``max_samples``: points run per search (the joint search, or each pass's search); 0 = all. Pruned and
      INVALID points do not count.
    - ``max_iter``: points run in the whole workflow; ``max_time``: seconds after which no new point starts.
    - ``stop_when_goals_met``: stop a search at the first model that meets every goal.
    - ``executor``: where trials run (:class:`ExecutorConfig`); results do not depend on it.
    """

    execution_order: str = "joint"
    sampler: str = "sequential"
    sampler_config: dict[str, Any] = attrs.Factory(dict)
    max_samples: int = 0
    seed: int | None = 0
    stop_when_goals_met: bool = False
    max_iter: int | None = None
    max_time: float | None = None
    executor: ExecutorConfig = attrs.Factory(ExecutorConfig)


@attrs.frozen
class WorkflowConfig:
    """A validated workflow. Paths are absolute; references (evaluator, data configs) exist."""

    input_model: InputModelConfig
    passes: dict[str, list[PassSpec]]
    base_dir: Path
    workflow_id: str = "default_workflow"
    systems: dict[str, SystemConfig] = attrs.Factory(dict)
    data_configs: dict[str, DataConfig] = attrs.Factory(dict)
    evaluators: dict[str, EvaluatorConfig] = attrs.Factory(dict)
    search_strategy: SearchStrategyConfig | None = None
    evaluator: EvaluatorConfig | None = None
    host: SystemConfig | None = None
    target: SystemConfig | None = None
    cache_dir: Path = Path(".olive-cache")
    cache_max_size: SizeLimit | None = None
    remote_cache: RemoteCacheConfig | None = None
    output_dir: Path = Path("output")
    evaluate_input_model: bool = True
    clean_cache: bool = False
    clean_evaluation_cache: bool = False
    log_severity_level: int = 1
    plot_pareto_frontier: bool = False
    no_artifacts: bool = False
    user_script: Path | None = None
    script_dir: Path | None = None
    source: Path | None = None
    raw: dict[str, Any] = attrs.Factory(dict)

    @property
    def search_enabled(self) -> bool:
        return self.search_strategy is not None


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------
def read_config_file(path: str | Path) -> dict[str, Any]:
    """Parse a ``.json``, ``.yaml`` or ``.yml`` file into a dict.

    A key given twice in one object is an error naming its JSON path (JSON and YAML parsers would silently keep
    the last one, dropping the first without a look).
    """
    try:
        path = resolve_user_path(path)
    except UnusablePath as exc:
        raise WorkflowConfigError(f"config file {quoted(path)} cannot be a path: {exc}") from None
    if path.is_dir():
        raise WorkflowConfigError(f"config file '{path}' is a folder; give the workflow file (JSON or YAML) in it")
    if not path.is_file():
        raise WorkflowConfigError(f"config file '{path}' does not exist; check the path")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise WorkflowConfigError(
            f"config file '{path}' is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise WorkflowConfigError(f"config file '{path}' cannot be read ({exc.strerror or exc})") from None
    if not text.strip():
        raise WorkflowConfigError(
            f"config file '{path}' is empty; write a workflow into it (`olive quickstart` writes an example)"
        )
    yaml_file = path.suffix.lower() in (".yaml", ".yml")
    try:
        data = load_yaml(text) if yaml_file else load_json(text)
    except Exception as exc:  # json.JSONDecodeError, yaml.YAMLError: both carry the position
        raise WorkflowConfigError(
            f"config file '{path}' is not valid {'YAML' if yaml_file else 'JSON'}: {printable(exc)}"
        ) from None
    if not isinstance(data, dict):
        raise WorkflowConfigError(f"config file '{path}': the top level must be an object, got {type_name(data)}")
    return data


def load_workflow_config(
    path_or_dict: str | Path | Mapping[str, Any] | WorkflowConfig, **overrides: Any
) -> WorkflowConfig:
    """Read and validate a workflow. ``overrides`` replace top-level keys (e.g. ``output_dir``)."""
    if isinstance(path_or_dict, WorkflowConfig):
        return attrs.evolve(path_or_dict, **overrides) if overrides else path_or_dict
    if isinstance(path_or_dict, Mapping):
        data, source, base_dir = dict(path_or_dict), None, Path.cwd()
    else:
        data = read_config_file(path_or_dict)
        source = Path(path_or_dict).resolve()
        base_dir = source.parent
    given = {k: v for k, v in overrides.items() if v is not None}
    check_document(data)
    check_document(given)
    return _Parser(base_dir, source).parse({**data, **given})


class _Parser:
    def __init__(self, base_dir: Path, source: Path | None):
        self.base_dir = base_dir
        self.source = source
        #: JSON paths of accepted keys that have no effect in this version
        self.ignored: list[str] = []

    def note_ignored_metric_keys(self, metric: dict[str, Any], path: str) -> None:
        self.ignored.extend(f"{path}.{key}" for key in _METRIC_IGNORED if metric.get(key) is not None)
        user_config = metric.get("user_config")
        if isinstance(user_config, dict):
            self.ignored.extend(
                f"{path}.user_config.{key}" for key in _USER_CONFIG_IGNORED if user_config.get(key) is not None
            )

    def path_value(self, value: Any, path: str, must_exist: bool = False, kind: str | None = None) -> Path:
        return user_path(
            expect(value, str, path, "a path string"), path, self.base_dir, must_exist=must_exist, kind=kind
        )

    def parse(self, data: dict[str, Any]) -> WorkflowConfig:
        check_keys(data, TOP_LEVEL_KEYS, "")
        flat = {k: data[k] for k in data if k != "engine"}
        if "engine" in data:
            engine = expect(data["engine"], dict, "engine", "an object of engine settings")
            check_keys(engine, sorted(_ENGINE_SECTION_KEYS | set(_ENGINE_IGNORED)), "engine")
            logger.warning(
                "The 'engine' section is deprecated; move its keys (%s) to the top level of the workflow.",
                ", ".join(engine),
            )
            for key, value in engine.items():
                if key in flat:
                    raise config_error(f"engine.{key}", f"also given at the top level; keep only the top-level '{key}'")
                if key in _ENGINE_IGNORED:
                    self.ignored.append(f"engine.{key}")
                    continue
                flat[key] = value
        self.ignored.extend(key for key in _ENGINE_IGNORED if key in data)

        kwargs: dict[str, Any] = {"base_dir": self.base_dir, "source": self.source, "raw": data}
        if "workflow_id" in flat:
            kwargs["workflow_id"] = expect(flat["workflow_id"], str, "workflow_id", "a string")
        for key, (kind, words, default) in ENGINE_KEYS.items():
            if key not in flat:
                if key == "cache_dir":
                    kwargs[key] = default_cache_dir()
                elif key == "output_dir":
                    kwargs[key] = resolve_user_path(default, self.base_dir)
                continue
            value = expect(flat[key], kind, key, words)
            if key in ("cache_dir", "output_dir"):
                value = user_path(value, key, self.base_dir)
            elif key == "log_severity_level":
                value = whole_number(value, key, minimum=0, maximum=4)
            elif key == "cache_max_size":
                try:
                    value = workflow_limit(value, key)
                except ValueError as exc:
                    raise config_error(key, str(exc)) from None
            kwargs[key] = value
        kwargs["remote_cache"] = parse_remote_cache(flat.get(REMOTE_KEY))
        if "user_script" in flat:
            kwargs["user_script"] = self.path_value(flat["user_script"], "user_script", must_exist=True, kind="file")
        if "script_dir" in flat:
            kwargs["script_dir"] = self.path_value(flat["script_dir"], "script_dir", must_exist=True, kind="folder")

        if "input_model" not in flat:
            raise config_error("input_model", 'missing; add {"type": "ONNXModel", "model_path": "model.onnx"}')
        kwargs["input_model"] = self.input_model(flat["input_model"])
        self.input_model_settings(flat["input_model"])
        systems = self.systems(flat.get("systems", {}))
        kwargs["systems"] = systems
        for key in ("host", "target"):
            if key in flat and flat[key] is not None:
                kwargs[key] = self.system_ref(flat[key], key, systems)
        data_configs = self.data_configs(flat.get("data_configs", []))
        kwargs["data_configs"] = data_configs
        evaluators = self.evaluators(flat.get("evaluators", {}), set(data_configs))
        kwargs["evaluators"] = evaluators
        if "evaluator" in flat and flat["evaluator"] is not None:
            kwargs["evaluator"] = self.evaluator_ref(flat["evaluator"], evaluators, set(data_configs))
        if "passes" not in flat:
            raise config_error("passes", 'missing; add e.g. {"quantize": {"type": "OnnxDynamicQuantization"}}')
        kwargs["passes"] = self.passes(flat["passes"], data_configs)
        if flat.get("search_strategy") not in (None, False):
            kwargs["search_strategy"] = self.search_strategy(flat["search_strategy"])
        if flat.get("plot_pareto_frontier"):
            self.ignored.append("plot_pareto_frontier")
        workflow = WorkflowConfig(**kwargs)
        if self.ignored:
            note = " (report.html always holds the Pareto chart)" if "plot_pareto_frontier" in self.ignored else ""
            logger.warning(
                "these keys of Microsoft Olive's workflow schema are accepted but have no effect in this version: %s%s",
                ", ".join(dict.fromkeys(self.ignored)),
                note,
            )
        return workflow

    # ----------------------------------------------------------------------------------------------
    def input_model(self, value: Any) -> InputModelConfig:
        # The type names a handler class in the olive.models entry-point group; the class checks its own fields.
        return InputModelConfig(handler_from_config(value, "input_model", self.base_dir))

    @staticmethod
    def input_model_settings(value: dict[str, Any]) -> None:
        """The input model's ``inference_settings`` are checked as a session would take them (no onnxruntime)."""
        nested = value.get("config") if isinstance(value.get("config"), dict) else {}
        for where, fields in (("input_model", value), ("input_model.config", nested)):
            settings = fields.get("inference_settings")
            if settings is not None:
                try:
                    check_inference_settings(settings, f"{where}.inference_settings")
                except ModelLoadError as exc:
                    raise WorkflowConfigError(exc.reason, owner=exc.owner) from None

    def systems(self, value: Any) -> dict[str, SystemConfig]:
        expect(value, dict, "systems", "an object mapping system names to systems")
        return {name: self.system(name, spec, json_path("systems", name)) for name, spec in value.items()}

    def system(self, name: str, spec: Any, path: str) -> SystemConfig:
        expect(spec, dict, path, 'an object like {"type": "LocalSystem", "accelerators": [...]}')
        check_keys(spec, ("type", "config", "accelerators"), path)
        kind = expect(spec.get("type", "LocalSystem"), str, f"{path}.type", "a string")
        if kind != "LocalSystem":
            raise config_error(
                f"{path}.type",
                f"unknown system type '{kind}'{closest_match_hint(kind, ['LocalSystem'])}; "
                "this version of Olive runs on 'LocalSystem'",
            )
        body = dict(spec)
        if "config" in spec:
            nested = expect(spec["config"], dict, f"{path}.config", "an object")
            check_keys(nested, ("accelerators",), f"{path}.config")
            body.update(nested)
            path_acc = f"{path}.config.accelerators"
        else:
            path_acc = f"{path}.accelerators"
        accelerators = []
        raw = expect(body.get("accelerators", [{"device": "cpu"}]), list, path_acc, "a list of accelerators")
        if not raw:
            raise config_error(
                path_acc, 'empty; add {"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}'
            )
        for i, acc in enumerate(raw):
            accelerators.append(self.accelerator(acc, json_path(path_acc, i)))
        return SystemConfig(name=name, type=kind, accelerators=accelerators, json_path=path_acc)

    def accelerator(self, value: Any, path: str) -> AcceleratorConfig:
        expect(value, dict, path, 'an object like {"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}')
        check_keys(value, ("device", "execution_providers", "memory"), path)
        if value.get("memory") is not None:
            self.ignored.append(f"{path}.memory")
        eps = value.get("execution_providers")
        if eps is None:
            eps = ["CPUExecutionProvider"]
        expect(eps, list, f"{path}.execution_providers", "a list of execution provider names")
        if not eps:
            raise config_error(f"{path}.execution_providers", 'empty; add e.g. "CPUExecutionProvider"')
        names: list[str] = []
        options: dict[str, dict[str, Any]] = {}
        for i, ep in enumerate(eps):
            where = f"{path}.execution_providers[{i}]"
            if isinstance(ep, list) and len(ep) == 2 and isinstance(ep[0], str):
                ep, given = ep
                options[ep] = dict(expect(given, dict, f"{where}[1]", "an object of provider options"))
            expect(ep, str, where, "an execution provider name, or [name, {options}]")
            if ep in names:
                raise config_error(where, f"'{ep}' is listed twice; list each provider once")
            names.append(ep)
        device = value.get("device") or PROVIDER_DEVICE.get(names[0], "gpu")
        device = choice(
            str(device).lower() if isinstance(device, str) else device, ("cpu", "gpu", "npu"), f"{path}.device"
        )
        return AcceleratorConfig(device=device, execution_providers=names, provider_options=options, json_path=path)

    def system_ref(self, value: Any, path: str, systems: dict[str, SystemConfig]) -> SystemConfig:
        if isinstance(value, dict):
            return self.system(path, value, path)
        expect(value, str, path, "the name of a system in 'systems' or a system object")
        if value not in systems:
            raise config_error(
                path,
                f"no system named '{value}'{closest_match_hint(value, systems)}; "
                f"defined systems: {', '.join(systems) or '(none)'}",
            )
        return systems[value]

    def data_configs(self, value: Any) -> dict[str, Any]:
        if isinstance(value, dict):  # older files map names to configs
            items = [
                ({"name": name, **spec} if isinstance(spec, dict) else spec, f"data_configs.{name}")
                for name, spec in value.items()
            ]
        else:
            expect(value, list, "data_configs", "a list of data configs")
            items = [(spec, f"data_configs[{i}]") for i, spec in enumerate(value)]
        result: dict[str, Any] = {}
        for spec, path in items:
            expect(spec, dict, path, 'an object like {"name": "calib", "type": "NpzDataContainer", ...}')
            if "name" not in spec:
                raise config_error(f"{path}.name", "missing; every data config needs a name to refer to it by")
            expect(spec["name"], str, f"{path}.name", "a string")
            if spec["name"] in result:
                raise config_error(f"{path}.name", f"duplicate data config name '{spec['name']}'; names must be unique")
            try:
                config = DataConfig.from_json(spec, json_path=path, base_dir=self.base_dir)
            except WorkflowConfigError:
                raise
            except Exception as exc:  # a bug or an unexpected shape: still one line with the path
                raise config_error(path, f"invalid data config ({type(exc).__name__}: {exc})") from exc
            result[spec["name"]] = config
        return result

    def evaluators(self, value: Any, data_names: set[str]) -> dict[str, EvaluatorConfig]:
        expect(value, dict, "evaluators", "an object mapping evaluator names to evaluators")
        return {
            name: self.evaluator(name, spec, json_path("evaluators", name), data_names) for name, spec in value.items()
        }

    def evaluator(self, name: str, spec: Any, path: str, data_names: set[str]) -> EvaluatorConfig:
        expect(spec, dict, path, 'an object like {"metrics": [...]}')
        check_keys(spec, ("name", "type", "type_args", "metrics", "user_script", "script_dir"), path)
        kind = spec.get("type")
        if kind is not None:
            expect(kind, str, f"{path}.type", "an evaluator type name")
            if kind.lower() not in EVALUATOR_TYPES:
                known = OLIVE_ONLY_EVALUATORS.get(kind.lower())
                reason = (
                    f"{kind!r} is Microsoft Olive's evaluator for {known}, which no distribution here provides"
                    if known
                    else f"unknown evaluator type {kind!r}{closest_match_hint(kind, ACCEPTED_EVALUATOR_NAMES)}"
                )
                raise config_error(
                    f"{path}.type",
                    f"{reason}; use {' or '.join(repr(n) for n in ACCEPTED_EVALUATOR_NAMES)} (onnxruntime with "
                    "Olive's metrics) or leave it out",
                )
        if spec.get("type_args"):
            expect(spec["type_args"], dict, f"{path}.type_args", "an object")
            self.ignored.append(f"{path}.type_args")
        metrics_given = spec.get("metrics")
        for index, metric in enumerate(metrics_given if isinstance(metrics_given, list) else []):
            if isinstance(metric, dict):
                self.note_ignored_metric_keys(metric, f"{path}.metrics[{index}]")
        if "metrics" not in spec:
            raise config_error(
                f"{path}.metrics",
                'missing; add e.g. [{"name": "latency", "type": "latency", "sub_types": [{"name": "avg"}]}]',
            )
        metrics_raw = expect(spec["metrics"], list, f"{path}.metrics", "a list of metrics")
        if not metrics_raw:
            raise config_error(f"{path}.metrics", "empty; an evaluator needs at least one metric")
        for i, metric in enumerate(metrics_raw):
            expect(metric, dict, f"{path}.metrics[{i}]", "a metric object")
        try:
            metrics = parse_metrics(metrics_raw, f"{path}.metrics", data_names, self.base_dir)
        except WorkflowConfigError:
            raise
        except Exception as exc:  # an unexpected shape still gets one line with the path
            raise config_error(f"{path}.metrics", f"invalid metrics ({type(exc).__name__}: {exc})") from exc
        user_script = (
            self.path_value(spec["user_script"], f"{path}.user_script", True) if spec.get("user_script") else None
        )
        script_dir = self.path_value(spec["script_dir"], f"{path}.script_dir", True) if spec.get("script_dir") else None
        return EvaluatorConfig(name=name, metrics=metrics, user_script=user_script, script_dir=script_dir)

    def evaluator_ref(
        self, value: Any, evaluators: dict[str, EvaluatorConfig], data_names: set[str]
    ) -> EvaluatorConfig:
        if isinstance(value, dict):
            return self.evaluator("evaluator", value, "evaluator", data_names)
        expect(value, str, "evaluator", "the name of an evaluator in 'evaluators'")
        if value not in evaluators:
            raise config_error(
                "evaluator",
                f"no evaluator named '{value}'{closest_match_hint(value, evaluators)}; "
                f"defined evaluators: {', '.join(evaluators) or '(none)'}",
            )
        return evaluators[value]

    def passes(self, value: Any, data_configs: dict[str, Any]) -> dict[str, list[PassSpec]]:
        expect(value, dict, "passes", "an object mapping pass names to pass configs")
        if not value:
            raise config_error(
                "passes", 'empty; add at least one pass, e.g. {"quantize": {"type": "OnnxDynamicQuantization"}}'
            )
        result: dict[str, list[PassSpec]] = {}
        for key, spec in value.items():
            path = json_path("passes", key)
            if isinstance(spec, list):
                if not spec:
                    raise config_error(path, "empty list; give a pass config or a list of alternative configs")
                result[key] = [self.pass_spec(key, item, f"{path}[{i}]", data_configs) for i, item in enumerate(spec)]
            else:
                result[key] = [self.pass_spec(key, spec, path, data_configs)]
        return result

    def pass_spec(self, key: str, spec: Any, path: str, data_configs: dict[str, Any]) -> PassSpec:
        expect(spec, dict, path, 'an object like {"type": "PassName", ...params}')
        if "type" not in spec:
            raise config_error(f"{path}.type", "missing; name the pass (see `olive passes`)")
        kind = expect(spec["type"], str, f"{path}.type", "a pass name string")
        if not kind.strip():
            raise config_error(f"{path}.type", "empty; name the pass (see `olive passes`)")
        params = {k: v for k, v in spec.items() if k not in PASS_RESERVED_KEYS}
        params_path = path
        if "config" in spec and spec["config"] is not None:
            nested = expect(spec["config"], dict, f"{path}.config", "an object of pass params")
            for name in nested:
                if name in params:
                    raise config_error(f"{path}.config.{name}", f"also given directly under {path}; keep one")
            params.update(nested)
            params_path = f"{path}.config"
        for name in params:
            if not isinstance(name, str):
                raise config_error(params_path, f"param name {name!r} is not a string")
        if "data_config" in params and isinstance(params["data_config"], str):
            ref = params["data_config"]
            if ref in data_configs:
                params["data_config"] = data_configs[ref]
            elif ref.endswith(".npz"):
                params["data_config"] = str(
                    self.path_value(ref, f"{params_path}.data_config", must_exist=True, kind="file")
                )
            else:
                raise config_error(
                    f"{params_path}.data_config",
                    f"no data config named '{ref}'"
                    f"{closest_match_hint(ref, data_configs)}; defined: {', '.join(data_configs) or '(none)'}",
                )
        elif isinstance(params.get("data_config"), dict):
            params["data_config"] = DataConfig.from_json(
                {"name": f"{key}_data", **params["data_config"]},
                json_path=f"{params_path}.data_config",
                base_dir=self.base_dir,
            )
        disable = expect(spec.get("disable_search", False), bool, f"{path}.disable_search", "true or false")
        user_script = (
            self.path_value(spec["user_script"], f"{path}.user_script", True) if spec.get("user_script") else None
        )
        script_dir = self.path_value(spec["script_dir"], f"{path}.script_dir", True) if spec.get("script_dir") else None
        return PassSpec(
            key=key,
            type=kind.strip(),
            params=params,
            json_path=path,
            params_path=params_path,
            user_script=user_script,
            script_dir=script_dir,
            disable_search=disable,
        )

    def search_strategy(self, value: Any) -> SearchStrategyConfig:
        path = "search_strategy"
        if value is True:
            return SearchStrategyConfig()
        expect(value, dict, path, 'an object like {"execution_order": "joint", "sampler": "tpe"} (or false)')
        check_keys(value, SEARCH_KEYS, path)
        self.ignored.extend(f"{path}.{key}" for key in _SEARCH_IGNORED if value.get(key) is not None)
        kwargs: dict[str, Any] = {}
        if "execution_order" in value:
            kwargs["execution_order"] = choice(value["execution_order"], EXECUTION_ORDERS, f"{path}.execution_order")
        if "search_algorithm" in value or "search_algorithm_config" in value:
            logger.warning(
                "search_strategy.search_algorithm / search_algorithm_config are deprecated; "
                "use search_strategy.sampler (sequential | random | tpe) and max_samples."
            )
            if "sampler" in value:
                raise config_error(f"{path}.search_algorithm", "given together with 'sampler'; keep only 'sampler'")
            if "search_algorithm" in value:
                old = choice(value["search_algorithm"], tuple(_OLD_ALGORITHMS), f"{path}.search_algorithm")
                kwargs["sampler"] = _OLD_ALGORITHMS[old]
            old_cfg = expect(
                value.get("search_algorithm_config") or {}, dict, f"{path}.search_algorithm_config", "an object"
            )
            check_keys(old_cfg, ("num_samples", "seed"), f"{path}.search_algorithm_config")
            if "num_samples" in old_cfg:
                kwargs["max_samples"] = whole_number(
                    old_cfg["num_samples"], f"{path}.search_algorithm_config.num_samples", minimum=0
                )
            if old_cfg.get("seed") is not None:
                kwargs["seed"] = whole_number(
                    old_cfg["seed"], f"{path}.search_algorithm_config.seed", minimum=0, maximum=SEED_MAX
                )
        if "sampler" in value:
            # Plugin samplers are checked once the engine loads the sampler hooks.
            kwargs["sampler"] = expect(value["sampler"], str, f"{path}.sampler", f"one of {', '.join(SAMPLERS)}")
            if not kwargs["sampler"]:
                raise config_error(f"{path}.sampler", f"empty; use one of {', '.join(SAMPLERS)}")
        if "sampler_config" in value:
            kwargs["sampler_config"] = dict(
                expect(value["sampler_config"], dict, f"{path}.sampler_config", "an object")
            )
        if "max_samples" in value:
            kwargs["max_samples"] = whole_number(value["max_samples"], f"{path}.max_samples", minimum=0)
        if "seed" in value:
            seed = value["seed"]
            kwargs["seed"] = None if seed is None else whole_number(seed, f"{path}.seed", minimum=0, maximum=SEED_MAX)
        if "stop_when_goals_met" in value:
            kwargs["stop_when_goals_met"] = expect(
                value["stop_when_goals_met"], bool, f"{path}.stop_when_goals_met", "true or false"
            )
        if value.get("max_iter") is not None:
            kwargs["max_iter"] = whole_number(value["max_iter"], f"{path}.max_iter", minimum=0)
        if value.get("max_time") is not None:
            kwargs["max_time"] = number(value["max_time"], f"{path}.max_time", minimum=0)
        if value.get("executor") is not None:
            kwargs["executor"] = self.executor(value["executor"], f"{path}.executor")
        sampler = kwargs.get("sampler", "sequential")
        if sampler in SAMPLER_OPTIONS:
            self.sampler_options(kwargs.get("sampler_config", {}), sampler, f"{path}.sampler_config")
        return SearchStrategyConfig(**kwargs)

    @staticmethod
    def sampler_options(options: dict[str, Any], sampler: str, path: str) -> None:
        allowed = SAMPLER_OPTIONS[sampler]
        check_keys(options, allowed, path, what=f"option of the {sampler} sampler")
        for key, option in options.items():
            kind, words = allowed[key]
            if isinstance(kind, int):
                whole_number(option, json_path(path, key), minimum=kind, maximum=words)
            else:
                expect(option, kind, json_path(path, key), words)

    def executor(self, value: Any, path: str) -> ExecutorConfig:
        if isinstance(value, str):
            value = {"type": value}
        expect(value, dict, path, 'an object like {"type": "process", "max_workers": 2}')
        kind = choice(value.get("type", "sequential"), EXECUTOR_TYPES, f"{path}.type")
        allowed = {"sequential": ("type",), "process": ("type", "max_workers", "max_pending", "start_method")}
        allowed["ray"] = ("type", "address", "num_cpus_per_trial", "max_pending")
        check_keys(value, allowed[kind], path)
        kwargs: dict[str, Any] = {"type": kind}
        for name, most in (("max_workers", MAX_WORKERS), ("max_pending", MAX_PENDING)):
            if value.get(name) is not None:
                kwargs[name] = whole_number(value[name], f"{path}.{name}", minimum=1, maximum=most)
        if value.get("start_method") is not None:
            kwargs["start_method"] = choice(value["start_method"], START_METHODS, f"{path}.start_method")
        if value.get("address") is not None:
            kwargs["address"] = expect(value["address"], str, f"{path}.address", '"auto", "ray://host:port" or null')
        if value.get("num_cpus_per_trial") is not None:
            kwargs["num_cpus_per_trial"] = number(
                value["num_cpus_per_trial"], f"{path}.num_cpus_per_trial", above=0, maximum=MAX_WORKERS
            )
        return ExecutorConfig(**kwargs)
