"""{{ cookiecutter.__docstring }}

Olive finds the pass through the ``olive.passes`` entry point in ``pyproject.toml``; importing this
package is not needed to use it.
"""

__version__ = "0.1.0"
