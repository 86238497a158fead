"""``olive cache info|prune|clean``."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from olive.cli.failure import EXIT_FAILED, error_line
from olive.config_errors import user_path

if TYPE_CHECKING:
    from olive.cache.eviction import CacheEntry
    from olive.cache.size import SizeLimit


def _checked_cache_dir(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    # Checked as every path a user gives is (a NUL, a name over 255 bytes, a symlink loop: exit 2, one line).
    return None if value is None else user_path(value, "--cache-dir", None, kind="folder")


_CACHE_DIR = click.option(
    "--cache-dir",
    default=None,
    callback=_checked_cache_dir,
    help="The cache folder (default: $OLIVE_CACHE_DIR, else your user cache folder: the cache of every workflow "
    "that names no cache_dir).",
)


def _checked_size(ctx: click.Context, param: click.Parameter, value: str | None) -> SizeLimit | None:
    from olive.cache.size import SIZE_FORMS, SizeLimit, parse_size

    if value is None:
        return None
    try:
        return SizeLimit(parse_size(value), "--max-size")
    except ValueError as exc:
        raise click.BadParameter(f"{exc}; use {SIZE_FORMS}") from None


def _cache_dir(given: Path | None) -> Path:
    from olive.cache.location import default_cache_dir

    return given if given is not None else default_cache_dir()


def _checked_remote(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from olive.cache.remote import check_url
    from olive.exceptions import WorkflowConfigError

    if value is None:
        return None
    try:
        return check_url(value, "--remote")
    except WorkflowConfigError as exc:
        raise click.BadParameter(str(exc)) from None


T = TypeVar("T")

_REMOTE = click.option(
    "--remote",
    default=None,
    metavar="URL",
    callback=_checked_remote,
    help="Work on the remote cache at URL (a workflow's remote_cache, e.g. s3://bucket/prefix) instead of the "
    "local one; credentials come from the storage library's usual places.",
)


def _ask_remote(url: str, ask: Callable[[Any], T]) -> T:
    """Open the remote cache at ``url`` and call ``ask`` on it; a store that fails is one line and exit 1."""
    from olive.cache.remote import RemoteCache, RemoteCacheConfig, RemoteUnreachable
    from olive.exceptions import OliveError

    try:
        return ask(RemoteCache(RemoteCacheConfig(url)))
    except (RemoteUnreachable, OliveError) as exc:
        error_line(f"remote cache '{url}': {exc}; check the URL, the endpoint and the credentials")
        sys.exit(EXIT_FAILED)


def _remote_info(url: str, as_json: bool) -> None:
    info = _ask_remote(url, lambda remote: remote.info())
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    if not info["is_olive_cache"]:
        click.echo(f"{url}: no remote cache here")
        return
    click.echo(f"remote cache: {url}")
    click.echo(f"pass runs: {info['runs']}")
    click.echo(f"evaluations: {info['evaluations']}")
    click.echo(f"files: {info['blobs']}")
    click.echo(f"size: {info['size_bytes'] / 1e6:.2f} MB")


def _remote_clean(url: str) -> None:
    removed = _ask_remote(url, lambda remote: remote.clean())
    if removed < 0:
        error_line(f"{url} is not an Olive remote cache (no olive-remote-cache.json); not deleting anything there")
        sys.exit(EXIT_FAILED)
    click.echo(f"removed {removed} object(s) of the remote cache at {url}")


@click.group("cache")
def cache_group() -> None:
    """Inspect, prune or delete the cache of pass runs and evaluations."""


@cache_group.command("info")
@_CACHE_DIR
@_REMOTE
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def cache_info(cache_dir: Path | None, remote: str | None, as_json: bool) -> None:
    """Show what the cache holds."""
    if remote is not None:
        _remote_info(remote, as_json)
        return
    from olive.cache.eviction import entries_size
    from olive.cache.size import configured_limit
    from olive.cache.store import CacheStore

    limit = configured_limit()
    store = CacheStore(_cache_dir(cache_dir))
    info = store.info()
    used = entries_size(store)[0] if info["is_olive_cache"] else 0
    info.update(entries_bytes=used, max_size_bytes=limit.max_bytes, max_size_source=limit.source)
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    if not info["exists"]:
        click.echo(f"{info['cache_dir']}: no cache here" + ("" if cache_dir is not None else " yet"))
        return
    click.echo(f"cache: {info['cache_dir']}")
    click.echo(f"pass runs: {info['runs']}")
    for name, count in info["runs_by_pass"].items():
        click.echo(f"  {name}: {count}")
    click.echo(f"evaluations: {info['evaluations']}")
    click.echo(f"size: {info['size_bytes'] / 1e6:.2f} MB")
    click.echo(f"limit: {_against_limit(used, limit)}")


def _against_limit(used: int, limit: SizeLimit) -> str:
    from olive.cache.size import MAX_SIZE_ENV, format_size

    source = f"{limit.source}; set {MAX_SIZE_ENV} to change it" if limit.source != MAX_SIZE_ENV else limit.source
    if limit.max_bytes is None:
        return f"none ({source}); entries use {format_size(used)}"
    share = f"{100 * used / limit.max_bytes:.0f}%" if limit.max_bytes else ("full" if not used else "over")
    return f"{format_size(limit.max_bytes)} ({source}); entries use {format_size(used)} ({share})"


@cache_group.command("prune")
@_CACHE_DIR
@click.option(
    "--max-size",
    "max_size",
    default=None,
    metavar="SIZE",
    callback=_checked_size,
    help="Evict until the entries fit SIZE (500MB, 2GB, 1.5GiB; 0 evicts every entry no running workflow holds). "
    "Default: $OLIVE_CACHE_MAX_SIZE, else 5 GB.",
)
@click.option("--dry-run", is_flag=True, help="List what would be evicted; delete nothing.")
def cache_prune(cache_dir: Path | None, max_size: SizeLimit | None, dry_run: bool) -> None:
    """Evict the least recently used entries until the cache fits its size limit.

    Whole entries go, oldest use first; an entry a running workflow uses is kept, and files the cache did not
    create are never touched. Runs do the same on their own after writing new entries.
    """
    from olive.cache.eviction import prune
    from olive.cache.size import configured_limit
    from olive.cache.store import CacheStore

    limit = max_size if max_size is not None else configured_limit()
    store = CacheStore(_cache_dir(cache_dir))
    if not store.root.exists():
        click.echo(f"{store.root}: nothing to prune")
        return
    if not store.is_cache():
        error_line(f"{store.root} is not an Olive cache (no olive-cache.json); not pruning it")
        sys.exit(EXIT_FAILED)
    result = prune(store, limit, dry_run=dry_run, tidy=True)
    shown = result.evicted[:_LISTED]
    for entry in shown:
        click.echo(f"  {_describe(entry)}")
    if len(result.evicted) > len(shown):
        click.echo(f"  ... and {len(result.evicted) - len(shown)} more")
    click.echo(result.summary())
    if not dry_run:
        # Leftovers no later run can use: temp folders of killed runs, digests of files that are gone or changed.
        tmp = store.clean_stale_tmp()
        if tmp or result.stale_digests:
            click.echo(
                f"also removed {tmp} temp folder(s) of killed runs and {result.stale_digests} stale file digest(s)"
            )


# Evicted entries listed one per line; the rest are counted.
_LISTED = 20


def _describe(entry: CacheEntry) -> str:
    from olive.cache.size import format_size

    used = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.last_used))
    return f"{entry.what} {entry.key[:12]}: {format_size(entry.size)}, last used {used}"


@cache_group.command("clean")
@_CACHE_DIR
@_REMOTE
def cache_clean(cache_dir: Path | None, remote: str | None) -> None:
    """Delete the cache folder (or, with --remote, what the cache wrote under that URL)."""
    if remote is not None:
        _remote_clean(remote)
        return
    from olive.cache.store import CacheStore

    store = CacheStore(_cache_dir(cache_dir))
    if not store.root.exists():
        click.echo(f"{store.root}: nothing to clean")
        return
    if not store.is_cache():
        error_line(f"{store.root} is not an Olive cache (no olive-cache.json); not deleting it")
        sys.exit(EXIT_FAILED)
    try:
        kept = store.clean()
    except OSError as exc:
        error_line(
            f"cannot delete the cache in '{store.root}' ({exc.strerror or exc}: {exc.filename}); fix its "
            "permissions and run `olive cache clean` again"
        )
        sys.exit(EXIT_FAILED)
    if kept:
        shown = ", ".join(kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
        click.echo(f"kept {len(kept)} item(s) in {store.root} that the cache did not create: {shown}")
    if store.root.exists():
        click.echo(f"removed the cache from {store.root}; the folder's other files were kept")
    else:
        click.echo(f"removed {store.root}")
