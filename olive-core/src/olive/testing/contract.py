"""``assert_pass_contract``: one call that checks a pass keeps the Pass contract.

A pass author's whole test can be::

    from olive.testing import assert_pass_contract
    from my_passes.strip import StripDocStrings

    def test_contract():
        assert_pass_contract(StripDocStrings, entry_point_name="StripDocStrings")
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from olive.exceptions import PassConfigError, PassParamError
from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR
from olive.model.handler import OliveModelHandler
from olive.passes.olive_pass import Pass
from olive.passes.pass_config import PassConfigParam
from olive.plugins.discovery import PASSES_GROUP, iter_entry_points
from olive.plugins.registry import get_registry
from olive.search.search_parameter import Categorical, Conditional, SpecialParamValue
from olive.search.search_space import SearchSpace
from olive.testing.runner import check_model_loads
from olive.testing.scratch import scratch_dir

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler

__all__ = ["ContractReport", "assert_pass_contract"]


class ContractReport(dict):
    """What :func:`assert_pass_contract` checked: ``points`` tried, ``ran``, ``rejected`` (by the pass's
    ``_check_config`` or ``validate_config``) and the ``outputs`` produced."""


def _fail(pass_class: type, message: str) -> NoReturn:
    raise AssertionError(f"{pass_class.__qualname__}: {message}")


def assert_pass_contract(
    pass_class: type[Pass],
    model: ONNXModelHandler | None = None,
    accelerator_spec: AcceleratorSpec | None = None,
    entry_point_name: str | None = None,
    max_points: int = 16,
    config: Mapping[str, Any] | None = None,
    output_dir: str | Path | None = None,
) -> ContractReport:
    """Check that ``pass_class`` keeps the Pass contract; raise ``AssertionError`` naming the problem.

    - ``_default_config`` returns :class:`PassConfigParam` values whose defaults fit their types and whose
      ``search_defaults`` are valid search parameters of values of that type;
    - every point of the pass's search space (the first ``max_points``), on top of ``config``, is either
      rejected (``_check_config`` raising ``PassParamError``, or ``validate_config``) or runs on ``model``
      (default: a tiny MLP) to an ``OliveModelHandler`` whose file loads in onnxruntime;
    - the class's registered name matches ``entry_point_name`` when one is given (or when the class came
      through the registry).
    """
    if not (isinstance(pass_class, type) and issubclass(pass_class, Pass)):
        raise AssertionError(f"{pass_class!r} is not a subclass of olive.passes.Pass")
    spec = accelerator_spec or DEFAULT_CPU_ACCELERATOR
    report = ContractReport(points=0, ran=0, rejected=0, outputs=[])

    # Identity: the name the engine will know it by.
    if entry_point_name is not None:
        registered = [identity.name for identity in get_registry().identities_of(pass_class)]
        if registered and entry_point_name not in registered:
            _fail(pass_class, f"registered as '{registered[0]}' but its entry point is named '{entry_point_name}'")
        if not registered:
            _check_entry_point(pass_class, entry_point_name)

    # Declared params.
    declared = pass_class._default_config(spec)
    if not isinstance(declared, Mapping):
        _fail(pass_class, f"_default_config must return a dict, got {type(declared).__name__}")
    for name, param in declared.items():
        if not isinstance(param, PassConfigParam):
            _fail(pass_class, f"_default_config['{name}'] is {type(param).__name__}, not a PassConfigParam")
        if param.search_defaults is not None and not isinstance(param.search_defaults, Categorical | Conditional):
            _fail(pass_class, f"search_defaults of '{name}' must be Categorical or Conditional")
    required = [n for n, p in declared.items() if p.required and n not in (config or {})]
    if required:
        _fail(pass_class, f"required params {required} need values: pass them in `config`")
    try:
        pass_class.default_config(spec)
        # Defaults must type-check when not searching, and search defaults must hold values of the type.
        pass_class.generate_config(spec, dict(config or {}), disable_search=True)
        _, _, search_params = pass_class.get_config_params(spec, dict(config or {}), disable_search=False)
    except PassConfigError as exc:
        _fail(pass_class, f"invalid config declaration: {exc}")

    if model is None:
        # The model factories import onnx and numpy; only a contract check without a model needs them.
        from olive.testing.models import mlp_model, save_model

        model = save_model(mlp_model(), scratch_dir("olive-contract-model-"))

    # Every point of the search space (or the one default point) runs or is rejected.
    space = SearchSpace(search_params, name=pass_class.pass_name()) if search_params else None
    points: list[dict[str, Any]] = []
    if space is None:
        points = [{}]
    else:
        for point in space.iterate():
            points.append(point)
            if len(points) >= max_points:
                break
    out_root = Path(output_dir) if output_dir else scratch_dir("olive-contract-")
    for index, point in enumerate(points):
        report["points"] += 1
        if any(isinstance(v, str) and v == SpecialParamValue.INVALID for v in point.values()):
            report["rejected"] += 1
            continue
        try:
            pass_config = pass_class.generate_config(spec, dict(config or {}), point=point)
        except PassParamError:
            # The pass's own check pruned this point, as a search would.
            report["rejected"] += 1
            continue
        except PassConfigError as exc:
            _fail(pass_class, f"search point {point} does not make a valid config: {exc}")
        if not pass_class.validate_config(pass_config, spec):
            report["rejected"] += 1
            continue
        output_path = out_root / f"point-{index}" / "output_model"
        try:
            result = pass_class(spec, pass_config).run(model, output_path)
        except AssertionError:
            raise
        except Exception as exc:
            raise AssertionError(
                f"{pass_class.__qualname__}: search point {point} passed validate_config but the run raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(result, OliveModelHandler):
            _fail(pass_class, f"_run_for_config returned {type(result).__name__}, not an OliveModelHandler")
        try:
            check_model_loads(result)
        except Exception as exc:
            _fail(pass_class, f"search point {point}: {exc}")
        report["ran"] += 1
        report["outputs"].append(result)
    if report["ran"] == 0:
        _fail(pass_class, f"the pass rejected all {report['points']} search points tried; none ran")
    return report


def _check_entry_point(pass_class: type, entry_point_name: str) -> None:
    # The registry does not offer the class: find the entry point that names it in installed metadata.
    target = f"{pass_class.__module__}:{pass_class.__qualname__}"
    found = [f for f in iter_entry_points(PASSES_GROUP) if f.value.replace(" ", "") == target]
    if not found:
        return  # not installed (yet); nothing to compare with
    names = sorted({f.name for f in found})
    if entry_point_name not in names:
        raise AssertionError(
            f"{pass_class.__qualname__}: expected entry point '{entry_point_name}' but installed metadata "
            f"names it {names}"
        )
