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

from olive.config.data import named_data_configs
from olive.config.engine import ENGINE_KEYS, engine_settings
from olive.config.evaluator import EvaluatorConfig, EvaluatorSpec
from olive.config.input_model import InputModelConfig
from olive.config.passes import PassSpec as PassSpec  # re-exported: the classes' old home
from olive.config.passes import pass_entries
from olive.config.search import ExecutorConfig as ExecutorConfig  # re-exported: the classes' old home
from olive.config.search import SearchStrategyConfig
from olive.config.structure import collecting_without_effect, note_without_effect, relative_to, structure
from olive.config.systems import SystemConfig, system_config
from olive.config.workflow import WorkflowConfig
from olive.config_errors import (
    SCRIPT_KINDS,
    check_document,
    check_keys,
    config_error,
    expect,
    json_path,
    load_json,
    load_yaml,
    printable,
    quoted,
    type_name,
    user_path,
)
from olive.evaluator.metric import parse_metrics
from olive.exceptions import ModelLoadError, WorkflowConfigError, closest_match_hint
from olive.measure.sessions import check_inference_settings
from olive.model.handler import OliveModelHandler
from olive.model.types import handler_from_config
from olive.paths import UnusablePath, resolve_user_path
from olive.workflows.document import WorkflowDocument

logger = logging.getLogger(__name__)

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
    *ENGINE_KEYS,
    *_ENGINE_IGNORED,
)


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
    path_or_dict: str | Path | Mapping[str, Any] | WorkflowDocument | WorkflowConfig, **overrides: Any
) -> WorkflowConfig:
    """Read and validate a workflow. ``overrides`` replace top-level keys (e.g. ``output_dir``).

    A :class:`WorkflowDocument` is checked as its file would be, and its input model is the handler it carries.
    """
    if isinstance(path_or_dict, WorkflowConfig):
        return attrs.evolve(path_or_dict, **overrides) if overrides else path_or_dict
    model: OliveModelHandler | None = None
    if isinstance(path_or_dict, WorkflowDocument):
        model = path_or_dict.input_model.handler
        data, source, base_dir = path_or_dict.to_json(), None, Path.cwd()
    elif isinstance(path_or_dict, Mapping):
        data, source, base_dir = dict(path_or_dict), None, Path.cwd()
    else:
        data = read_config_file(path_or_dict)
        source = Path(path_or_dict).resolve()
        base_dir = source.parent
    given = {k: v for k, v in overrides.items() if v is not None}
    check_document(data)
    check_document(given)
    if "input_model" in given:
        model = None
    return _Parser(base_dir, source, model).parse({**data, **given})


class _Parser:
    def __init__(self, base_dir: Path, source: Path | None, model: OliveModelHandler | None = None):
        self.base_dir = base_dir
        self.source = source
        #: the handler of the input model when the caller built it already (from the same fields)
        self.model = model

    def path_value(self, value: Any, path: str, must_exist: bool = False, kind: str | None = None) -> Path:
        return user_path(
            expect(value, str, path, "a path string"), path, self.base_dir, must_exist=must_exist, kind=kind
        )

    def parse(self, data: dict[str, Any]) -> WorkflowConfig:
        check_keys(data, TOP_LEVEL_KEYS, "")
        with collecting_without_effect() as without_effect:
            workflow = self.workflow(data)
        _warn_without_effect(without_effect)
        return workflow

    def workflow(self, data: dict[str, Any]) -> WorkflowConfig:
        flat = self.flatten_engine(data)
        kwargs: dict[str, Any] = {"base_dir": self.base_dir, "source": self.source, "raw": data}
        kwargs.update(self.settings(flat))
        kwargs.update(self.model_and_systems(flat))
        kwargs.update(self.evaluation(flat))
        if "passes" not in flat:
            raise config_error("passes", 'missing; add e.g. {"quantize": {"type": "OnnxDynamicQuantization"}}')
        kwargs["passes"] = pass_entries(flat["passes"], kwargs["data_configs"], self.base_dir)
        if flat.get("search_strategy") not in (None, False):
            kwargs["search_strategy"] = structure(flat["search_strategy"], SearchStrategyConfig, "search_strategy")
        note_without_effect(flat, ("plot_pareto_frontier",))
        return WorkflowConfig(**kwargs)

    def flatten_engine(self, data: dict[str, Any]) -> dict[str, Any]:
        """The workflow with the keys older files nest under ``engine`` moved to the top level."""
        flat = {k: data[k] for k in data if k != "engine"}
        if "engine" in data:
            self.nested_engine(data["engine"], flat)
        note_without_effect(data, _ENGINE_IGNORED)
        return flat

    def nested_engine(self, value: Any, flat: dict[str, Any]) -> None:
        engine = expect(value, dict, "engine", "an object of engine settings")
        check_keys(engine, sorted(_ENGINE_SECTION_KEYS | set(_ENGINE_IGNORED)), "engine")
        logger.warning(
            "The 'engine' section is deprecated; move its keys (%s) to the top level of the workflow.",
            ", ".join(engine),
        )
        for key, item in engine.items():
            if key in flat:
                raise config_error(f"engine.{key}", f"also given at the top level; keep only the top-level '{key}'")
            if key not in _ENGINE_IGNORED:
                flat[key] = item
        note_without_effect(engine, _ENGINE_IGNORED, "engine")

    def settings(self, flat: dict[str, Any]) -> dict[str, Any]:
        """``workflow_id``, the engine keys (each section with its defaults) and the workflow's scripts."""
        result: dict[str, Any] = {}
        if "workflow_id" in flat:
            result["workflow_id"] = expect(flat["workflow_id"], str, "workflow_id", "a string")
        with relative_to(self.base_dir):
            result.update(engine_settings(flat))
        for name, kind in SCRIPT_KINDS.items():
            if name in flat:
                result[name] = self.path_value(flat[name], name, must_exist=True, kind=kind)
        return result

    def model_and_systems(self, flat: dict[str, Any]) -> dict[str, Any]:
        if "input_model" not in flat:
            raise config_error("input_model", 'missing; add {"type": "ONNXModel", "model_path": "model.onnx"}')
        result: dict[str, Any] = {"input_model": self.input_model(flat["input_model"])}
        self.input_model_settings(flat["input_model"])
        systems = result["systems"] = self.systems(flat.get("systems", {}))
        for key in ("host", "target"):
            if flat.get(key) is not None:
                result[key] = self.system_ref(flat[key], key, systems)
        return result

    def evaluation(self, flat: dict[str, Any]) -> dict[str, Any]:
        data_configs = named_data_configs(flat.get("data_configs", []), self.base_dir)
        evaluators = self.evaluators(flat.get("evaluators", {}), set(data_configs))
        result: dict[str, Any] = {"data_configs": data_configs, "evaluators": evaluators}
        if flat.get("evaluator") is not None:
            result["evaluator"] = self.evaluator_ref(flat["evaluator"], evaluators, set(data_configs))
        return result

    # ----------------------------------------------------------------------------------------------
    def input_model(self, value: Any) -> InputModelConfig:
        if self.model is not None:
            return InputModelConfig(self.model)
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
        return {name: system_config(name, spec, json_path("systems", name)) for name, spec in value.items()}

    def system_ref(self, value: Any, path: str, systems: dict[str, SystemConfig]) -> SystemConfig:
        if isinstance(value, dict):
            return system_config(path, value, path)
        expect(value, str, path, "the name of a system in 'systems' or a system object")
        if value not in systems:
            raise config_error(
                path,
                f"no system named '{value}'{closest_match_hint(value, systems)}; "
                f"defined systems: {', '.join(systems) or '(none)'}",
            )
        return systems[value]

    def evaluators(self, value: Any, data_names: set[str]) -> dict[str, EvaluatorConfig]:
        expect(value, dict, "evaluators", "an object mapping evaluator names to evaluators")
        return {
            name: self.evaluator(name, spec, json_path("evaluators", name), data_names) for name, spec in value.items()
        }

    def evaluator(self, name: str, spec: Any, path: str, data_names: set[str]) -> EvaluatorConfig:
        expect(spec, dict, path, 'an object like {"metrics": [...]}')
        with relative_to(self.base_dir):
            given = structure(spec, EvaluatorSpec, path)
        try:
            metrics = parse_metrics(given.metrics, f"{path}.metrics", data_names, self.base_dir)
        except WorkflowConfigError:
            raise
        except Exception as exc:  # an unexpected shape still gets one line with the path
            raise config_error(f"{path}.metrics", f"invalid metrics ({type(exc).__name__}: {exc})") from exc
        return EvaluatorConfig(name=name, metrics=metrics, user_script=given.user_script, script_dir=given.script_dir)

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


def _warn_without_effect(paths: list[str]) -> None:
    if not paths:
        return
    note = " (report.html always holds the Pareto chart)" if "plot_pareto_frontier" in paths else ""
    logger.warning(
        "these keys of Microsoft Olive's workflow schema are accepted but have no effect in this version: %s%s",
        ", ".join(dict.fromkeys(paths)),
        note,
    )
