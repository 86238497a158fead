"""Quantization passes for Olive, registered through the ``olive.passes`` entry-point group.

The passes live in one module each (``dynamic``, ``static``, ``quantization``, ``preprocess``,
``blockwise``, ``hqq``, ``k_quant``, ``gptq``, ``float16``, ``sensitivity``, ``accuracy_guarded``, ...; the
weight-only ones on ``weight_only``'s base); Olive imports a module only when a workflow uses its pass. Importing this
package imports neither onnxruntime nor numpy.
"""

__version__ = "0.1.0"
