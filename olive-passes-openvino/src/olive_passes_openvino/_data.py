"""A pass's ``data_config`` as the samples NNCF calibrates (or validates) on, checked against the model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from olive.exceptions import OliveError, PassConfigError

#: The param type of ``data_config``: a string keeps DataConfig (and what it imports) out of config validation.
DATA_CONFIG_TYPE = "DataConfig | dict | str"


def data_items(value: Any, model: Any, owner: str, needed_for: str = "calibration") -> list[tuple[dict[str, Any], Any]]:
    """``(feeds, labels)`` of every batch of the data ``value`` names, feeds checked against ``model``'s inputs.

    ``value`` is a DataConfig, its JSON form, or a path to an ``.npz`` file keyed by input name.
    """
    from olive.data.config import as_data_config
    from olive.data.feeds import check_feeds

    if value is None:
        raise PassConfigError(
            f"{owner}: {needed_for} needs data; set data_config to the name of one of the workflow's data_configs "
            "(e.g. an NpzDataContainer), a DataConfig, or a path to an .npz file keyed by the model's input names"
        )
    if isinstance(value, str | Path) and not str(value).endswith(".npz"):
        raise PassConfigError(
            f"{owner}: data_config '{value}' is not an .npz file; inside a workflow give the name of one of its "
            "data_configs, in direct use a DataConfig, its JSON form or a path to an .npz file"
        )
    data_config = as_data_config(value, where=f"{owner}: data_config")
    io_config = model.get_io_config()
    name = f"model '{Path(str(model.model_path)).name}'"
    items = []
    try:
        for inputs, labels in data_config.create_dataloader():
            items.append((check_feeds(inputs, io_config, data_config.where, name, cast=True), labels))
    except PassConfigError:
        raise
    except OliveError as exc:
        raise PassConfigError(f"{owner}: the data does not fit the model: {exc}") from exc
    if not items:
        raise PassConfigError(f"{owner}: {data_config.where} yields no data; {needed_for} needs at least one sample")
    return items


def nncf_dataset(items: list[tuple[dict[str, Any], Any]], transform_fn: Callable[..., Any] | None, owner: str) -> Any:
    """An ``nncf.Dataset`` over ``items``: each item's feeds, or what ``transform_fn((feeds, labels))`` returns
    (Microsoft Olive's ``transform_fn`` takes the data loader's item)."""
    import nncf

    if transform_fn is not None and not callable(transform_fn):
        raise PassConfigError(
            f"{owner}: transform_fn {transform_fn!r} is not a function; name a function of the workflow's user_script "
            "(set user_script on the pass or the workflow), or give the function itself in direct use"
        )
    return nncf.Dataset(items, transform_fn if transform_fn is not None else _feeds_of)


def _feeds_of(item: tuple[dict[str, Any], Any]) -> dict[str, Any]:
    return item[0]
