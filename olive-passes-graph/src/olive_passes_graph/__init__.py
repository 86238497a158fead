"""Graph optimization and onnxruntime session tuning passes for Olive.

Each pass is registered through its own ``olive.passes`` entry point (see ``pyproject.toml``); importing this
package imports none of them, so listing passes stays cheap.
"""

__version__ = "0.1.0"
