"""``olive cache info|clean``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from olive.cli.failure import EXIT_FAILED, error_line
from olive.config_errors import user_path


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


def _cache_dir(given: Path | None) -> Path:
    from olive.cache.location import default_cache_dir

    return given if given is not None else default_cache_dir()


@click.group("cache")
def cache_group() -> None:
    """Inspect or delete the cache of pass runs and evaluations."""


@cache_group.command("info")
@_CACHE_DIR
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def cache_info(cache_dir: Path | None, as_json: bool) -> None:
    """Show what the cache holds."""
    from olive.cache.store import CacheStore

    info = CacheStore(_cache_dir(cache_dir)).info()
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


@cache_group.command("clean")
@_CACHE_DIR
def cache_clean(cache_dir: Path | None) -> None:
    """Delete the cache folder."""
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
