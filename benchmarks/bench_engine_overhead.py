"""Engine overhead: what the engine adds on top of a pass's own work.

Measured with a no-op pass (it returns its input model), so every microsecond is the engine's:

- ``direct``: building the pass's config and calling ``Pass.run`` directly, per call;
- ``search point (cold)``: one search point of ``olive.run`` with an empty cache (config generation, cache
  key, hashing, the atomic cache write, the footprint), per point;
- ``cached lookup (warm)``: the same search again, every point a cache hit, per point;
- ``fixed per run``: ``olive.run`` of a one-point workflow, fully cached (validation, plan, outputs).

Run ``python benchmarks/bench_engine_overhead.py`` (``--quick`` for a smoke run, ``--json`` for numbers
only).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _define_pass(points: int) -> type:
    from olive.passes import Pass, PassConfigParam
    from olive.search.search_parameter import Categorical

    class NoOp(Pass):
        """Return the input model unchanged."""

        @classmethod
        def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
            return {"k": PassConfigParam(type_=int, default_value=0, search_defaults=Categorical(list(range(points))))}

        def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
            return model

    return NoOp


def _workflow(root: Path, model: Path, search: bool, tag: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "input_model": {"type": "ONNXModel", "model_path": str(model)},
        "passes": {"noop": {"type": "NoOp"}},
        "cache_dir": str(root / f"cache-{tag}"),
        "output_dir": str(root / f"out-{tag}"),
        "log_severity_level": 3,
    }
    if search:
        data["search_strategy"] = {"execution_order": "joint", "sampler": "sequential"}
    return data


def measure(points: int, repeats: int) -> dict[str, float]:
    import olive
    from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR
    from olive.plugins.registry import PassRegistry, use_registry
    from olive.testing.models import mlp_model, save_model

    no_op = _define_pass(points)
    registry = PassRegistry(entry_points=False)
    registry.register(no_op, name="NoOp")
    results: dict[str, list[float]] = {"direct": [], "cold": [], "warm": [], "fixed": []}
    with tempfile.TemporaryDirectory() as tmp, use_registry(registry):
        root = Path(tmp)
        model = save_model(mlp_model(), root / "model")
        # Age the model file so hashing memoizes it, as for any model not written in the last seconds.
        import os

        old = time.time() - 60
        os.utime(model.model_path, (old, old))
        for rep in range(repeats):
            start = time.perf_counter()
            for k in range(points):
                config = no_op.generate_config(DEFAULT_CPU_ACCELERATOR, {"k": k}, disable_search=True)
                no_op(DEFAULT_CPU_ACCELERATOR, config).run(model, str(root / "direct"))
            results["direct"].append((time.perf_counter() - start) / points)

            data = _workflow(root, Path(model.model_path), search=True, tag=f"search{rep}")
            start = time.perf_counter()
            output = olive.run(data)
            results["cold"].append((time.perf_counter() - start) / points)
            assert len(output.footprint) == points + 1
            start = time.perf_counter()
            output = olive.run(data)
            results["warm"].append((time.perf_counter() - start) / points)
            assert all(n.cached for n in output.footprint[1:])

            single = _workflow(root, Path(model.model_path), search=False, tag=f"single{rep}")
            olive.run(single)
            start = time.perf_counter()
            olive.run(single)
            results["fixed"].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in results.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few points, one repeat (a smoke run for tests)")
    parser.add_argument("--points", type=int, default=None, help="search points per run (default 200; quick: 8)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats; the median is reported (default 3)")
    parser.add_argument("--json", action="store_true", help="print JSON only")
    args = parser.parse_args(argv)
    points = args.points or (8 if args.quick else 200)
    repeats = args.repeats or (1 if args.quick else 3)
    numbers = measure(points, repeats)
    report = {
        "points": points,
        "repeats": repeats,
        "direct_ms_per_call": numbers["direct"] * 1e3,
        "search_point_cold_ms": numbers["cold"] * 1e3,
        "cached_lookup_warm_ms": numbers["warm"] * 1e3,
        "fixed_per_run_ms": numbers["fixed"] * 1e3,
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"engine overhead with a no-op pass ({points} points, median of {repeats})")
    print(f"  direct Pass.run call        {report['direct_ms_per_call']:8.3f} ms / call")
    print(f"  search point, empty cache   {report['search_point_cold_ms']:8.3f} ms / point")
    print(f"  search point, cache hit     {report['cached_lookup_warm_ms']:8.3f} ms / point")
    print(f"  fixed cost of a cached run  {report['fixed_per_run_ms']:8.3f} ms / run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
