"""Data container types from plugins: the ``olive.data_containers`` entry-point group.

olive-core builds in ``DataContainer`` (components from a ``user_script``), ``NpzDataContainer`` and
``DummyDataContainer`` (see :mod:`olive.data.config`). A distribution adds a container type with one entry
point whose class derives from :class:`DataContainerType`::

    [project.entry-points."olive.data_containers"]
    TextDataContainer = "olive_passes_torch.text_data:TextDataContainer"

A workflow then writes ``{"name": "sentences", "type": "TextDataContainer", "load_dataset_config": {...}}``;
the container's classes are imported when a data config names it (validation imports the module, so
keep heavy imports inside the component functions).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeAlias

from olive.exceptions import WorkflowConfigError
from olive.plugins.install_hints import (
    MICROSOFT_OLIVE_ONLY_DATA_CONTAINERS,
    REPOSITORY_DATA_CONTAINERS,
    missing_data_container_hint,
)
from olive.plugins.named_types import NamedTypeRegistry
from olive.plugins.process_wide import ProcessWide

__all__ = [
    "CONTAINERS_GROUP",
    "DataContainerType",
    "bind_input_model",
    "container_registry",
    "find_container",
    "new_container_registry",
    "unknown_container_reason",
    "use_container_registry",
]

CONTAINERS_GROUP = "olive.data_containers"

#: A :class:`~olive.data.config.DataConfig`. That module finds its container types here, so this one names the
#: class in words only and the arrow runs one way; a container type's own module imports the class to type its
#: methods.
DataConfig: TypeAlias = Any


class DataContainerType:
    """Base of a data container type a plugin distribution offers.

    A container type supplies the functions of the components a data config leaves unnamed, and checks
    the config when the workflow is read. Everything else (batching, ``(inputs, labels)`` batches,
    calibration readers, caching by content) is :class:`~olive.data.config.DataConfig`'s.

    - ``components``: component kind (``"load_dataset"``, ``"pre_process_data"``, ``"post_process_data"``,
      ``"dataloader"``) -> the function used when the config names none. ``load_dataset`` is called with the
      ``load_dataset_config`` params; ``pre_process_data`` with the dataset and its params. The dataset the
      two give must yield ``(dict of arrays keyed by input name, label)`` samples, or offer
      ``batch(start, stop) -> (dict of arrays, labels | None)``.
    - :meth:`check`: validate the config and return it with its paths made absolute (no data is read).
    - :meth:`files`: the files whose bytes the data depends on beyond ``data_path`` / ``data_dir`` (which the
      data config hashes itself), so an edited file never reuses a cached result.
    - :meth:`bind_model`: fill in what the container takes from the workflow's input model (a tokenizer)
      when the config does not say.
    """

    components: ClassVar[dict[str, Callable[..., Any]]] = {}

    @classmethod
    def check(cls, config: DataConfig, json_path: str, base_dir: Path) -> DataConfig:
        """Raise ``WorkflowConfigError(reason, owner=<JSON path of the key>)`` for a bad key or value;
        return the config with relative paths resolved against ``base_dir``."""
        return config

    @classmethod
    def files(cls, config: DataConfig) -> list[str]:
        """Files or folders the data is read from, besides ``data_path`` / ``data_dir``."""
        return []

    @classmethod
    def bind_model(cls, config: DataConfig, model_path: str) -> DataConfig:
        """The config with what it takes from the input model at ``model_path`` filled in where unset."""
        return config


def new_container_registry(entry_points: bool = True) -> NamedTypeRegistry:
    """A fresh registry of plugin container types (``entry_points=False``: empty)."""
    return NamedTypeRegistry(
        CONTAINERS_GROUP,
        "data container",
        base=DataContainerType,
        known_elsewhere=(*REPOSITORY_DATA_CONTAINERS, *MICROSOFT_OLIVE_ONLY_DATA_CONTAINERS),
        missing_hint=missing_data_container_hint,
        error_type=WorkflowConfigError,
        entry_points=entry_points,
    )


_registry: ProcessWide[NamedTypeRegistry] = ProcessWide(new_container_registry)
#: The process-wide registry of plugin container types, scanned on first use.
container_registry = _registry.get
#: Make a registry the process-wide one inside the ``with`` block (tests, embedders).
use_container_registry = _registry.use


def find_container(name: str) -> type[DataContainerType] | None:
    """The plugin container type ``name``, or None when no installed distribution offers it.

    Raises :class:`~olive.exceptions.PluginLoadError` when the distribution that offers it is broken.
    """
    return container_registry().find_class(name)


def unknown_container_reason(name: str) -> str | None:
    """For a container type a distribution of this project provides but that is not installed: which one
    and how to install it; for one of Microsoft Olive's that none here provides: so, with the closest one
    here; None otherwise (case does not matter)."""
    hint = missing_data_container_hint(name)
    if hint is None:
        return None
    return f"{hint}. Available now: {', '.join([*_BUILTIN, *container_registry().names()])}"


def bind_input_model(config: DataConfig, model_path: str | None) -> DataConfig:
    """``config`` with what its container takes from the input model (at ``model_path``) filled in."""
    if model_path is None:
        return config
    container = find_container(config.type) if config.type not in _BUILTIN else None
    return container.bind_model(config, str(model_path)) if container is not None else config


_BUILTIN = ("DataContainer", "NpzDataContainer", "DummyDataContainer")
