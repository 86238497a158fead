"""Write the docs site's generated reference pages: the CLI (walked from the ``olive`` click group) and the passes
(read from the pass configs of the distributions installed in this environment).

The pages are written at build time (``docs/hooks.py`` calls :func:`write_reference` before mkdocs reads the
docs folder) and are not committed: they always describe the code being built. Run it alone to look at them:
``python docs/gen_reference.py``.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

import click

DOCS = Path(__file__).resolve().parent
#: The generated pages, relative to the docs folder (.gitignore lists them).
GENERATED = ("reference/cli.md", "reference/passes.md")


def _cell(text: str) -> str:
    """``text`` as one markdown table cell: no line breaks, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    # A code span holding a backtick needs a longer fence than the backticks it holds.
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _command_section(command: click.Command, path: list[str], level: int, parent: click.Context | None) -> list[str]:
    """Markdown for ``command`` and, for a group, each subcommand below it."""
    # A context per level, as click builds them when the command line runs, so usage lines name the full path.
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    title = " ".join(path)
    lines = [f"{'#' * level} `{title}`", ""]
    help_text = inspect.cleandoc(command.help or "")
    # Usage goes in a text block: the docs' bash blocks are run in CI, a usage line is not a command.
    lines += ["```text", command.get_usage(ctx), "```", ""]
    if help_text:
        lines += [help_text.replace("\b\n", ""), ""]
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
    if arguments:
        lines += ["| argument | required |", "|---|---|"]
        lines += [f"| {_code(a.human_readable_name)} | {'yes' if a.required else 'no'} |" for a in arguments]
        lines.append("")
    records = [record for record in (o.get_help_record(ctx) for o in options) if record]
    records.append(("-h, --help", "Show the command's help and exit."))
    lines += ["| option | what it does |", "|---|---|"]
    lines += [f"| {_code(flags)} | {_cell(text) or '-'} |" for flags, text in records]
    lines.append("")
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                lines += _command_section(sub, [*path, name], level + 1, ctx)
    return lines


def cli_reference() -> str:
    """The CLI reference page: every command of ``olive`` with its usage, help and options."""
    from olive.cli.main import cli

    lines = [
        "# CLI reference",
        "",
        "Generated from the `olive` command's click definitions when the docs are built: it is what",
        "`olive COMMAND --help` prints, for every command. Commands that plugin distributions add appear",
        "here only when their distribution was installed where the docs were built.",
        "",
    ]
    lines += _command_section(cli, ["olive"], 2, None)
    return "\n".join(lines).rstrip() + "\n"


def _json(value: Any) -> str:
    from olive.passes.pass_config import to_json_value
    from olive.search.search_parameter import ConditionalDefault, SearchParameter

    if isinstance(value, ConditionalDefault):
        choices = [
            f"{json.dumps(chosen, default=repr)} if "
            + ", ".join(f"{p}={json.dumps(k, default=repr)}" for p, k in zip(value.parents, keys, strict=True))
            for keys, chosen in value.support.items()
        ]
        return "; ".join([*choices, f"else {json.dumps(value.default, default=repr)}"])
    if isinstance(value, SearchParameter):
        return json.dumps(value.to_json(), default=repr)
    try:
        return json.dumps(to_json_value(value), default=repr)
    except Exception:
        return repr(value)


def _searched(param: Any) -> str:
    from olive.search.search_parameter import Categorical

    if param is None:
        return "-"
    if isinstance(param, Categorical):
        return _code(json.dumps(param.get_support(), default=repr))
    return _code(repr(param))


def _pass_section(registry: Any, entry: Any) -> list[str]:
    from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR
    from olive.passes.param_types import describe_type

    lines = [f"### {entry.name}", "", f"From **{entry.distribution}** {entry.version} (`{entry.value}`).", ""]
    try:
        pass_class = registry.get_pass_class(entry.qualified_name)
        params = pass_class.default_config(DEFAULT_CPU_ACCELERATOR)
    except Exception as exc:
        # A pass that cannot load here (a dependency this environment lacks) is listed, with the reason.
        return [*lines, f"Its config could not be read here: {_cell(f'{type(exc).__name__}: {exc}')}", ""]
    doc = inspect.cleandoc(pass_class.__dict__.get("__doc__") or "")
    if doc:
        lines += [" ".join(doc.split("\n\n")[0].split()), ""]
    if not params:
        return [*lines, "This pass has no config params.", ""]
    lines += ["| param | type | default | searched | description |", "|---|---|---|---|---|"]
    for key, param in params.items():
        default = "(required)" if param.required else _code(_json(param.default_value))
        lines.append(
            f"| `{key}` | {_code(describe_type(param.type_))} | {default} | {_searched(param.search_defaults)} "
            f"| {_cell(param.description or '') or '-'} |"
        )
    lines.append("")
    return lines


def pass_reference() -> str:
    """The pass reference page: every pass the installed distributions register, with its config params."""
    from olive.plugins.registry import get_registry

    registry = get_registry()
    entries = registry.entries()
    distributions = sorted({(e.distribution, e.version) for e in entries})
    lines = [
        "# Pass reference",
        "",
        "Generated when the docs are built from the `olive.passes` entry points of the distributions installed",
        "there, and from each pass's own config (`_default_config`): the same data `olive passes NAME` prints.",
        "This build saw: " + (", ".join(f"{d} {v}" for d, v in distributions) or "no pass distribution") + ".",
        "Passes of other distributions (olive-passes-torch, olive-passes-genai, yours) are listed by",
        "`olive passes` where they are installed; their READMEs describe them ([packages](../packages.md)).",
        "",
        "A *searched* column gives the values a search tries when the workflow leaves the param out. Defaults",
        "are read for the CPU target of the machine that built this page: one that follows the CPU (such as",
        "`reduce_range`, which says so in its description) may differ on yours; `olive passes NAME` shows yours.",
        "",
    ]
    for distribution, _version in distributions:
        lines += [f"## {distribution}", ""]
        for entry in (e for e in entries if e.distribution == distribution):
            lines += _pass_section(registry, entry)
    return "\n".join(lines).rstrip() + "\n"


def write_reference(docs_dir: Path = DOCS) -> list[Path]:
    """Write the generated pages under ``docs_dir``; a page whose text did not change is left untouched (so
    ``mkdocs serve`` does not rebuild for nothing). Returns the pages' paths."""
    written = []
    for relative, text in zip(GENERATED, (cli_reference(), pass_reference()), strict=True):
        path = docs_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for page in write_reference():
        print(page)
    sys.exit(0)
