"""OpenVINO for Olive: the ``OpenVINOModel`` type and Microsoft Olive's OpenVINO passes.

The model type and each pass are registered through their own entry points (see ``pyproject.toml``);
importing this package imports none of them, nor openvino, so listing passes stays cheap.
"""

__version__ = "0.1.0"
