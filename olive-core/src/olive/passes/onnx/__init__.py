"""Helpers for passes that read and write ONNX models."""
