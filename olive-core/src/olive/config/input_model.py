"""``input_model``: the model a workflow starts from, built by its model type (:mod:`olive.model.types`)."""

from __future__ import annotations

from typing import Any

import attrs

from olive.model.handler import OliveModelHandler


@attrs.frozen
class InputModelConfig:
    """The workflow's input model: the handler its model type built from the fields (see
    :mod:`olive.model.types`), checked and with absolute paths."""

    handler: OliveModelHandler = attrs.field(eq=False)

    @property
    def type(self) -> str:
        return self.handler.model_type

    @property
    def config(self) -> dict[str, Any]:
        return self.handler.to_json()["config"]

    def create_handler(self) -> OliveModelHandler:
        return self.handler

    def to_json(self) -> dict[str, Any]:
        return self.handler.to_json()
