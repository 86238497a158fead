"""Workflows: a JSON/YAML config naming an input model, passes, an evaluator and a search strategy."""

from __future__ import annotations

# Importing the function (not the module) binds ``olive.workflows.run`` to it; run.py itself is light.
from olive.workflows.config import load_workflow_config
from olive.workflows.run import run

__all__ = ["load_workflow_config", "run"]
