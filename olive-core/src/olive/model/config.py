"""``olive.model.config.ModelConfig``: Microsoft Olive's ``{"type": ..., "config": {...}}`` form of a model, which
its passes read a handler's ``to_json()`` back into and build handlers from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from olive.config_errors import expect
from olive.model.handler import OliveModelHandler
from olive.model.types import get_model_type

__all__ = ["ModelConfig"]


@attrs.frozen
class ModelConfig:
    """A model type (any case, as in Olive) and the fields its handler is built from.

    ``ModelConfig.model_validate(handler.to_json()).create_model()`` builds an equal handler.
    """

    type: str
    config: dict[str, Any] = attrs.field(factory=dict)

    @classmethod
    def model_validate(cls, data: ModelConfig | Mapping[str, Any]) -> ModelConfig:
        """Read ``{"type": ..., "config": {...}}``; raises :class:`~olive.exceptions.UnknownModelTypeError` for a
        type no installed distribution offers (saying which would) and ``ValueError`` for another shape."""
        if isinstance(data, ModelConfig):
            return data
        try:
            expect(data, Mapping, "model config", 'an object like {"type": "ONNXModel", "config": {...}}')
            kind = expect(data.get("type"), str, "model config.type", "a model type name")
            config = expect(data.get("config") or {}, Mapping, "model config.config", "an object of model fields")
        except Exception as exc:
            raise ValueError(str(exc)) from None
        # The handler class says how the type is spelled here.
        return cls(getattr(get_model_type(kind), "model_type", kind), dict(config))

    #: Olive's older (pydantic 1) names of the same.
    parse_obj = model_validate
    from_json = model_validate

    def create_model(self) -> OliveModelHandler:
        """The handler of this type, built from ``config``."""
        return get_model_type(self.type)(**self.config)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "config": dict(self.config)}

    model_dump = to_json
    dict = to_json
