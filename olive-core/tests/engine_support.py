"""Passes and helpers the engine, cache, workflow and CLI tests share (no tests here; fixtures are in conftest.py).

The passes are real: they rewrite an ONNX graph with onnx.helper and the result runs in onnxruntime. Worker
processes (spawned, or Ray's) import them from this module by name, as they would an installed plugin.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from olive.config_errors import param_in_range
from olive.hardware.accelerator import AcceleratorSpec
from olive.passes import ParamCategory, Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.plugins.registry import PassRegistry
from olive.search.search_parameter import Categorical, Conditional
from olive.testing.models import mlp_model, save_model


def _append_matmuls(proto: Any, count: int, name: str = "extra") -> None:
    graph = proto.graph
    output = graph.output[0]
    width = output.type.tensor_type.shape.dim[-1].dim_value
    current = output.name
    renamed = f"{current}_before_{name}"
    for node in graph.node:
        for i, out in enumerate(node.output):
            if out == current:
                node.output[i] = renamed
    prev = renamed
    for i in range(count):
        weight = numpy_helper.from_array(np.eye(width, dtype=np.float32), f"/{name}{i}/W")
        graph.initializer.append(weight)
        out = current if i == count - 1 else f"/{name}{i}/out"
        graph.node.append(helper.make_node("MatMul", [prev, weight.name], [out], name=f"/{name}{i}/MatMul"))
        prev = out
    if count == 0:
        graph.node.append(helper.make_node("Identity", [renamed], [current], name=f"/{name}/Identity"))
    onnx.checker.check_model(proto)


class AddMatMuls(Pass):
    """Append ``n`` identity MatMuls at the output (+1 when ``extra``): bigger file, same outputs."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "n": PassConfigParam(type_=int, default_value=0, search_defaults=Categorical([0, 1, 2])),
            # Only n=1 can take the extra MatMul; n=2 has no valid choice (INVALID), so n=2 never runs.
            "extra": PassConfigParam(
                type_=bool,
                default_value=False,
                search_defaults=Conditional(
                    parents=("n",), support={(0,): Categorical([False]), (1,): Categorical([False, True])}
                ),
            ),
            "fail": PassConfigParam(type_=bool, default_value=False, description="Raise (for failure tests)."),
            "marker": PassConfigParam(type_=str | None, default_value=None, description="Cache-key changer."),
            **get_external_data_config(),
        }

    @classmethod
    def validate_config(cls, config: Any, accelerator_spec: AcceleratorSpec) -> bool:
        return config.marker != "prune-me" and super().validate_config(config, accelerator_spec)

    @classmethod
    def _check_config(cls, config: Any, accelerator_spec: AcceleratorSpec) -> None:
        # Each MatMul is a node in the graph: millions of them would only run out of time and memory.
        param_in_range(config, "n", minimum=0, maximum=64)

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        if config.fail:
            _log_run(self, config)  # an attempt, logged so tests can count them
            raise RuntimeError("AddMatMuls was told to fail")
        proto = model.load_model()
        # Unique names, so the pass can run twice in one chain.
        _append_matmuls(proto, config.n + int(config.extra), name=f"extra{len(proto.graph.node)}")
        result = model_proto_to_olive_model(proto, output_model_path, config)
        _log_run(self, config)
        # OLIVE_TEST_SLEEP="marker:seconds" makes the run with that marker sleep after writing its model,
        # without changing its config (and so its cache key).
        marker, _, seconds = os.environ.get("OLIVE_TEST_SLEEP", "").partition(":")
        if marker and marker == config.marker:
            time.sleep(float(seconds))
        return result


class ScaleOutput(Pass):
    """Multiply the output by ``scale`` (adds a Mul); ``truncate`` drops the last bias and negates the last
    weights: a smaller file whose outputs point the other way (so it fails any agreement goal)."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "scale": PassConfigParam(type_=float, default_value=1.0, search_defaults=Categorical([1.0, -1.0])),
            "truncate": PassConfigParam(type_=bool, default_value=False, search_defaults=Categorical([False, True])),
            **get_external_data_config(),
        }

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        proto = model.load_model()
        graph = proto.graph
        out_name = graph.output[0].name
        if config.truncate:
            # Drop the last layer's bias Add and negate its weights: smaller, and outputs flip direction.
            add = next(n for n in graph.node if n.name == "/fc2/Add")
            matmul = next(n for n in graph.node if n.name == "/fc2/MatMul")
            graph.node.remove(add)
            matmul.output[0] = add.output[0]
            graph.initializer.remove(next(i for i in graph.initializer if i.name == add.input[1]))
            weight = next(i for i in graph.initializer if i.name == matmul.input[1])
            weight.CopyFrom(numpy_helper.from_array(-numpy_helper.to_array(weight), weight.name))
        if config.scale != 1.0:
            scale = numpy_helper.from_array(np.array(config.scale, dtype=np.float32), "/scale/value")
            graph.initializer.append(scale)
            for node in graph.node:
                node.output[:] = [f"{out_name}_unscaled" if o == out_name else o for o in node.output]
            graph.node.append(
                helper.make_node("Mul", [f"{out_name}_unscaled", scale.name], [out_name], name="/scale/Mul")
            )
        _log_run(self, config)
        return model_proto_to_olive_model(proto, output_model_path, config)


class PerDevice(AddMatMuls):
    """AddMatMuls whose output depends on the accelerator (so the accelerator is part of its cache key)."""

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        return False


class NoOp(Pass):
    """Return the input model unchanged (for overhead benchmarks)."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {"k": PassConfigParam(type_=int, default_value=0, search_defaults=Categorical(list(range(8))))}

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        return model


def _log_run(instance: Pass, config: Any) -> None:
    # Tests count real pass work through this log (set OLIVE_TEST_RUN_LOG); cached runs never reach it.
    log = os.environ.get("OLIVE_TEST_RUN_LOG")
    if log:
        with Path(log).open("a", encoding="utf-8") as handle:
            record = {"pass": instance.pass_name(), "config": config.to_json(), "pid": os.getpid()}
            if os.environ.get("OLIVE_TEST_NODE"):  # which Ray node ran it (the cluster tests name theirs)
                record["node"] = os.environ["OLIVE_TEST_NODE"]
            handle.write(json.dumps(record) + "\n")


class CrashOnce(AddMatMuls):
    """AddMatMuls whose worker process is killed (SIGKILL) the first time it runs a given ``marker``;
    ``marker="always"`` is killed every time."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {**super()._default_config(accelerator_spec), "flag_dir": PassConfigParam(type_=str, required=True)}

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        if config.marker:
            flag = Path(config.flag_dir) / f"{config.marker}.killed"
            if config.marker == "always" or not flag.exists():
                flag.touch()
                os.kill(os.getpid(), signal.SIGKILL)
        return super()._run_for_config(model, config, output_model_path)


class NamesItself(AddMatMuls):
    """AddMatMuls that records, in its output model's attributes, the identity it answers with while it runs."""

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        result = super()._run_for_config(model, config, output_model_path)
        result.model_attributes["identity"] = [self.pass_name(), self.distribution(), self.distribution_version()]
        return result


class FitOnData(Pass):
    """AddMatMuls that reads every sample of its ``data_config`` first and writes the first value of each into
    ``seen.json`` beside its output: which samples a pass fits on."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {"data_config": PassConfigParam(type_=Any, required=True), **get_external_data_config()}

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        seen = [
            float(value)
            for inputs, _ in config.data_config.create_dataloader(batch_size=1)
            for value in inputs["input"][:, 0]
        ]
        result = model_proto_to_olive_model(model.load_model(), output_model_path)
        (Path(result.model_path).parent / "seen.json").write_text(json.dumps(seen))
        _log_run(self, config)
        return result


class ReadExamples(FitOnData):
    """FitOnData that only reads its samples as example inputs (``fits_on_data = False``), like a conversion."""

    fits_on_data = False


def make_registry() -> PassRegistry:
    """A registry offering every pass of this module under its class name."""
    registry = PassRegistry(entry_points=False)
    for pass_class in (AddMatMuls, ScaleOutput, NoOp, Inspect, PerDevice, CrashOnce, FitOnData, ReadExamples):
        registry.register(pass_class, name=pass_class.__name__)
    return registry


def ran_passes(log: Path) -> list[tuple[str, dict]]:
    """``(pass name, config)`` of every real pass run logged to ``log`` (see the ``run_log`` fixture)."""
    if not log.exists():
        return []
    return [(e["pass"], e["config"]) for e in map(json.loads, log.read_text().splitlines())]


def wait_for_runs(proc: subprocess.Popen, log: Path, count: int, what: str, marker: Any = "any") -> None:
    """Wait until ``log`` holds ``count`` real runs (of config ``marker``, when given) while ``proc`` still runs."""
    deadline = time.monotonic() + 60
    while sum(marker == "any" or config["marker"] == marker for _, config in ran_passes(log)) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def searched(*values: Any) -> dict:
    """A workflow's JSON for a param searched over ``values``."""
    return {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": list(values)}


def write_mlp(directory: Path) -> Path:
    return Path(save_model(mlp_model(seed=0), directory).model_path)


def count_matmuls(path: str | Path) -> int:
    return sum(1 for n in onnx.load(str(path)).graph.node if n.op_type == "MatMul")


def base_workflow(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    model = write_mlp(tmp_path / "input")
    workflow: dict[str, Any] = {
        "input_model": {"type": "ONNXModel", "model_path": str(model)},
        "passes": {"add": {"type": "AddMatMuls"}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    workflow.update(extra)
    return workflow


class Inspect(Pass):
    """Copy the model and write what its params resolved to into ``received.json`` beside it."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "data_config": PassConfigParam(type_=Any, required=True),
            "table": PassConfigParam(type_=str, required=True, category=ParamCategory.PATH),
            "transform": PassConfigParam(type_=Any, required=True, category=ParamCategory.OBJECT),
        }

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        result = model_proto_to_olive_model(model.load_model(), output_model_path)
        received = {
            "data_config": type(config.data_config).__name__,
            "data_config_name": getattr(config.data_config, "name", None),
            "table": config.table,
            "transform": config.transform(2) if callable(config.transform) else repr(config.transform),
        }
        (Path(result.model_path).parent / "received.json").write_text(json.dumps(received))
        _log_run(self, config)
        return result


def size_metric() -> dict:
    """The file size, objective 1 (smaller is better)."""
    return {"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 1}]}


def agreement_metric(goal: float | None = None, priority: int | None = 2) -> dict:
    """Cosine agreement with the input model on the ``calib`` data; a threshold ``goal`` when given."""
    sub: dict[str, Any] = {"name": "cosine_mean"}
    if priority is not None:
        sub["priority"] = priority
    if goal is not None:
        sub["goal"] = {"type": "threshold", "value": goal}
    return {"name": "agree", "type": "agreement", "data_config": "calib", "sub_types": [sub]}


def write_calibration(path: Path, rows: int = 8) -> Path:
    """Seeded inputs for the MLP of :func:`write_mlp`, as an ``.npz``."""
    np.savez(path, input=np.random.default_rng(0).standard_normal((rows, 16)).astype(np.float32))
    return path


def with_evaluator(workflow: dict, *metrics: dict, data: str | Path | None = None, **data_options: Any) -> dict:
    """``workflow`` measuring ``metrics``; ``data`` is the ``calib`` npz (``data_options`` go into its config)."""
    if data is not None:
        calib = {"name": "calib", "type": "NpzDataContainer", "load_dataset_config": {"data_path": str(data)}}
        workflow["data_configs"] = [{**calib, **data_options}]
    workflow["evaluators"] = {"common": {"metrics": list(metrics)}}
    workflow["evaluator"] = "common"
    return workflow


def search_workflow(tmp_path: Path, name: str, executor: dict | None, **strategy: Any) -> dict:
    """A 2-pass joint search (dozens of points, a third of them pruned) with size and agreement metrics; ``name``
    keeps its cache and outputs apart from other runs of the test."""
    data = tmp_path / "calib.npz"
    if not data.exists():
        write_calibration(data)
    search: dict[str, Any] = {"execution_order": "joint", "sampler": "sequential", **strategy}
    if executor is not None:
        search["executor"] = executor
    workflow = base_workflow(
        tmp_path,
        passes={
            "add": {"type": "AddMatMuls", "marker": searched(None, "prune-me", "b")},
            "scale": {"type": "ScaleOutput"},
        },
        search_strategy=search,
        cache_dir=str(tmp_path / f"cache-{name}"),
        output_dir=str(tmp_path / f"out-{name}"),
    )
    return with_evaluator(workflow, size_metric(), agreement_metric(), data=data)


def footprint_content(output: Any) -> dict[str, tuple]:
    """What a footprint says, without timings or where it ran."""
    return {
        n.model_id: (
            n.parent_model_id,
            n.pass_key,
            json.dumps(n.config, sort_keys=True),
            n.status,
            n.is_candidate,
            json.dumps(n.metrics, sort_keys=True),
            n.is_pareto,
            n.meets_goals,
        )
        for n in output.footprint
    }


def edit_in_place(path: Path, data: bytes) -> None:
    """Overwrite ``path`` with ``data`` of the same size and put its mtime back: only its ctime tells (the write
    is repeated until the clock has ticked past the file's last change)."""
    stat = path.stat()
    assert len(data) == stat.st_size
    while True:
        path.write_bytes(data)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        now = path.stat()
        if now.st_ctime_ns != stat.st_ctime_ns:
            assert (now.st_size, now.st_mtime_ns, now.st_ino) == (stat.st_size, stat.st_mtime_ns, stat.st_ino)
            return
