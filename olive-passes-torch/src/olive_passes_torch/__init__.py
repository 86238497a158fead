"""PyTorch and Hugging Face models for Olive: the ``HfModel`` and ``PyTorchModel`` model types, the
``OnnxConversion`` pass, and text data containers that tokenize local files.

Everything is found through entry points (``olive.models``, ``olive.passes``, ``olive.data_containers``; see
``pyproject.toml``); importing this package imports none of its modules, and none of them imports torch or
transformers until a model is loaded or converted.
"""

__version__ = "0.1.0"
