"""Generative models for Olive: ``ModelBuilder`` (onnxruntime-genai's builder), the ``GenAIModel`` folder type,
the int4 guard (``OnnxGuardedInt4``) and metrics for generative models. The weight-only passes (HQQ, k-quant, GPTQ,
RTN) are olive-passes-quant's; a ``GenAIModel`` tells them how to stay a servable folder and how to feed text.

Everything is found through entry points (``olive.passes``, ``olive.models``, ``olive.plugins``); importing this
package imports none of torch, transformers or onnxruntime-genai.
"""

__version__ = "0.1.0"
