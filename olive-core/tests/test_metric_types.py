"""Metric types are registered objects: built in or from a plugin, one registry, one clash policy (the same as
for samplers), each type measured in one place."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from olive.evaluator.evaluator import OliveEvaluator
from olive.evaluator.metric import parse_metric, parse_metrics
from olive.evaluator.metrics import BUILTIN_METRIC_TYPES, MetricType, find_metric_type, metric_types
from olive.exceptions import PluginLoadError, WorkflowConfigError
from olive.plugins import hookimpl
from olive.plugins.manager import new_plugin_manager, use_plugin_manager
from olive.search.samplers import BUILTIN_SAMPLERS, RandomSampler, available_samplers
from olive.testing.models import mlp_model, save_model


def _manager(*plugins: object):
    pm = new_plugin_manager(entry_points=False)
    for index, plugin in enumerate(plugins):
        pm.register_checked(plugin, f"dist-{index}:plugin-{index}")
    return pm


def _node_count(model, metric, data):
    return {"nodes": float(len(model.load_model().graph.node))}


_node_count.higher_is_better = False


class NodeCount(MetricType):
    """A plugin's own metric type: fixed sub types, checked like a built-in type's."""

    name = "node_count"
    sub_types = {"nodes": False, "initializers": False}
    default_sub_type = "nodes"

    def measure(self, run, metric):
        graph = run.model.load_model().graph
        values = {"nodes": float(len(graph.node)), "initializers": float(len(graph.initializer))}
        return {sub.name: values[sub.name] for sub in metric.sub_types}, {"counted": run.model.model_path}


def test_each_builtin_type_is_parsed_and_measured_in_its_own_module() -> None:
    assert list(BUILTIN_METRIC_TYPES) == ["latency", "throughput", "accuracy", "agreement", "size_on_disk", "custom"]
    for name, kind in BUILTIN_METRIC_TYPES.items():
        assert kind.name == name
        assert type(kind).__module__ == f"olive.evaluator.metrics.{name}"
        assert type(kind).measure is not MetricType.measure, name


def test_a_builtin_name_resolves_without_asking_the_plugins() -> None:
    asked: list[str] = []

    class Counting:
        @hookimpl
        def olive_register_metrics(self, register):
            asked.append("metrics")
            register("node_count", _node_count)

    with use_plugin_manager(_manager(Counting())):
        parse_metric({"name": "l", "type": "latency"})
        assert asked == []
        parse_metric({"name": "n", "type": "node_count", "sub_types": ["nodes"]})
        parse_metric({"name": "n", "type": "node_count", "sub_types": ["nodes"]})
        assert asked == ["metrics"]  # once per plugin manager
        assert list(metric_types()) == [*BUILTIN_METRIC_TYPES, "node_count"]


def test_a_plugin_metric_named_like_a_builtin_one_is_left_out_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def not_latency(model, metric, data):
        return {"avg": -1.0}

    class Clashing:
        @hookimpl
        def olive_register_metrics(self, register):
            register("latency", not_latency)
            register("node_count", _node_count)

    model = save_model(mlp_model(), tmp_path / "m")
    with use_plugin_manager(_manager(Clashing())), caplog.at_level(logging.WARNING, logger="olive"):
        assert find_metric_type("node_count").evaluate is _node_count
        assert find_metric_type("latency") is BUILTIN_METRIC_TYPES["latency"]
        metrics = parse_metrics(
            [
                {"name": "l", "type": "latency", "sub_types": ["p50"], "warmup_num": 1, "repeat_test_num": 3},
                {"name": "n", "type": "node_count", "sub_types": ["nodes"]},
            ]
        )
        result = OliveEvaluator(metrics).evaluate(model)
        metric_types()
    # Olive's latency measured the model (the plugin's function would have returned -1).
    assert result["l-p50"].value > 0 and result["n-nodes"].value == 5.0
    warnings = [r.getMessage() for r in caplog.records if "built in" in r.getMessage()]
    assert warnings == [
        "plugin dist-0:plugin-0 registers metric type 'latency', which is built in; keeping the built-in one "
        "(rename it in the plugin to use it)"
    ]


def test_a_plugin_sampler_named_like_a_builtin_one_follows_the_same_policy(caplog: pytest.LogCaptureFixture) -> None:
    def not_random(space, options, seed):
        raise AssertionError("the built-in sampler must be used")

    class Clashing:
        @hookimpl
        def olive_register_samplers(self, register):
            register("random", not_random)
            register("reverse", not_random)

    with use_plugin_manager(_manager(Clashing())), caplog.at_level(logging.WARNING, logger="olive"):
        samplers = available_samplers()
        available_samplers()
    assert samplers["random"] is RandomSampler and samplers["reverse"] is not_random
    assert list(samplers) == [*BUILTIN_SAMPLERS, "reverse"]
    warnings = [r.getMessage() for r in caplog.records if "built in" in r.getMessage()]
    assert warnings == [
        "plugin dist-0:plugin-0 registers sampler 'random', which is built in; keeping the built-in one "
        "(rename it in the plugin to use it)"
    ]


def test_a_plugin_metric_type_object_declares_and_checks_its_sub_types(tmp_path: Path) -> None:
    class Plugin:
        @hookimpl
        def olive_register_metrics(self, register):
            register("node_count", NodeCount())

    model = save_model(mlp_model(), tmp_path / "m")
    with use_plugin_manager(_manager(Plugin())):
        with pytest.raises(
            WorkflowConfigError,
            match=r"^m\.sub_types\[0\]\.name: unknown node_count sub type 'node' \(did you mean 'nodes'\?\); "
            r"use one of nodes, initializers$",
        ):
            parse_metric({"name": "g", "type": "node_count", "sub_types": ["node"]}, "m")
        metric = parse_metric({"name": "g", "type": "node_count"}, "m")
        assert [(s.name, s.higher_is_better) for s in metric.sub_types] == [("nodes", False)]
        both = parse_metrics([{"name": "g", "type": "node_count", "sub_types": ["nodes", "initializers"]}])
        result = OliveEvaluator(both).evaluate(model)
    graph = model.load_model().graph
    assert result["g-nodes"].value == len(graph.node) and result["g-initializers"].value == len(graph.initializer)
    assert result.metadata["g"] == {"counted": model.model_path}


@pytest.mark.parametrize(
    ("name", "obj", "message"),
    [
        ("count", 42, r"dist-0:plugin-0: olive_register_metrics registered int for metric type 'count'"),
        ("count", NodeCount(), r"registered a metric type called 'node_count' under the name 'count'"),
    ],
)
def test_a_registration_that_is_no_metric_type_names_the_plugin(name: str, obj: object, message: str) -> None:
    class Plugin:
        @hookimpl
        def olive_register_metrics(self, register):
            register(name, obj)

    with use_plugin_manager(_manager(Plugin())), pytest.raises(PluginLoadError, match=message):
        parse_metric({"name": "c", "type": "count"})
