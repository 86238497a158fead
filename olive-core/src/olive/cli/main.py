"""The ``olive`` command: a click group whose subcommands load only when they run.

``olive --help`` lists commands from the table below without importing their modules; plugin
distributions add commands through the ``olive_register_commands`` hook.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from olive import __version__
from olive.cli.failure import EXIT_FAILED, error_line, exit_code, fail
from olive.exceptions import OliveError, PluginLoadError

#: name -> ("module:attribute", one-line help shown by ``olive --help``)
COMMANDS: dict[str, tuple[str, str]] = {
    "optimize": (
        "olive.cli.optimize:optimize_command",
        "Optimize a model (ONNX or Hugging Face folder) into the fastest model that keeps its outputs.",
    ),
    "quantize": (
        "olive.cli.optimize:quantize_command",
        "Quantize a model (Microsoft Olive's flags; no graph rewrites).",
    ),
    "run": ("olive.cli.run:run_command", "Run a workflow config (JSON or YAML)."),
    "run-pass": ("olive.cli.run_pass:run_pass_command", "Run one pass on a model."),
    "passes": ("olive.cli.passes:passes_command", "List installed passes, or show one pass's config."),
    "plugins": ("olive.cli.plugins:plugins_command", "List plugin distributions and their status."),
    "eps": ("olive.cli.eps:eps_command", "List execution providers (built in and plugin) and their devices."),
    "cache": ("olive.cli.cache:cache_group", "Inspect or clean the cache."),
    "new-pass": ("olive.cli.new_pass:new_pass_command", "Create a new pass distribution from the template."),
    "quickstart": ("olive.cli.quickstart:quickstart_command", "Optimize a model with sensible defaults."),
}


def _unavailable(name: str, target: str, exc: BaseException) -> click.Command:
    def callback(**_: Any) -> None:
        module = target.partition(":")[0]
        if isinstance(exc, ModuleNotFoundError) and exc.name and module.startswith(exc.name):
            reason = f"its module {module} is not part of this installation"
        elif isinstance(exc, ModuleNotFoundError) and exc.name:
            reason = f"it needs the module '{exc.name}', which is not installed; install the package that provides it"
        else:
            reason = f"loading {target} failed: {type(exc).__name__}: {exc}"
        error_line(f"command '{name}' is not available: {reason}")
        sys.exit(EXIT_FAILED)

    return click.Command(
        name,
        callback=callback,
        help=f"(not available: {type(exc).__name__})",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


class OliveGroup(click.Group):
    """Loads built-in commands from :data:`COMMANDS` on use and plugin commands on a miss."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._plugin_manager: Any = None
        self._plugin_command_names: set[str] = set()

    def _load_plugin_commands(self) -> None:
        manager_module = sys.modules.get("olive.plugins.manager")
        pm = manager_module._manager.current() if manager_module is not None else None
        if pm is None:
            # Without hook plugins installed there is nothing to add: skip importing pluggy at all.
            from olive.plugins.discovery import PLUGINS_GROUP, iter_entry_points

            if next(iter_entry_points(PLUGINS_GROUP), None) is not None:
                from olive.plugins.manager import get_plugin_manager

                pm = get_plugin_manager()
        if pm is self._plugin_manager:
            return
        # A different plugin manager (tests swap them) brings its own commands.
        for name in self._plugin_command_names:
            self.commands.pop(name, None)
        self._plugin_manager, self._plugin_command_names = pm, set()
        if pm is None or not pm.hook.olive_register_commands.get_hookimpls():
            return
        before = set(self.commands)
        for impl in pm.hook.olive_register_commands.get_hookimpls():
            try:
                impl.function(**{arg: self for arg in impl.argnames})
            except Exception as exc:
                from olive.plugins.discovery import describe_exception

                message = f"plugin {pm.get_name(impl.plugin)}: olive_register_commands raised {describe_exception(exc)}"
                if pm.policy_strict:
                    raise PluginLoadError(message) from exc
                click.echo(f"Warning: {message}; its commands are unavailable", err=True)
        self._plugin_command_names = set(self.commands) - before
        for name in sorted(self._plugin_command_names & set(COMMANDS)):
            # Olive's own commands win; a plugin cannot replace `olive run`.
            self.commands.pop(name)
            self._plugin_command_names.discard(name)
            click.echo(f"Warning: a plugin adds a command '{name}', which is Olive's own; it is ignored", err=True)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands()
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            target = COMMANDS[cmd_name][0]
            module, _, attribute = target.partition(":")
            try:
                command = getattr(importlib.import_module(module), attribute)
            except (ImportError, AttributeError) as exc:
                return _unavailable(cmd_name, target, exc)
            return command
        self._load_plugin_commands()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Help text of built-in commands comes from the table so --help imports none of them.
        rows = []
        for name in self.list_commands(ctx):
            if name in COMMANDS:
                rows.append((name, COMMANDS[name][1]))
            else:
                command = self.commands.get(name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(limit=formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OliveError as exc:
            error_line(exc)
            ctx.exit(exit_code(exc))
        except click.UsageError as exc:
            # One line, as every invalid input gets, instead of click's usage block; --help shows the usage.
            command = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            error_line(f"{exc.format_message()} (see '{command} --help')")
            ctx.exit(exc.exit_code)


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    import platform

    click.echo(f"olive-core {__version__} (Python {platform.python_version()})")
    try:
        from olive.plugins.discovery import PASSES_GROUP, PLUGINS_GROUP, iter_entry_points

        passes = sorted({(f.distribution, f.version) for f in iter_entry_points(PASSES_GROUP)})
        hooks = sorted({(f.distribution, f.version) for f in iter_entry_points(PLUGINS_GROUP)})
    except Exception as exc:  # a broken metadata file must not hide the version
        click.echo(f"plugins: cannot read metadata ({type(exc).__name__}: {exc})")
    else:
        click.echo("passes: " + (", ".join(f"{d}-{v}" for d, v in passes) or "(none)"))
        if hooks:
            click.echo("plugins: " + ", ".join(f"{d}-{v}" for d, v in hooks))
    ctx.exit()


@click.group(cls=OliveGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show olive-core's version and the installed plugin distributions.",
)
def cli() -> None:
    """Olive: optimize ONNX models with plugin passes and search for the best combination."""


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``olive`` script."""
    try:
        cli.main(args=argv, prog_name="olive")
    except OliveError as exc:  # raised while parsing, e.g. a broken plugin in strict mode during --help
        fail(exc)


if __name__ == "__main__":
    main()
