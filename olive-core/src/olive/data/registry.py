"""Olive's data component registry, kept so user scripts written for Microsoft Olive import unchanged.

A user script may decorate its functions (``@Registry.register_dataset()``); a data config then names them
in ``load_dataset_config.type`` and friends. Undecorated functions in the user script work as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

COMPONENTS = ("load_dataset", "pre_process_data", "post_process_data", "dataloader")


class Registry:
    """Functions registered by name for each data component kind."""

    _functions: ClassVar[dict[str, dict[str, Callable[..., Any]]]] = {kind: {} for kind in COMPONENTS}

    @classmethod
    def register(cls, component: str, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        if component not in cls._functions:
            raise ValueError(f"unknown data component {component!r}; use one of {', '.join(COMPONENTS)}")

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            cls._functions[component][name or func.__name__] = func
            return func

        return decorator

    @classmethod
    def register_dataset(cls, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return cls.register("load_dataset", name)

    @classmethod
    def register_pre_process(cls, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return cls.register("pre_process_data", name)

    @classmethod
    def register_post_process(cls, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return cls.register("post_process_data", name)

    @classmethod
    def register_dataloader(cls, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return cls.register("dataloader", name)

    @classmethod
    def get(cls, component: str, name: str) -> Callable[..., Any] | None:
        return cls._functions.get(component, {}).get(name)
