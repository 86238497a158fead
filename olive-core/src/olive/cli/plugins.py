"""``olive plugins``: the installed plugin distributions, their passes and hooks, and their status."""

from __future__ import annotations

import json
from typing import Any

import click

from olive.cli.layout import minimum_width


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--requirements", is_flag=True, help="Print `name==version` lines that rebuild this set of plugins.")
def plugins_command(as_json: bool, requirements: bool) -> None:
    """List distributions that offer passes (entry points olive.passes) or hooks (olive.plugins).

    Pass modules are not imported; hook plugins are loaded to report whether their hooks are valid.
    """
    if as_json and requirements:
        raise click.UsageError("use either --json or --requirements, not both")
    plugins = collect_plugins(load_hooks=not requirements)
    if requirements:
        for item in plugins:
            click.echo(f"{item['name']}=={item['version']}")
        return
    if as_json:
        click.echo(json.dumps(plugins, indent=2))
        return

    from rich.console import Console

    console = Console()
    if not plugins:
        console.print("No plugin distributions installed.")
        return
    table = _table(plugins)
    if minimum_width(table, console.width) <= console.width:
        console.print(table)
    else:
        _print_blocks(console, plugins)


def _status(item: dict[str, Any]) -> str:
    return item["status"] if not item["errors"] else f"{item['status']}: {'; '.join(item['errors'])}"


def _registers(item: dict[str, Any]) -> list[str]:
    """The metric types and samplers a distribution's hooks add, as a workflow names them."""
    return [f"metric {name}" for name in item["metrics"]] + [f"sampler {name}" for name in item["samplers"]]


def _table(plugins: list[dict[str, Any]]) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Plugin distributions", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    hooks = any(item["hooks"] for item in plugins)
    registers = any(_registers(item) for item in plugins)
    table.add_column("Distribution", no_wrap=True)
    table.add_column("Version", no_wrap=True)
    # A pass or hook name is never cut; the status wraps between words.
    table.add_column("Passes", no_wrap=True)
    if hooks:
        table.add_column("Hooks", no_wrap=True)
    if registers:
        table.add_column("Registers", no_wrap=True)
    table.add_column("Status", overflow="fold", min_width=10)
    for item in plugins:
        table.add_row(
            item["name"],
            item["version"],
            Text("\n".join(item["passes"]) or "-"),
            *([Text("\n".join(item["hooks"]) or "-")] if hooks else []),
            *([Text("\n".join(_registers(item)) or "-")] if registers else []),
            Text(_status(item)),
        )
    return table


def _print_blocks(console: Any, plugins: list[dict[str, Any]]) -> None:
    from rich.padding import Padding
    from rich.text import Text

    console.print("Plugin distributions", style="bold", highlight=False)
    for item in plugins:
        console.print(Text(f"{item['name']} {item['version']}  {_status(item)}"))
        for label in ("passes", "hooks"):
            if item[label]:
                console.print(Padding(Text(f"{label}: " + ", ".join(item[label])), (0, 0, 0, 4)))
        if _registers(item):
            console.print(Padding(Text("registers: " + ", ".join(_registers(item))), (0, 0, 0, 4)))


def collect_plugins(load_hooks: bool = True) -> list[dict[str, Any]]:
    """One dict per plugin distribution: ``name``, ``version``, ``passes``, ``hooks``, the ``metrics`` and
    ``samplers`` its hooks register, ``status``, ``errors``; sorted by name. Pass modules are never imported."""
    from olive.plugins.discovery import normalize_name
    from olive.plugins.registry import get_registry

    found: dict[str, dict[str, Any]] = {}

    def item(name: str, version: str) -> dict[str, Any]:
        key = normalize_name(name)
        if key not in found:
            found[key] = {
                "name": name,
                "version": version,
                "passes": [],
                "hooks": [],
                "metrics": [],
                "samplers": [],
                "status": "ok",
                "errors": [],
            }
        return found[key]

    registry = get_registry()
    for entry in registry.entries():
        if not entry.installed:
            continue
        record = item(entry.distribution, entry.version)
        record["passes"].append(entry.name)
        if entry.status in ("failed", "blocked"):
            record["status"] = entry.status
            record["errors"].append(f"{entry.name}: {entry.error}")

    if load_hooks:
        from olive.plugins.manager import get_plugin_manager

        records = get_plugin_manager().records
    else:
        from olive.plugins.discovery import PLUGINS_GROUP, iter_entry_points
        from olive.plugins.manager import PluginRecord

        records = [
            PluginRecord(f"{f.distribution}:{f.name}", f.distribution, f.version, f.value)
            for f in iter_entry_points(PLUGINS_GROUP)
        ]
    registered = _registered(records) if load_hooks else {}
    for plugin in records:
        record = item(plugin.distribution, plugin.version)
        record["hooks"].extend(plugin.hooks)
        lists = registered.get(plugin.name, {})
        record["metrics"].extend(lists.get("metrics", []))
        record["samplers"].extend(lists.get("samplers", []))
        record["errors"].extend(lists.get("failed", []) + lists.get("notes", []))
        if lists.get("failed"):
            record["status"] = "failed"
        if plugin.status in ("failed", "blocked"):
            record["status"] = plugin.status
            record["errors"].append(f"{plugin.value}: {plugin.error}")
    return sorted(found.values(), key=lambda r: normalize_name(r["name"]))


def _registered(records: list[Any]) -> dict[str, dict[str, list[str]]]:
    """``{plugin name: {"metrics": [...], "samplers": [...], "failed": [...], "notes": [...]}}``: what each hook
    plugin registers, as a workflow can use it; a name that is built in is left out, as everywhere, with a note."""
    from olive.evaluator.metrics.registry import BUILTIN_METRIC_TYPES
    from olive.exceptions import PluginLoadError
    from olive.plugins.manager import get_plugin_manager, plugin_registrations
    from olive.search.samplers import BUILTIN_SAMPLERS

    pm = get_plugin_manager()
    found: dict[str, dict[str, list[str]]] = {record.name: {} for record in records}
    for label, hook, builtin, what in (
        ("metrics", "olive_register_metrics", BUILTIN_METRIC_TYPES, "metric type"),
        ("samplers", "olive_register_samplers", BUILTIN_SAMPLERS, "sampler"),
    ):
        try:
            registrations = plugin_registrations(hook, builtin, what, pm)
        except PluginLoadError as exc:
            # The message names the plugin whose hook failed: the listing shows it against that plugin.
            for name, lists in found.items():
                if name in str(exc):
                    lists.setdefault("failed", []).append(str(exc))
            continue
        for registration in registrations.values():
            found.setdefault(registration.plugin, {}).setdefault(label, []).append(registration.name)
        for (shadowed_hook, name), plugin in pm.shadowed.items():
            if shadowed_hook == hook and plugin in found:
                message = f"{hook} registers {what} '{name}', which is built in; the built-in one is used"
                found[plugin].setdefault("notes", []).append(message)
    return found
