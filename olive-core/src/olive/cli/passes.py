"""``olive passes``: list installed passes from metadata, or load one and show its config."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from olive.cli.failure import EXIT_FAILED, error_line
from olive.cli.layout import minimum_width, plain_text
from olive.plugins.install_hints import install_line

# Below this many columns for the summary the table is unreadable (a word per line).
_MIN_SUMMARY_WIDTH = 30

if TYPE_CHECKING:
    from olive.plugins.registry import PassEntry


@click.command("passes")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--check",
    is_flag=True,
    help="Load every pass to show which are broken (imports their modules); exit 1 if any fails.",
)
def passes_command(name: str | None, as_json: bool, check: bool) -> None:
    """List installed passes, or show the config params of pass NAME.

    The listing imports no pass module (status "not loaded"; the summary is read from the pass's source
    file) unless --check is given or OLIVE_STRICT_PLUGINS is set; NAME (PassName or dist-name:PassName)
    loads that one pass.
    """
    from olive.plugins.registry import get_registry

    registry = get_registry()
    if name:
        _show_pass(registry, name, as_json)
        return
    entries = registry.entries()
    failed: list[PassEntry] = []
    if check or registry.policy.strict:
        # CI wants broken plugins to fail the listing too, so load everything.
        failed = registry.load_all()
    summaries = _summaries(entries)
    if as_json:
        click.echo(json.dumps([{**e.to_json(), "summary": summaries[id(e)]} for e in entries], indent=2))
    else:
        _print_table(entries, summaries)
    if failed:
        error_line(
            f"{len(failed)} pass(es) failed to load: "
            + ", ".join(f"{e.name} ({e.requirement})" for e in failed)
            + "; `olive passes NAME` shows why"
        )
        sys.exit(EXIT_FAILED)


_STATUS_STYLE = {"ok": "green", "not loaded": "dim", "failed": "bold red", "blocked": "yellow"}
NOT_LOADED_NOTE = (
    "not loaded: found in its distribution's metadata; the module is imported only when a workflow or "
    "`olive passes NAME` uses the pass (`olive passes --check` loads them all)"
)


def _summaries(entries: list[PassEntry]) -> dict[int, str | None]:
    # A loaded pass knows its docstring; for the others read it from the source without importing.
    from olive.plugins.summaries import source_summary

    found = {id(e): e.summary or (source_summary(e.value) if e.status != "blocked" else None) for e in entries}
    return {key: plain_text(summary) if summary else summary for key, summary in found.items()}


def _print_table(entries: list[PassEntry], summaries: dict[int, str | None]) -> None:
    from rich import box
    from rich.console import Console
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    console = Console()
    if not entries:
        lines = " and ".join(install_line(d) for d in ("olive-passes-quant", "olive-passes-graph"))
        console.print(Text(f"No passes installed. Install a pass distribution, e.g. this repository's: {lines}"))
        return
    rows = [
        (
            entry.name,
            entry.distribution,
            entry.version,
            entry.status if entry.status != "failed" else f"failed: {entry.error}",
            _STATUS_STYLE.get(entry.status, ""),
            summaries[id(entry)] or "-",
        )
        for entry in entries
    ]
    table = Table(title="Installed passes", title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("Name", no_wrap=True)
    table.add_column("Distribution", no_wrap=True)
    table.add_column("Version", no_wrap=True)
    table.add_column("Status", overflow="fold", min_width=10)
    table.add_column("Summary", overflow="fold", min_width=_MIN_SUMMARY_WIDTH)
    for name, distribution, version, status, style, summary in rows:
        table.add_row(name, distribution, version, Text(status, style=style), Text(summary))
    # A pass name is never cut: below the table's width, one block per pass.
    if minimum_width(table, console.width) <= console.width:
        console.print(table)
    else:
        console.print("[bold]Installed passes[/]")
        for name, distribution, version, status, style, summary in rows:
            console.print(
                f"  [bold cyan]{_escape(name)}[/]  {_escape(distribution)} {_escape(version)}  "
                f"[{style}]{_escape(status)}[/]",
                highlight=False,
            )
            console.print(Padding(Text(summary), (0, 0, 0, 6)))
    if any(entry.status == "not loaded" for entry in entries):
        console.print(Text(NOT_LOADED_NOTE, style="dim"))


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _show_pass(registry: Any, name: str, as_json: bool) -> None:
    from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR
    from olive.passes.param_types import describe_type
    from olive.passes.pass_config import to_json_value
    from olive.search.search_parameter import SearchParameter

    pass_class = registry.get_pass_class(name)
    entry = registry.get_entry(name)
    params = pass_class.default_config(DEFAULT_CPU_ACCELERATOR)

    def value(v: Any) -> Any:
        if isinstance(v, SearchParameter):
            return v.to_json()
        try:
            return to_json_value(v)
        except Exception:
            return repr(v)

    rows = [
        {
            "name": key,
            "type": describe_type(param.type_),
            "required": param.required,
            "default": value(param.default_value),
            "search_defaults": value(param.search_defaults) if param.search_defaults is not None else None,
            "category": str(param.category),
            "description": param.description,
        }
        for key, param in params.items()
    ]
    info = {**entry.to_json(), "params": rows}
    if as_json:
        click.echo(json.dumps(info, indent=2, default=repr))
        return

    from rich.console import Console
    from rich.padding import Padding
    from rich.text import Text

    console = Console()
    console.print(f"[bold]{entry.name}[/] from {_escape(entry.requirement)} ({_escape(entry.value)})")
    import inspect

    doc = plain_text(inspect.cleandoc(pass_class.__dict__.get("__doc__") or ""))
    # Reflow the docstring's paragraphs so the terminal, not the source's line breaks, decides the width.
    for paragraph in (p for p in doc.split("\n\n") if p.strip()):
        console.print(Text(" ".join(line.strip() for line in paragraph.splitlines())))
        console.print()
    if pass_class._version:
        console.print(f"pass version: {_escape(str(pass_class._version))}\n")
    if not rows:
        console.print("This pass has no config params.")
        return
    # One block per param: a table with a description column is unreadable in 80 columns.
    console.print("[bold]Config params[/]")
    for row in rows:
        param = params[row["name"]]
        default = "[red](required)[/]" if row["required"] else _escape(_describe_default(param.default_value, row))
        line = f"  [bold cyan]{row['name']}[/]: {_escape(row['type'])} = {default}"
        if param.search_defaults is not None:
            line += f"  [magenta]search {_escape(_describe_search(param.search_defaults))}[/]"
        if row["category"] != "none":
            line += f"  [yellow]({row['category']})[/]"
        console.print(line, highlight=False)
        if row["description"]:
            console.print(Padding(Text(plain_text(row["description"])), (0, 0, 0, 6)))


def _describe_default(value: Any, row: dict[str, Any]) -> str:
    """A default that depends on other params reads as a rule: ``true if precision=int8, false if ...``."""
    from olive.search.search_parameter import ConditionalDefault

    if not isinstance(value, ConditionalDefault):
        return json.dumps(row["default"], default=repr)

    def condition(keys: tuple) -> str:
        return ", ".join(f"{p}={json.dumps(k, default=repr)}" for p, k in zip(value.parents, keys, strict=True))

    choices = [f"{json.dumps(chosen, default=repr)} if {condition(keys)}" for keys, chosen in value.support.items()]
    return "; ".join([*choices, f"else {json.dumps(value.default, default=repr)}"])


def _describe_search(param: Any) -> str:
    from olive.search.search_parameter import Categorical

    if param is None:
        return "-"
    if isinstance(param, Categorical):
        return json.dumps(param.get_support(), default=repr)
    return repr(param)
