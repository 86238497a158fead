"""Olive's plugin system.

Passes come from the ``olive.passes`` entry-point group (see :mod:`olive.plugins.registry`); other
extensions are pluggy hooks (see :mod:`olive.plugins.hookspecs`) from the ``olive.plugins`` group.
Writing a hook plugin::

    from olive.plugins import hookimpl

    @hookimpl
    def olive_workflow_end(workflow, output, error):
        ...

Environment: ``OLIVE_LOAD_PLUGINS=a,b`` loads only those distributions (empty: none),
``OLIVE_DISABLE_PLUGINS=x,y`` never loads those, ``OLIVE_STRICT_PLUGINS=1`` makes any load failure fatal.

Importing this package is cheap; each name below loads its module on first access.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "hookimpl": "olive.plugins.markers",
    "hookspec": "olive.plugins.hookspecs",
    "PassEntry": "olive.plugins.registry",
    "PassRegistry": "olive.plugins.registry",
    "get_registry": "olive.plugins.registry",
    "set_registry": "olive.plugins.registry",
    "use_registry": "olive.plugins.registry",
    "get_plugin_manager": "olive.plugins.manager",
    "set_plugin_manager": "olive.plugins.manager",
    "use_plugin_manager": "olive.plugins.manager",
    "new_plugin_manager": "olive.plugins.manager",
    "PluginPolicy": "olive.plugins.discovery",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'olive.plugins' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
