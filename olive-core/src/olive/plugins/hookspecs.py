"""Olive's pluggy hook specifications (project name ``olive``; every hook is prefixed ``olive_``).

Hooks extend Olive in ways a pass cannot: extra metrics, extra search samplers, extra CLI commands, and
observers of a run. Hooks observe; only the workflow config orders passes.

A plugin is a module (or object) with functions named after these hooks, decorated with
:data:`olive.plugins.hookimpl`, offered through the ``olive.plugins`` entry-point group::

    # my_olive_plugin.py
    from olive.plugins import hookimpl

    @hookimpl
    def olive_pass_end(pass_key, pass_name, output_model, cached, error, duration_s):
        print(f"{pass_key} ({pass_name}) took {duration_s:.2f}s")

    # pyproject.toml
    [project.entry-points."olive.plugins"]
    my-olive-plugin = "my_olive_plugin"

An implementation may take any subset of a hook's parameters. At load time every implementation is
checked against these specs; one with an unknown hook name or an unknown parameter is reported against
its distribution (``olive plugins`` shows it as failed) and is not registered.

When the hooks fire during ``olive run``::

    olive_workflow_start
      for each pass run:  olive_pass_start -> (run or cache hit) -> olive_pass_end
      for each evaluation:                                            olive_evaluation_end
    olive_workflow_end   (also after a failure, with ``error`` set)

Every hook fires in the process that called ``olive.run``, once per pass run and evaluation recorded in the
footprint. With ``search_strategy.executor`` ``process`` or ``ray`` a search point's passes run in a worker;
their hooks fire when the point's result comes back, in the order a sequential search fires them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from collections.abc import Callable

    import click

hookspec = pluggy.HookspecMarker("olive")


@hookspec
def olive_register_metrics(register: Callable[[str, Any], None]) -> None:
    """Register metric types that workflows can name in ``evaluators.*.metrics[*].type``.

    Fires once per process (per plugin manager), the first time Olive looks up a metric type that is not
    built in (when a workflow's evaluator config is validated), and for ``olive plugins``, which lists what
    each plugin registers.

    :param register: call ``register(name, metric)`` once per metric type. ``metric`` is either

        - a function ``evaluate(model, metric, data)``: it receives the :class:`~olive.model.ONNXModelHandler`
          to measure, the metric's JSON config (a dict, with ``sub_types``) and the metric's ``DataConfig``
          (or None when the metric names no data), and returns ``{sub_type_name: value}``. Workflows name its
          sub types; each needs ``higher_is_better`` unless the function has a ``higher_is_better`` attribute
          (a bool, or ``{sub_type_name: bool}``). A function that declares a ``reference_model`` parameter also
          receives the model it is compared with (the workflow's input model, or the model that stands in for
          it), the same one ``agreement`` metrics use; or
        - an instance of a :class:`olive.evaluator.metrics.MetricType` subclass, named ``name``, which declares
          its sub types and directions (checked like a built-in type's) and measures in ``measure(run, metric)``.

        Names clash by one rule, the same for samplers: a built-in name (``latency``, ``accuracy``...) always
        means the built-in metric type, so installing a plugin never changes what an existing workflow
        measures; the plugin's registration of that name is left out with a warning naming the plugin (its
        other names work). Two plugins registering one name is an error naming both.
    """


@hookspec
def olive_register_samplers(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register search samplers that workflows can name in ``search_strategy.sampler``.

    Fires when Olive looks up sampler names: when a workflow's ``search_strategy`` is validated or a
    search starts.

    :param register: call ``register(name, factory)`` once per sampler. ``factory(search_space, options,
        seed)`` receives the :class:`~olive.search.search_space.JointSearchSpace`, the sampler's options
        from the workflow (a dict) and the seed (int or None), and returns an
        ``olive.search.samplers.Sampler``. A built-in name (``sequential``, ``random``, ``tpe``) always means
        the built-in sampler: the plugin's registration of it is left out with a warning, as for metric types.
        Two plugins registering one name is an error naming both.
    """


@hookspec
def olive_register_commands(cli: click.Group) -> None:
    """Add commands to the ``olive`` command line.

    Fires when the ``olive`` command needs its plugin commands: for ``olive --help`` and when a command
    name is not one of Olive's own.

    :param cli: the root :class:`click.Group`; call ``cli.add_command(command)``. Keep heavy imports
        inside the command's function so ``olive --help`` stays fast.
    """


@hookspec
def olive_workflow_start(workflow: Any) -> None:
    """Observe the start of a workflow run.

    Fires after the workflow config is validated, before the first pass runs or the input model is
    evaluated.

    :param workflow: the validated ``olive.workflows.config.WorkflowConfig``.
    """


@hookspec
def olive_workflow_end(workflow: Any, output: Any, error: BaseException | None) -> None:
    """Observe the end of a workflow run, successful or not.

    Fires once per :func:`olive.workflows.run` call that reached ``olive_workflow_start``, after the
    outputs are written (or after the failure).

    :param workflow: the validated ``olive.workflows.config.WorkflowConfig``.
    :param output: the ``olive.engine.output.WorkflowOutput``, or None when the run failed.
    :param error: the exception that ended the run, or None on success.
    """


@hookspec
def olive_pass_start(pass_key: str, pass_name: str, config: dict[str, Any], input_model: Any) -> None:
    """Observe a pass about to run on a model (also fires before a cache hit is reused).

    :param pass_key: the pass's key in the workflow's ``passes``.
    :param pass_name: the pass's registered name (its entry-point name).
    :param config: the resolved config for this run, as JSON values.
    :param input_model: the :class:`~olive.model.OliveModelHandler` the pass runs on.
    """


@hookspec
def olive_pass_end(
    pass_key: str,
    pass_name: str,
    config: dict[str, Any],
    input_model: Any,
    output_model: Any,
    cached: bool,
    error: BaseException | None,
    duration_s: float,
) -> None:
    """Observe a pass run that finished, failed or was served from the cache.

    Fires after every :func:`olive_pass_start`.

    :param pass_key: the pass's key in the workflow's ``passes``.
    :param pass_name: the pass's registered name (its entry-point name).
    :param config: the resolved config for this run, as JSON values.
    :param input_model: the :class:`~olive.model.OliveModelHandler` the pass ran on.
    :param output_model: the handler of the model it produced, or None when it failed.
    :param cached: True when the output came from the cache and the pass did not run.
    :param error: the exception the pass raised, or None.
    :param duration_s: wall time of the run (or of the cache lookup) in seconds.
    """


@hookspec
def olive_evaluation_end(model_id: str, model: Any, metrics: dict[str, Any]) -> None:
    """Observe the evaluation of a model (the input model or a candidate).

    Fires after the evaluator measured a model, before the search uses the result.

    :param model_id: the model's id in the footprint (a content hash).
    :param model: the :class:`~olive.model.OliveModelHandler` that was measured.
    :param metrics: the results keyed ``"metric-sub_type"`` (an ``olive.evaluator.evaluator.MetricResult``,
        whose values have ``value``, ``priority`` and ``higher_is_better``; ``.to_json()`` gives plain JSON).
    """
