"""The Pass contract: the base class of every optimization pass."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassConfigError, PassParamError, SearchSpaceError, closest_match_hint
from olive.model.handler import OliveModelHandler
from olive.passes.params import (
    SEARCH,
    ParamProblem,
    check_search_values,
    check_value,
    format_problems,
    place_param,
    values_at_defaults,
)
from olive.passes.pass_config import (
    BasePassConfig,
    ParamCategory,
    PassConfigParam,
    PassParamDefault,
    make_config_class,
)
from olive.passes.progress import report_progress
from olive.passes.validators import apply_validators, read_validators
from olive.plugins.identity import identity_of
from olive.search.search_parameter import (
    Conditional,
    ConditionalDefault,
    SearchParameter,
    order_by_parents,
)

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec

logger = logging.getLogger(__name__)

__all__ = ["BasePassConfig", "ParamCategory", "Pass", "PassConfigParam", "PassParamDefault"]


class Pass(ABC):
    """Base class of an optimization pass. Writing one takes three steps.

    **1. Define a class** deriving from ``Pass``. **2. Declare its config** in ``_default_config``.
    **3. Implement** ``_run_for_config``, which writes the optimized model under ``output_model_path``
    and returns a handler for it. A complete pass module, ``my_passes/strip.py``::

        from olive.hardware import AcceleratorSpec
        from olive.model import ONNXModelHandler
        from olive.passes import Pass, PassConfigParam
        from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
        from olive.search.search_parameter import Boolean


        class StripDocStrings(Pass):
            \"\"\"Remove doc strings from every node (smaller files, same outputs).\"\"\"

            @classmethod
            def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
                return {
                    "keep_graph_doc": PassConfigParam(
                        type_=bool, default_value=False, search_defaults=Boolean(),
                        description="Keep the graph's own doc string.",
                    ),
                    **get_external_data_config(),
                }

            def _run_for_config(self, model: ONNXModelHandler, config, output_model_path: str):
                proto = model.load_model()
                for node in proto.graph.node:
                    node.doc_string = ""
                if not config.keep_graph_doc:
                    proto.graph.doc_string = ""
                return model_proto_to_olive_model(proto, output_model_path, config)

    and the entry point that makes the engine find it, in the distribution's ``pyproject.toml``::

        [project.entry-points."olive.passes"]
        StripDocStrings = "my_passes.strip:StripDocStrings"

    After ``pip install .`` the pass is listed by ``olive passes`` and a workflow uses it with
    ``"passes": {"strip": {"type": "StripDocStrings"}}``; no other step.

    Details of the contract:

    - ``_default_config`` may be a classmethod or a staticmethod taking the accelerator spec; it returns
      ``{name: PassConfigParam}``. Params with ``search_defaults`` are searched when the workflow has a
      ``search_strategy``; otherwise ``default_value`` applies.
    - ``config`` in ``_run_for_config`` is read-only; ``config.name`` and ``config["name"]`` both work.
    - ``output_model_path`` is a fresh path inside the cache; ONNX passes call
      ``resolve_onnx_path(output_model_path)`` (or ``model_proto_to_olive_model``) to get ``<dir>/model.onnx``.
    - Optional: ``is_accelerator_agnostic(accelerator_spec) -> bool`` (default True; False puts the
      accelerator in the cache key), ``_initialize(self)`` (runs once before the first ``_run_for_config``),
      and a class attribute ``_version`` that goes into cache keys (the distribution's version is used
      otherwise).
    - ``accepts_model_types`` (class attribute): the input model types (``model_type`` names, see
      :mod:`olive.model.types`) the pass takes; default ``("ONNXModel",)``. A pass that converts a model into
      ONNX declares what it converts, e.g. ``accepts_model_types = ("HfModel", "PyTorchModel")``. When a
      workflow is resolved, the first pass must accept the input model's type (a config error naming the pass
      and what to put first otherwise).
    - Optional, for a first pass: ``check_input_model(cls, model, json_path)`` (classmethod), called when the
      workflow is resolved with the input model's handler and the pass's JSON path; it raises
      ``WorkflowConfigError`` for a model it cannot take (a converter: an architecture it does not know).

    **Rejecting a config.** Types, required params and search values are checked for you. Values that type
    checks cannot judge (a block size the kernel does not take, two params that do not go together) are
    rejected in one place, ``_check_config``, by raising :class:`~olive.exceptions.PassParamError` with a
    reason that names the param(s), why, and the fix, and ``params`` listing them::

        @classmethod
        def _check_config(cls, config, accelerator_spec):
            if config.block_size < 16 or config.block_size & (config.block_size - 1):
                raise PassParamError(
                    f"param 'block_size' is {config.block_size}; use a power of two >= 16", params="block_size"
                )

    It runs when a workflow is resolved, on the fixed values with searched params at their defaults: a
    conflict among values the workflow fixed is a config error naming the pass key, before any work (one that
    involves a searched param waits for the points). It runs again on every search point's config, where
    the error prunes the point and its reason goes into the footprint. Values read from the ``config`` may be
    None or ``SpecialParamValue.IGNORED`` where a param does not apply.

    ``validate_config(cls, config, accelerator_spec) -> bool`` (Microsoft Olive's hook: False prunes a search
    point, without a reason) answers from ``_check_config`` unless a pass overrides it; passes written for
    Olive keep working, and so does Olive's ``_validators()`` (pydantic validators by name, run before
    ``_check_config``; see :mod:`olive.passes.validators`). ``_upgrade_config(cls, config) -> dict`` rewrites the
    params of workflows written for an older version of the pass (renamed params, old value spellings) before
    anything is checked; it raises ``PassParamError`` for one it cannot translate.
    """

    #: Optional version of the pass's behaviour; part of every cache key for its runs.
    _version: ClassVar[str | None] = None
    #: The input model types the pass takes (``model_type`` names); checked for the first pass of a workflow.
    accepts_model_types: ClassVar[tuple[str, ...]] = ("ONNXModel",)
    #: Whether the samples of the pass's ``data_config`` shape its output (calibration, sensitivity, a guard's
    #: choices). A data config such a pass and a metric both name is split between them
    #: (:mod:`olive.workflows.data_roles`); a pass that reads samples only as example inputs (a conversion)
    #: sets False and gets them whole.
    fits_on_data: ClassVar[bool] = True

    def __init__(
        self,
        accelerator_spec: AcceleratorSpec,
        config: BasePassConfig | Mapping[str, Any] | None = None,
        host_device: Any = None,
    ):
        if not isinstance(config, BasePassConfig):
            config = self.generate_config(accelerator_spec, config, disable_search=True)
        self.accelerator_spec = accelerator_spec
        self.config = config
        self.host_device = host_device
        self._initialized = False

    # ----------------------------------------------------------------------------------------------
    # What an author writes
    # ----------------------------------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        """Step 2: the pass's config params."""

    @abstractmethod
    def _run_for_config(
        self, model: OliveModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OliveModelHandler:
        """Step 3: optimize ``model`` with ``config``; write the result under ``output_model_path``."""

    @classmethod
    def validate_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> bool:
        """Return False to prune a search point this pass cannot run (Microsoft Olive's hook).

        The default is False exactly when :meth:`_check_config` rejects ``config``.
        """
        try:
            cls._check_config(config, accelerator_spec)
        except PassConfigError:
            return False
        return True

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        """True when the output does not depend on the accelerator (so one cached run serves all)."""
        return True

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        """Raise :class:`~olive.exceptions.PassParamError` when no run can use these values (see the class doc)."""

    @classmethod
    def _validators(cls) -> dict[str, Callable[..., Any]]:
        """Microsoft Olive's hook: pydantic validators of the config by name (see :mod:`olive.passes.validators`).

        Run on every config before :meth:`_check_config`; one that raises refuses the config as
        ``_check_config`` does. New passes write ``_check_config`` instead.
        """
        return {}

    @classmethod
    def _validated_config(cls, config_class: type[BasePassConfig], values: dict[str, Any]) -> BasePassConfig:
        """The config of ``values`` once the pass's :meth:`_validators` have passed (and rewritten) them."""
        hook = cls._validators()
        if not hook:
            return config_class(**values)
        return apply_validators(read_validators(cls, hook), config_class, values, lambda v: config_class(**v))

    @classmethod
    def _upgrade_config(cls, config: dict[str, Any]) -> dict[str, Any]:
        """The workflow's params for this pass with those of older versions of the pass rewritten."""
        return config

    def _initialize(self) -> None:
        """Runs once, before the first ``_run_for_config``; override for expensive setup."""

    def report_progress(self, done: int, total: int | None = None, what: str = "") -> None:
        """From ``_run_for_config``'s loop: ``done`` of ``total`` units of ``what`` are finished. ``olive run``'s
        progress bar shows it as a line under the search's bar while the pass runs (in the engine's process or a
        ``process`` executor's worker); where no bar is shown it does nothing."""
        report_progress(done, total, what, owner=self.pass_name())

    # ----------------------------------------------------------------------------------------------
    # What the engine and tools call
    # ----------------------------------------------------------------------------------------------
    @classmethod
    def pass_name(cls) -> str:
        """The name the pass is registered under (its entry-point name), else its class name.

        The identity comes from where the class is used, not from the class: the run that calls the pass
        (the engine acts under its registry entry's identity), else the process-wide registry's entry for it
        (see :mod:`olive.plugins.identity`). A subclass of a registered pass is a different pass.
        """
        return identity_of(cls).name

    @classmethod
    def distribution(cls) -> str | None:
        """The distribution that offers this pass (``"local"`` for an in-process registration; None when none does)."""
        return identity_of(cls).distribution

    @classmethod
    def distribution_version(cls) -> str | None:
        """The version of :meth:`distribution`, if any."""
        return identity_of(cls).version

    @classmethod
    def default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        """The declared params, checked: a dict of ``PassConfigParam`` whose parents exist and do not cycle."""
        declared = cls._default_config(accelerator_spec)
        name = cls.pass_name()
        if not isinstance(declared, Mapping):
            raise PassConfigError(
                f"{name}._default_config must return a dict of PassConfigParam, got {type(declared).__name__}"
            )
        for key, param in declared.items():
            if not isinstance(param, PassConfigParam):
                raise PassConfigError(
                    f"{name}._default_config: '{key}' must be a PassConfigParam, got {type(param).__name__}"
                )
        order_by_parents({key: param.parents() for key, param in declared.items()}, owner=name)
        return dict(declared)

    @classmethod
    def get_config_params(
        cls,
        accelerator_spec: AcceleratorSpec,
        config: Mapping[str, Any] | None = None,
        disable_search: bool = False,
        pass_key: str | None = None,
    ) -> tuple[type[BasePassConfig], dict[str, Any], dict[str, SearchParameter]]:
        """Resolve a workflow's config for this pass.

        Returns ``(config_class, fixed_values, search_params)``: the frozen config class, the values that do
        not vary, and the search parameters (empty with ``disable_search``). Raises one
        :class:`PassConfigError` listing every problem, each naming ``pass_key`` (the pass's key in the
        workflow), the param and the fix.
        """
        owner = cls.config_owner(pass_key)
        try:
            declared = cls.default_config(accelerator_spec)
        except SearchSpaceError as exc:
            raise PassConfigError(exc.reason, owner=owner) from exc
        try:
            given = cls._upgrade_config(dict(config or {}))
        except PassConfigError as exc:
            raise _owned(exc, owner) from exc
        problems = [
            f"unknown param '{key}'{closest_match_hint(key, declared)}; valid params: {', '.join(declared) or '(none)'}"
            for key in given
            if key not in declared
        ]
        fixed: dict[str, Any] = {}
        search: dict[str, SearchParameter] = {}
        for name, param in declared.items():
            try:
                kind, value = place_param(name, param, given, disable_search)
            except ParamProblem as exc:
                problems.append(str(exc))
                continue
            (search if kind == SEARCH else fixed)[name] = value
        if problems:
            raise PassConfigError(format_problems(problems), owner=owner)
        fixed, search = cls._checked_values(owner, declared, fixed, search, disable_search)
        config_class = make_config_class(cls.pass_name(), tuple(declared))
        # A conflict among fixed values fails here, loudly; one that involves a searched param is left to the
        # search points (config_for_point), where it prunes only the points that have it.
        order = order_by_parents({n: p.parents() for n, p in declared.items()}, owner=owner)
        try:
            config = cls._validated_config(config_class, values_at_defaults(declared, fixed, order))
            cls._check_config(config, accelerator_spec)
        except PassParamError as exc:
            if not set(exc.params) & set(search):
                raise _owned(exc, owner) from exc
        except PassConfigError as exc:
            raise _owned(exc, owner) from exc
        return config_class, fixed, search

    @classmethod
    def _checked_values(
        cls,
        owner: str,
        declared: dict[str, PassConfigParam],
        fixed: dict[str, Any],
        search: dict[str, SearchParameter],
        disable_search: bool,
    ) -> tuple[dict[str, Any], dict[str, SearchParameter]]:
        problems: list[str] = []

        def check_fixed(names: list[str]) -> None:
            for name in names:
                try:
                    fixed[name] = check_value(owner, name, fixed[name], declared[name], disable_search)
                except PassConfigError as exc:
                    problems.append(exc.reason)

        # Check plain values before conditional defaults look them up, then check what those resolved to.
        plain = [name for name, value in fixed.items() if not isinstance(value, ConditionalDefault)]
        check_fixed(plain)
        if problems:
            raise PassConfigError(format_problems(problems), owner=owner)
        fixed, search = cls._resolve_dependencies(owner, declared, fixed, search)
        check_fixed([name for name in fixed if name not in plain])
        for name, param in search.items():
            problems.extend(check_search_values(name, param, declared[name]))
        if problems:
            raise PassConfigError(format_problems(problems), owner=owner)
        return fixed, search

    @classmethod
    def _resolve_dependencies(
        cls,
        owner: str,
        declared: dict[str, PassConfigParam],
        fixed: dict[str, Any],
        search: dict[str, SearchParameter],
    ) -> tuple[dict[str, Any], dict[str, SearchParameter]]:
        # Conditional defaults and conditional search values see their parents' final state: fixed parents
        # are substituted in; a conditional default with a searched parent becomes a Conditional.
        def parents(name: str) -> tuple[str, ...]:
            value = fixed.get(name, search.get(name))
            return value.parents if isinstance(value, Conditional | ConditionalDefault) else ()

        try:
            order = order_by_parents({name: parents(name) for name in declared}, owner=owner)
        except SearchSpaceError as exc:
            raise PassConfigError(exc.reason, owner=owner) from exc
        for name in order:
            if name in fixed and isinstance(fixed[name], ConditionalDefault):
                known = {p: fixed[p] for p in fixed[name].parents if p in fixed}
                conditioned = fixed[name].condition(known)
                if isinstance(conditioned, ConditionalDefault):
                    del fixed[name]
                    search[name] = conditioned.as_conditional()
                else:
                    fixed[name] = conditioned
            elif name in search and isinstance(search[name], Conditional):
                known = {p: fixed[p] for p in search[name].parents if p in fixed}
                search[name] = search[name].condition(known)
        return fixed, search

    @classmethod
    def generate_config(
        cls,
        accelerator_spec: AcceleratorSpec,
        config: Mapping[str, Any] | None = None,
        point: Mapping[str, Any] | None = None,
        disable_search: bool = False,
        pass_key: str | None = None,
    ) -> BasePassConfig:
        """The read-only config for one run: fixed values plus ``point`` (a search point for this pass).

        Searched params missing from ``point`` take their ``default_value``.
        """
        resolved = cls.get_config_params(accelerator_spec, config, disable_search, pass_key)
        return cls.config_for_point(accelerator_spec, resolved, point, pass_key=pass_key)

    @classmethod
    def config_for_point(
        cls,
        accelerator_spec: AcceleratorSpec,
        resolved: tuple[type[BasePassConfig], Mapping[str, Any], Mapping[str, SearchParameter]],
        point: Mapping[str, Any] | None = None,
        pass_key: str | None = None,
        declared: Mapping[str, PassConfigParam] | None = None,
    ) -> BasePassConfig:
        """The config for ``point`` from an already resolved ``(config_class, fixed, search)`` triple.

        ``resolved`` is what :meth:`get_config_params` returned; a search resolves it once and calls this
        for each point, checking only the point's values. Searched params missing from ``point`` take their
        ``default_value``. ``declared`` is :meth:`default_config` for ``accelerator_spec`` when the caller
        already has it.
        """
        config_class, fixed, search = resolved
        owner = cls.config_owner(pass_key)
        point = dict(point or {})
        for key in point:
            if key not in search and key not in fixed:
                raise PassConfigError(f"search point has unknown param '{key}'", owner=owner)
        if declared is None:
            declared = cls.default_config(accelerator_spec)
        values = dict(fixed)
        values.update({k: v for k, v in point.items() if k in search or k in fixed})
        missing = [name for name in search if name not in point]
        if missing:
            order = order_by_parents({n: declared[n].parents() if n in missing else () for n in declared}, owner=owner)
            for name in order:
                if name not in missing:
                    continue
                default = declared[name].default_value
                if isinstance(default, ConditionalDefault):
                    default = default.get_support_with_args([values.get(p) for p in default.parents])
                values[name] = default
        for name in search:
            values[name] = check_value(owner, name, values[name], declared[name], disable_search=True)
        try:
            config = cls._validated_config(config_class, values)
            cls._check_config(config, accelerator_spec)
        except PassConfigError as exc:
            raise _owned(exc, owner) from exc
        return config

    @classmethod
    def config_owner(cls, pass_key: str | None = None) -> str:
        """How errors about this pass's config name it: ``pass 'quant' (OnnxDynamicQuantization)``, or
        ``pass OnnxDynamicQuantization`` outside a workflow."""
        return f"pass '{pass_key}' ({cls.pass_name()})" if pass_key else f"pass {cls.pass_name()}"

    # ----------------------------------------------------------------------------------------------
    # Running
    # ----------------------------------------------------------------------------------------------
    def run(self, model: OliveModelHandler, output_model_path: str | Path) -> OliveModelHandler:
        """Run the pass on ``model``; returns the handler of the model it wrote."""
        if not self._initialized:
            self._initialize()
            self._initialized = True
        result = self._run_for_config(model, self.config, str(output_model_path))
        if not isinstance(result, OliveModelHandler):
            raise TypeError(
                f"{self.pass_name()}._run_for_config must return an OliveModelHandler (e.g. ONNXModelHandler), "
                f"got {type(result).__name__}"
            )
        return result


def _owned(exc: PassConfigError, owner: str) -> PassConfigError:
    """``exc`` again, told about ``owner`` (the pass, and its key in the workflow)."""
    if isinstance(exc, PassParamError):
        return PassParamError(exc.reason, params=exc.params, owner=owner)
    return PassConfigError(exc.reason, owner=owner)
