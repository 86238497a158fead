"""``olive optimize``: one command from a model to the fastest model that keeps its outputs.

The command is thin; the work is in modules that each do one thing and can be tested without running a
workflow:

- :mod:`olive.optimize.keep`: ``--keep cosine_min=0.97`` parsed into :class:`Keep`, and the default keeps.
- :mod:`olive.optimize.options`: :class:`OptimizeOptions`, every option checked (Microsoft Olive's values we
  cannot honour are errors naming what is supported).
- :mod:`olive.optimize.facts`: :class:`ModelFacts`, what the model is (ONNX graph or a model type plugin's
  folder): inputs, outputs, transformer or not, attention mask, class scores or vectors, tokenizer.
- :mod:`olive.optimize.data`: what ``--data`` accepts and the data config made from it.
- :mod:`olive.optimize.recipe`: :func:`build_workflow`, a pure function from facts, options and what is
  installed to the workflow dict (the module docstring describes the search).
- :mod:`olive.optimize.installed`: what the registries offer (passes, containers, plugin providers).
- :mod:`olive.optimize.summary`: the chosen model against the input model, or the closest miss.

The workflow is an ordinary one: ``olive optimize`` writes it as ``optimize_workflow.json`` beside the
outputs, and ``olive run`` on that file reruns it (from the cache).
"""

from __future__ import annotations

from olive.optimize.facts import ModelFacts, read_model_facts
from olive.optimize.keep import Keep, parse_keep
from olive.optimize.options import OptimizeOptions
from olive.optimize.recipe import Installed, Recipe, build_workflow

__all__ = [
    "Installed",
    "Keep",
    "ModelFacts",
    "OptimizeOptions",
    "Recipe",
    "build_workflow",
    "parse_keep",
    "read_model_facts",
]
