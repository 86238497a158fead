"""The workflow's flat engine keys: the cache (:class:`CacheConfig`) and the run's own settings
(:class:`EngineConfig`). Older files nest both under ``engine``; the workflow section accepts that form.

A new cache setting is one more field of :class:`CacheConfig`: its default, type and rule sit on the field and
the workflow takes the key at the top level (and under ``engine``) without further code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from olive.cache.location import default_cache_dir
from olive.cache.remote import RemoteCacheConfig, parse_remote_cache
from olive.cache.size import SizeLimit, workflow_limit
from olive.config.fields import path_field, typed, whole
from olive.config.structure import structure
from olive.config_errors import config_error, expect


def _size_limit(value: Any, field: attrs.Attribute[Any]) -> SizeLimit | None:
    if value is None or isinstance(value, SizeLimit):
        return value
    expect(value, (str, int), field.name, 'a size such as "2GB", or "unlimited"')
    try:
        return workflow_limit(value, field.name)
    except ValueError as exc:
        raise config_error(field.name, str(exc)) from None


def _remote_cache(value: Any, field: attrs.Attribute[Any]) -> RemoteCacheConfig | None:
    return value if isinstance(value, RemoteCacheConfig) else parse_remote_cache(value, field.name)


@attrs.frozen
class CacheConfig:
    """Where results are kept and how much of them."""

    # The per-user cache (olive.cache.location) unless named: shared by every workflow that names none.
    cache_dir: Path = attrs.field(factory=default_cache_dir, converter=path_field(words="a string"))
    # None: OLIVE_CACHE_MAX_SIZE, else the default (olive.cache.size), read when the workflow is prepared.
    cache_max_size: SizeLimit | None = attrs.field(
        default=None, converter=attrs.Converter(_size_limit, takes_field=True)
    )
    clean_cache: bool = attrs.field(default=False, validator=typed(bool, "true or false"))
    clean_evaluation_cache: bool = attrs.field(default=False, validator=typed(bool, "true or false"))
    # An fsspec URL layered under the local cache (olive.cache.remote); None: no remote cache.
    remote_cache: RemoteCacheConfig | None = attrs.field(
        default=None, converter=attrs.Converter(_remote_cache, takes_field=True)
    )


@attrs.frozen
class EngineConfig:
    """Where the results go and what a run logs and writes."""

    output_dir: Path = attrs.field(default="output", converter=path_field(words="a string"))
    evaluate_input_model: bool = attrs.field(default=True, validator=typed(bool, "true or false"))
    # Olive's levels: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal.
    log_severity_level: int = attrs.field(default=1, validator=whole(0, 4))
    plot_pareto_frontier: bool = attrs.field(default=False, validator=typed(bool, "true or false"))
    no_artifacts: bool = attrs.field(default=False, validator=typed(bool, "true or false"))


SECTIONS = (CacheConfig, EngineConfig)
ENGINE_KEYS = tuple(field.name for section in SECTIONS for field in attrs.fields(section))


def engine_settings(flat: dict[str, Any]) -> dict[str, Any]:
    """The engine keys of a workflow's top level, each structured by its section, with every default filled."""
    result: dict[str, Any] = {}
    for section in SECTIONS:
        names = [field.name for field in attrs.fields(section)]
        given = {key: flat[key] for key in names if key in flat}
        structured = structure(given, section, "")
        result.update({name: getattr(structured, name) for name in names})
    return result
