"""Resolving a workflow's passes before anything runs: classes, configs, search spaces.

Every pass config is checked here, so a bad param fails the run before the first pass starts; all
problems are reported together, each naming the pass's key in the workflow.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from olive.config_errors import config_error, json_path, user_path
from olive.data.user_script import load_user_script
from olive.exceptions import (
    AmbiguousPassError,
    OliveError,
    PassConfigError,
    UnknownPassError,
    WorkflowConfigError,
    closest_match_hint,
)
from olive.model.types import get_model_type
from olive.passes.pass_config import ParamCategory
from olive.plugins.identity import PassIdentity, acting_as
from olive.plugins.install_hints import REPOSITORY_MODEL_TYPES, REPOSITORY_PASSES
from olive.plugins.registry import PassEntry, get_registry
from olive.search.search_parameter import Categorical, SpecialParamValue
from olive.search.search_space import SearchSpace

if TYPE_CHECKING:
    from olive.config import PassSpec, WorkflowConfig
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.olive_pass import BasePassConfig, Pass

logger = logging.getLogger(__name__)

_SPECIAL_STRINGS = ("DEFAULT_VALUE", "SEARCHABLE_VALUES", "OLIVE_IGNORED_PARAM_VALUE", "OLIVE_INVALID_PARAM_VALUE")


@attrs.define
class PassAlternative:
    """One configuration of a workflow pass, resolved against its class.

    ``identity`` is the registry entry's name, distribution and version: it goes into cache keys and the
    footprint, and the pass answers with it (:meth:`acting`) wherever the run calls it, in any process.
    """

    spec: PassSpec
    pass_class: type[Pass]
    identity: PassIdentity
    config: dict[str, Any]
    disable_search: bool
    search_space: SearchSpace
    user_script: Path | None

    _resolved: dict[Any, tuple] = attrs.field(factory=dict, init=False, repr=False)

    @property
    def run_version(self) -> str | None:
        """The version recorded with this pass's runs: its distribution's, else the class's ``_version``."""
        return self.identity.version or self.pass_class._version

    def acting(self) -> AbstractContextManager[None]:
        """Inside the block the pass class answers with this alternative's identity."""
        return acting_as(self.pass_class, self.identity)

    def generate_config(self, accelerator: AcceleratorSpec, point: dict[str, Any]) -> BasePassConfig:
        """The config of one search point.

        ``Pass.generate_config`` resolves the whole config (and checks every search value) on each call;
        a search calls this once per point, so the resolution is kept and only the point's values are
        checked.
        """
        with self.acting():
            resolved = self._resolved.get(accelerator)
            if resolved is None:
                triple = self.pass_class.get_config_params(accelerator, self.config, self.disable_search, self.spec.key)
                declared = self.pass_class.default_config(accelerator)
                resolved = self._resolved[accelerator] = (triple, declared)
            triple, declared = resolved
            return self.pass_class.config_for_point(
                accelerator, triple, point, pass_key=self.spec.key, declared=declared
            )

    def __getstate__(self) -> dict[str, Any]:
        # The resolved config class is made at run time and cannot be pickled; a worker resolves it again.
        return {field.name: getattr(self, field.name) for field in attrs.fields(type(self)) if field.init}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_resolved", {})


class AlternativesSpace:
    """The points of a pass given as a list of alternative configs: ``{"alternative": i, "params": point}``."""

    def __init__(self, alternatives: list[SearchSpace]):
        self.alternatives = alternatives

    def size(self) -> int:
        return sum(space.size() for space in self.alternatives)

    def get_point(self, index: int) -> dict[str, Any]:
        for i, space in enumerate(self.alternatives):
            if index < space.size():
                return {"alternative": i, "params": space.get_point(index)}
            index -= space.size()
        raise IndexError(index)


@attrs.define
class PassPlan:
    key: str
    alternatives: list[PassAlternative]

    @property
    def space(self) -> Any:
        if len(self.alternatives) == 1:
            return self.alternatives[0].search_space
        return AlternativesSpace([alt.search_space for alt in self.alternatives])

    def decode(self, point: dict[str, Any]) -> tuple[PassAlternative, dict[str, Any]]:
        if len(self.alternatives) == 1:
            return self.alternatives[0], point
        return self.alternatives[point["alternative"]], point["params"]

    def size(self) -> int:
        return sum(alt.search_space.size() for alt in self.alternatives)


def load_pass(spec: PassSpec) -> PassEntry:
    """The registry entry ``spec.type`` names, its class loaded."""
    try:
        return get_registry().load_pass(spec.type)
    except (UnknownPassError, AmbiguousPassError) as exc:
        raise WorkflowConfigError(f"{spec.json_path}.type: {exc}") from exc


def _preprocess(
    spec: PassSpec, pass_class: type[Pass], accelerator: AcceleratorSpec, base_dir: Path, user_script: Path | None
) -> dict[str, Any]:
    declared = pass_class.default_config(accelerator)
    params = dict(spec.params)
    module = None
    for name, value in params.items():
        param = declared.get(name)
        if param is None or not isinstance(value, str) or value in _SPECIAL_STRINGS:
            continue
        if param.category in (ParamCategory.PATH, ParamCategory.DATA):
            params[name] = str(user_path(value, f"{spec.params_path}.{name}", base_dir))
        elif param.category == ParamCategory.OBJECT and user_script is not None:
            if module is None:
                module = load_user_script(user_script, spec.script_dir, f"{spec.json_path}.user_script")
            if not hasattr(module, value):
                raise config_error(
                    f"{spec.params_path}.{name}",
                    f"'{value}' is not defined in user_script '{user_script}'; define it there or fix the name",
                )
            params[name] = getattr(module, value)
    return params


def _without_unknown_params(
    spec: PassSpec, pass_class: type[Pass], identity: PassIdentity, accelerator: AcceleratorSpec, params: dict
) -> dict[str, Any]:
    """A workflow's params for a pass less those the pass does not declare, each named in one warning with the
    closest param: Microsoft Olive's workflows ignore them (its pass configs drop unknown keys), so a workflow
    written for it runs here. Params an older version of the pass took (``_upgrade_config``) are kept."""
    declared = pass_class.default_config(accelerator)
    try:
        upgraded = pass_class._upgrade_config(dict(params))
    except PassConfigError:
        return params  # resolving the config reports it
    unknown = [key for key in upgraded if key not in declared and key in params]
    for key in unknown:
        logger.warning(
            "%s: %s has no param '%s'%s; ignored, as Microsoft Olive ignores it (`olive passes %s` lists its params)",
            json_path(spec.params_path, key),
            identity.name,
            key,
            closest_match_hint(key, declared),
            identity.name,
        )
    return {key: value for key, value in params.items() if key not in unknown}


def resolve_plan(workflow: WorkflowConfig, accelerator: AcceleratorSpec) -> list[PassPlan]:
    """Load every pass class and check every config; raise one error listing all problems."""
    plans: list[PassPlan] = []
    problems: list[OliveError] = []
    for key, specs in workflow.passes.items():
        alternatives: list[PassAlternative] = []
        for spec in specs:
            try:
                entry = load_pass(spec)
                pass_class, identity = entry.pass_class, entry.identity
                user_script = spec.user_script or workflow.user_script
                with acting_as(pass_class, identity):
                    config = _preprocess(spec, pass_class, accelerator, workflow.base_dir, user_script)
                    config = _without_unknown_params(spec, pass_class, identity, accelerator, config)
                    disable = spec.disable_search or not workflow.search_enabled
                    _, _, search = pass_class.get_config_params(accelerator, config, disable, key)
                space = SearchSpace(search, name=f"pass '{key}'")
                if space.size() == 0:
                    raise PassConfigError(_empty_space_message(search), owner=f"pass '{key}' ({spec.type})")
            except PassConfigError as exc:
                problems.append(PassConfigError(exc.reason, owner=f"{spec.json_path} ({spec.type})"))
                continue
            except OliveError as exc:
                problems.append(exc)
                continue
            alternatives.append(PassAlternative(spec, pass_class, identity, config, disable, space, user_script))
        plans.append(PassPlan(key, alternatives))
    if problems:
        if len(problems) == 1:
            raise problems[0]
        kind = WorkflowConfigError if all(isinstance(p, WorkflowConfigError) for p in problems) else PassConfigError
        if not all(isinstance(p, PassConfigError | WorkflowConfigError) for p in problems):
            kind = type(next(p for p in problems if not isinstance(p, PassConfigError | WorkflowConfigError)))
        lines = [" ".join(str(p).split()) for p in problems]
        raise kind(f"{len(problems)} problems: " + "; ".join(lines))
    check_input_model_type(workflow, plans)
    return plans


def check_input_model_type(workflow: WorkflowConfig, plans: list[PassPlan]) -> None:
    """The first pass takes the input model's type (``Pass.accepts_model_types``); and when the input model
    cannot be evaluated (it is not ONNX), the first pass has one config, since its output is what every
    metric compares with (see :class:`~olive.engine.engine.Engine`).

    Raises :class:`WorkflowConfigError` naming the pass and what to put first.
    """
    if not plans:
        return
    model_type = workflow.input_model.type
    first = plans[0]
    for alternative in first.alternatives:
        accepted = tuple(alternative.pass_class.accepts_model_types)
        spec = alternative.spec
        if model_type in accepted:
            # A pass may check the input model's content before anything runs (a converter: the architecture).
            check = getattr(alternative.pass_class, "check_input_model", None)
            if callable(check):
                check(workflow.input_model.create_handler(), spec.json_path)
            continue
        raise config_error(
            f"{spec.json_path}.type",
            f"{alternative.identity.name} takes {' or '.join(accepted)} models, but the input model is a "
            f"{model_type}; {_what_to_put_first(model_type, first.key)}",
        )
    if workflow.evaluator is not None and not get_model_type(model_type).evaluable and first.size() > 1:
        raise config_error(
            json_path("passes", first.key),
            f"searches {first.size()} configs, but with a {model_type} input model every metric compares with the "
            "model this first pass produces (the input model is not ONNX and cannot be evaluated itself), which "
            "must be one model: give each of its searched params one value (and no list of alternatives); the "
            "passes after it can be searched",
        )


def _what_to_put_first(model_type: str, first_key: str) -> str:
    if model_type == "ONNXModel":
        return f"the model is ONNX already: remove pass '{first_key}' or start with a pass that takes ONNX models"
    offered = REPOSITORY_MODEL_TYPES.get(model_type)
    if offered and get_model_type(model_type).evaluable:
        # Olive runs such a model as it is (an OpenVINO IR): what comes first works on it, nothing converts it.
        return f"start with a pass that takes {model_type} models (those of {offered[0]})"
    converters = REPOSITORY_PASSES.get(offered[0], ()) if offered else ()
    if converters:
        example = f'e.g. "convert": {{"type": "{converters[0]}"}} from {offered[0]}'
        return f"put a pass that converts {model_type} models to ONNX first ({example})"
    return f"put a pass that converts {model_type} models to ONNX first"


def _empty_space_message(search: dict[str, Any]) -> str:
    stuck = [
        name
        for name, param in search.items()
        if isinstance(param, Categorical) and all(v == SpecialParamValue.INVALID for v in param.get_support())
    ]
    which = (
        f"param(s) {', '.join(stuck)} have no valid value for the values given to the others"
        if stuck
        else ("every combination of the searched values is invalid")
    )
    return (
        f"its search space has no valid point: {which}; "
        "change the values you pinned or give those params explicit values"
    )
