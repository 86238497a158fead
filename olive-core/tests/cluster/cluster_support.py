"""Passes of the cluster tests, importable by module name on every Ray node (the nodes' PYTHONPATH has this folder)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from engine_support import AddMatMuls, make_registry

from olive.passes.pass_config import PassConfigParam
from olive.plugins.registry import PassRegistry


class SlowOnNode2(AddMatMuls):
    """AddMatMuls that, on the second node, says so (a flag file) and then takes its time: long enough for the test
    to kill that node in the middle of the trial. The name is the pass's, so its footprint matches AddMatMuls'."""

    @classmethod
    def _default_config(cls, accelerator_spec: Any) -> dict[str, PassConfigParam]:
        return {**super()._default_config(accelerator_spec), "flag_dir": PassConfigParam(type_=str, required=True)}

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        if os.environ.get("OLIVE_TEST_NODE") == "node2":
            (Path(config.flag_dir) / "node2-busy").touch()
            time.sleep(30)
        return super()._run_for_config(model, config, output_model_path)


def make_cluster_registry() -> PassRegistry:
    registry = make_registry()
    registry.register(SlowOnNode2, name="SlowOnNode2")
    return registry
