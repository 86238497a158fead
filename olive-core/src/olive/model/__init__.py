"""Model handlers."""

from olive.model.handler import OliveModelHandler, ONNXModelHandler

__all__ = ["ONNXModelHandler", "OliveModelHandler"]
