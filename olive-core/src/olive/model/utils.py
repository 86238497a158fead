"""Old home of ``resolve_onnx_path``, kept so passes written for Microsoft Olive import unchanged."""

from olive.passes.onnx.common import resolve_onnx_path

__all__ = ["resolve_onnx_path"]
