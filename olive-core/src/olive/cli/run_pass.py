"""``olive run-pass``: run one pass on one model, without a workflow."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import click

from olive.cli.failure import fail
from olive.config_errors import check_document, load_json, printable, user_path
from olive.exceptions import (
    ExecutionProviderError,
    ModelLoadError,
    OliveError,
    PassRunError,
    UnknownPassError,
    WorkflowConfigError,
)
from olive.hardware.constants import DEVICES
from olive.model.types import model_from_json

if TYPE_CHECKING:
    from olive.model.handler import OliveModelHandler


def _parse_config(text: str | None) -> dict:
    if not text:
        return {}
    is_file = False
    if not text.lstrip().startswith("{"):
        try:
            path = user_path(text, "--pass-config", None)
            is_file = path.is_file()
        except WorkflowConfigError:
            is_file = False
    if is_file:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise WorkflowConfigError(f"--pass-config: cannot read '{path}' ({exc})") from None
    try:
        data = load_json(text)
    except ValueError as exc:
        if not is_file and not text.lstrip().startswith(("{", "[")):
            raise WorkflowConfigError(
                f"--pass-config: '{printable(text)[:120]}' is neither a JSON object nor an existing file; give a "
                "JSON object (e.g. '{\"per_channel\": true}') or the path of a JSON file"
            ) from None
        where = f"file '{path}'" if is_file else "value"
        raise WorkflowConfigError(
            f"--pass-config: the {where} is not valid JSON ({exc}); give a JSON object or a JSON file"
        ) from None
    if not isinstance(data, dict):
        raise WorkflowConfigError("--pass-config: expected a JSON object of pass params")
    check_document(data, "--pass-config")
    return data


@click.command("run-pass")
@click.option("--pass-name", required=True, help="The pass to run (see `olive passes`).")
@click.option("--pass-config", default=None, help="Pass params as a JSON object, or a JSON file.")
@click.option(
    "-m",
    "--model",
    "model_path",
    required=True,
    type=click.Path(path_type=Path),
    help="The input model: an ONNX file or folder, or a Hugging Face model folder (config.json and weights; "
    "needs olive-passes-torch).",
)
@click.option(
    "--task",
    default=None,
    help="The task of a Hugging Face model folder (feature-extraction, text-classification...); default: the one "
    "its config.json was saved for.",
)
@click.option(
    "-o",
    "--output",
    "output_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Folder for the output model.",
)
@click.option(
    "--device",
    type=click.Choice(DEVICES, case_sensitive=False),
    default="cpu",
    show_default=True,
    help="Target device.",
)
@click.option("--execution-provider", default="CPUExecutionProvider", show_default=True)
@click.option("--verbose", "-v", is_flag=True, help="Show tracebacks of errors.")
def run_pass_command(
    pass_name: str,
    pass_config: str | None,
    model_path: Path,
    task: str | None,
    output_dir: Path,
    device: str,
    execution_provider: str,
    verbose: bool,
) -> None:
    """Run one pass on a model with the given params (no search, no cache)."""
    try:
        output = _run(pass_name, pass_config, model_path, output_dir, device, execution_provider, task)
    except OliveError as exc:
        fail(exc, verbose)
    click.echo(f"{pass_name}: wrote {output.model_path}")


def _run(
    pass_name: str,
    pass_config: str | None,
    model_path: Path,
    output_dir: Path,
    device: str,
    ep: str,
    task: str | None = None,
):
    # Loaded when the command runs, so `olive run-pass --help` stays instant.
    from olive.engine.output_writer import MODEL_FILE, claim_files, foreign_files, refuse_foreign
    from olive.hardware.accelerator import AcceleratorSpec, filter_execution_providers
    from olive.paths import system_folder_reason
    from olive.plugins.registry import get_registry

    config = _parse_config(pass_config)
    try:
        pass_class = get_registry().get_pass_class(pass_name)
    except UnknownPassError as exc:
        raise WorkflowConfigError(f"--pass-name: {exc}") from exc
    try:
        accelerator = AcceleratorSpec(device, filter_execution_providers([ep])[0])
    except ExecutionProviderError as exc:
        raise WorkflowConfigError(f"--execution-provider: {exc}") from exc
    model = _input_model(model_path, task)
    try:
        model.validate()
    except ModelLoadError as exc:
        raise WorkflowConfigError(f"--model: {exc.reason}") from exc
    except WorkflowConfigError as exc:
        raise WorkflowConfigError(exc.reason, owner=_OPTION_OF.get(exc.owner or "", "--model")) from exc
    if model.model_type not in pass_class.accepts_model_types:
        raise WorkflowConfigError(
            f"--model: {pass_name} takes {' or '.join(pass_class.accepts_model_types)} models, and '{model_path}' "
            f"is a {model.model_type}"
        )
    resolved = pass_class.generate_config(accelerator, config, disable_search=True, pass_key=pass_name)
    output_dir = user_path(str(output_dir), "--output", None, kind="folder")
    reason = system_folder_reason(output_dir)
    if reason is not None:
        raise WorkflowConfigError(
            f"--output: '{output_dir}' cannot hold the output model: {reason}; give a folder of its own"
        )
    if output_dir.is_dir():
        refuse_foreign(output_dir, foreign_files(output_dir, [MODEL_FILE]), WorkflowConfigError)
    created = not output_dir.exists()
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkflowConfigError(f"--output: cannot create the folder '{output_dir}' ({exc.strerror or exc})") from exc
    # The pass writes into a folder of its own; its files move into the output folder only once it
    # succeeded, and never over a file this tool did not write.
    staging = output_dir / f".olive-run-pass-{uuid.uuid4().hex[:8]}"
    instance = pass_class(accelerator, resolved)
    try:
        try:
            result = instance.run(model, str(staging))
        except BaseException as exc:
            if isinstance(exc, OliveError) and exc.owner in _OPTION_OF:
                raise type(exc)(exc.reason, owner=_OPTION_OF[exc.owner]) from exc
            if isinstance(exc, OliveError) or not isinstance(exc, Exception):
                raise
            raise PassRunError(f"pass {pass_name} failed: {type(exc).__name__}: {exc}") from exc
        produced = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())
        refuse_foreign(output_dir, foreign_files(output_dir, produced), WorkflowConfigError)
        claim_files(output_dir, produced)
        for rel in produced:
            (output_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).replace(output_dir / rel)
        return _moved(result, staging, output_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if created and not any(output_dir.iterdir()):
            output_dir.rmdir()


# Owners of the model fields' errors -> the option that gave the field.
_OPTION_OF = {"--model.type": "--model", "--model.model_path": "--model", "--model.task": "--task"}


def _input_model(model_path: Path, task: str | None) -> OliveModelHandler:
    """An ONNX model, or (a folder with a config.json and no .onnx file, or ``--task`` given) a Hugging Face one."""
    from olive.model.handler import ONNXModelHandler
    from olive.model.onnx_facts import is_hugging_face_folder
    from olive.model.types import handler_from_config

    path = user_path(str(model_path), "--model", None, must_exist=True)
    if task is None and not is_hugging_face_folder(path):
        return ONNXModelHandler(str(path))
    fields = {"type": "HfModel", "model_path": str(path), **({"task": task} if task is not None else {})}
    try:
        return handler_from_config(fields, "--model", Path.cwd())
    except WorkflowConfigError as exc:
        raise WorkflowConfigError(exc.reason, owner=_OPTION_OF.get(exc.owner or "", "--model")) from exc


def _moved(model: OliveModelHandler, staging: Path, output_dir: Path) -> OliveModelHandler:
    """The handler of ``model`` once its files moved from ``staging`` into ``output_dir``."""
    from olive.engine.trial import model_path_under

    data = model.to_json()
    rel = model_path_under(data, staging)
    if rel is not None:
        data["config"]["model_path"] = str(output_dir / rel)
    return model_from_json(data)
