"""``olive new-pass``: create a pass distribution from the plugin template.

The template is a cookiecutter template (``plugin-template/`` in the repository, shipped inside the
olive-core wheel as ``olive/_template``). Every name is derived from one human pass name and can be
overridden; all of them are checked by the template's own ``pre_gen_project`` hook, which this command
also calls before cookiecutter runs, so that a bad name writes nothing at all.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import click

import olive
from olive.cli.failure import fail
from olive.config_errors import user_path
from olive.exceptions import TemplateError
from olive.plugins.install_hints import install_line

__all__ = ["find_template", "new_pass_command", "render_pass_project", "resolve_answers"]

#: Template variables a user sets, in prompt order, with the command-line option for each.
OPTIONS = {
    "pass_name": "--name",
    "class_name": "--class-name",
    "distribution_name": "--distribution-name",
    "module_name": "--module-name",
    "description": "--description",
    "author": "--author",
    "license": "--license",
    "olive_core_min_version": "--olive-core-min-version",
}


def find_template() -> Path:
    """The template folder: the copy inside the installed package, else the repository's."""
    package_dir = Path(olive.__file__).resolve().parent
    for candidate in (package_dir / "_template", package_dir.parents[2] / "plugin-template"):
        if (candidate / "cookiecutter.json").is_file():
            return candidate
    raise TemplateError(
        f"the pass template is not part of this olive-core installation (looked in {package_dir / '_template'} "
        "and the repository's plugin-template folder); reinstall olive-core or give --template PATH"
    )


def _load_hook(template: Path) -> ModuleType | None:
    # The hook keeps its Jinja placeholder inside a string, so the unrendered file imports as it is.
    path = template / "hooks" / "pre_gen_project.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("_olive_template_pre_gen_project", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:
        return None  # another template's hook that only runs as a script; cookiecutter still runs it
    return module if callable(getattr(module, "problems", None)) else None


def _import_cookiecutter() -> None:
    try:
        import cookiecutter  # noqa: F401
    except ImportError as exc:
        raise TemplateError(
            f"olive new-pass needs cookiecutter: {install_line('olive-core', 'template')} (or pip install cookiecutter)"
        ) from exc


def resolve_answers(
    given: dict[str, str | None], template: Path | None = None, interactive: bool = False
) -> dict[str, str]:
    """Every template variable's value: ``given`` ones as they are, the rest derived (or asked for).

    Raises :class:`TemplateError` listing every name the template's hook rejects.
    """
    _import_cookiecutter()
    from cookiecutter.environment import StrictEnvironment
    from cookiecutter.prompt import render_variable
    from jinja2 import TemplateError as JinjaError

    template = template or find_template()
    raw_context = json.loads((template / "cookiecutter.json").read_text(encoding="utf-8"))
    env = StrictEnvironment(context={"cookiecutter": raw_context})
    labels = raw_context.get("__prompts__", {})
    answers: dict[str, str] = {}
    for key, raw in raw_context.items():
        if key.startswith("_"):
            continue
        value = given.get(key)
        if isinstance(raw, list):
            choices = [str(choice) for choice in raw]
            if value is None and interactive:
                value = click.prompt(labels.get(key, key), type=click.Choice(choices), default=choices[0])
            value = choices[0] if value is None else value
            if value not in choices:
                option = OPTIONS.get(key, key)
                raise TemplateError(f"{option} {value!r} is not one of {', '.join(choices)}")
        elif value is None:
            try:
                value = render_variable(env, raw, answers)
            except JinjaError as exc:
                raise TemplateError(f"cannot derive {key} from the answers before it: {exc}") from exc
            if interactive:
                value = click.prompt(labels.get(key, key), default=value)
        answers[key] = str(value)

    hook = _load_hook(template)
    problems = hook.problems(answers) if hook is not None else []
    if problems:
        # The hook names template variables; say which option sets each one.
        for key, option in OPTIONS.items():
            problems = [f"{option}{p[len(key) :]}" if p.startswith(f"{key} ") else p for p in problems]
        raise TemplateError("; ".join(problems))
    return answers


def render_pass_project(answers: dict[str, str], output_dir: str | Path = ".", template: Path | None = None) -> Path:
    """Render the template with complete ``answers`` (see :func:`resolve_answers`); returns the project folder."""
    _import_cookiecutter()
    from cookiecutter.exceptions import CookiecutterException, FailedHookException, OutputDirExistsException
    from cookiecutter.main import cookiecutter

    template = template or find_template()
    output_dir = user_path(str(output_dir), "--output-dir", None, kind="folder").resolve()
    target = output_dir / answers.get("distribution_name", "")
    if target != output_dir and target.exists():
        raise TemplateError(f"folder {target} already exists; remove it or choose another --output-dir")
    # Cookiecutter renders every value as a Jinja template; a user's text must come out as typed.
    extra_context = {key: _verbatim(value) for key, value in answers.items()}
    with tempfile.TemporaryDirectory(prefix="olive-new-pass-") as scratch:
        # A private config keeps the user's cookiecutter defaults out and its replay file out of $HOME.
        config_file = Path(scratch) / "config.yaml"
        config_file.write_text(
            f"cookiecutters_dir: {json.dumps(scratch)}\nreplay_dir: {json.dumps(scratch)}\n", encoding="utf-8"
        )
        try:
            project = cookiecutter(
                str(template),
                no_input=True,
                extra_context=extra_context,
                output_dir=str(output_dir),
                config_file=str(config_file),
            )
        except FailedHookException as exc:
            raise TemplateError(
                f"the template's pre_gen_project hook rejected the answers ({exc}); its messages are above"
            ) from exc
        except OutputDirExistsException as exc:
            raise TemplateError(f"{exc}; remove it or choose another --output-dir") from exc
        except CookiecutterException as exc:
            raise TemplateError(f"cannot render the pass template {template}: {exc}") from exc
    return Path(project)


def _verbatim(value: str) -> str:
    if "{" in value or "%" in value:
        return "{% raw %}" + value + "{% endraw %}"
    return value


@click.command("new-pass")
@click.option("--name", "pass_name", help="The pass's name in words, e.g. 'Strip Doc Strings'.")
@click.option("--class-name", help="Class name and workflow name (default: derived from --name).")
@click.option("--distribution-name", help="Distribution name (default: olive-pass-<name>).")
@click.option("--module-name", help="Import package name (default: the distribution name with underscores).")
@click.option("--description", help="One-line description.")
@click.option("--author", help="Author name.")
@click.option("--license", "license_", help="SPDX license: MIT, Apache-2.0 or BSD-3-Clause.")
@click.option("--olive-core-min-version", help="Lowest olive-core version the pass supports.")
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Folder to create the project in.",
)
@click.option("--no-input", is_flag=True, help="Ask nothing: derive what is not given (needs --name).")
@click.option(
    "--template",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Another cookiecutter template folder (default: the one shipped with olive-core).",
)
@click.pass_context
def new_pass_command(ctx: click.Context, no_input: bool, output_dir: Path, template: Path | None, **given: Any) -> None:
    """Create a pass distribution: a package with the pass, its entry point, tests and tox config.

    Interactive by default; with --no-input every name not given is derived from --name.
    """
    given["license"] = given.pop("license_")
    try:
        if no_input and not given.get("pass_name"):
            raise TemplateError("--no-input needs --name (the pass's name in words, e.g. 'Strip Doc Strings')")
        answers = resolve_answers(given, template, interactive=not no_input)
        project = render_pass_project(answers, output_dir, template)
    except TemplateError as exc:
        # A missing dependency is not the user's input (1); everything else is a name or folder to change (2).
        fail(exc)
    click.echo(f"Created {project}")
    click.echo(f"Pass {answers['class_name']} in distribution {answers['distribution_name']}. Next:")
    click.echo(f"  cd {project}")
    click.echo('  pip install -e ".[test]"')
    click.echo("  pytest")
