"""Generative models for Olive: ``ModelBuilder`` (onnxruntime-genai's builder), the ``GenAIModel`` folder type,
weight-only int4 passes on any ONNX decoder and metrics for generative models.

Everything is found through entry points (``olive.passes``, ``olive.models``, ``olive.plugins``); importing this
package imports none of torch, transformers or onnxruntime-genai.
"""

__version__ = "0.1.0"
