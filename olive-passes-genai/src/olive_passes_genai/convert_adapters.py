"""``olive convert-adapters``: a PEFT LoRA folder to an adapter file for a base decoder, without rebuilding the base.

Microsoft Olive's command and flags: ``-a/--adapter_path``, ``-o/--output_path``, ``--adapter_format``
(``onnx_adapter``, ``numpy``, ``safetensors``), ``--dtype`` (``float32``, ``float16``), ``--quantize_int4``,
``--int4_block_size``, ``--int4_quantization_mode``. One more: ``--base_model``, the decoder folder (or ``.onnx``
file) ``ExtractAdapters`` wrote; the adapter's weights are named as its adapter inputs and checked against them
(name, width, a fixed rank, dtype) before the file is written. Without it the names are the ones the builder
gives, unchecked, and the command says so.
"""

from __future__ import annotations

from pathlib import Path

import click

# ExtractAdapters' save formats (kept here too: the options are read without importing the pass module).
FORMATS = ("onnx_adapter", "numpy", "safetensors")


@click.command("convert-adapters")
@click.option(
    "-a", "--adapter_path", required=True, help="The PEFT LoRA adapter folder (adapter_config.json + weights)."
)
@click.option(
    "-o", "--output_path", required=True, help="The adapter file to write (the format's extension is added if missing)."
)
@click.option("--adapter_format", type=click.Choice(FORMATS), default="onnx_adapter", show_default=True)
@click.option("--dtype", type=click.Choice(["float32", "float16"]), default="float32", show_default=True)
@click.option("--quantize_int4", is_flag=True, help="Quantize the adapter weights to int4 (blockwise).")
@click.option("--int4_block_size", type=click.Choice(["16", "32", "64", "128", "256"]), default="32", show_default=True)
@click.option(
    "--int4_quantization_mode", type=click.Choice(["symmetric", "asymmetric"]), default="symmetric", show_default=True
)
@click.option(
    "--base_model",
    default=None,
    help="The decoder folder (or .onnx file) ExtractAdapters wrote: the adapter's names and shapes are checked "
    "against its adapter inputs before the file is written.",
)
@click.option("--log_level", type=int, default=None, hidden=True, help="Accepted for Olive's command lines.")
def convert_adapters(
    adapter_path: str,
    output_path: str,
    adapter_format: str,
    dtype: str,
    quantize_int4: bool,
    int4_block_size: str,
    int4_quantization_mode: str,
    base_model: str | None,
    log_level: int | None,
) -> None:
    """Convert a PEFT LoRA adapter to a file a base decoder built by ModelBuilder + ExtractAdapters takes."""
    from olive.exceptions import PassRunError, WorkflowConfigError

    # The conversion imports olive's pass machinery (and numpy, onnx, torch when it runs); `olive --help`, which
    # lists this command, imports none of it.
    from olive_passes_genai.adapters import convert_adapter_folder

    try:
        written, checked = convert_adapter_folder(
            Path(adapter_path),
            Path(output_path),
            adapter_format,
            dtype,
            quantize_int4,
            int(int4_block_size),
            int4_quantization_mode == "symmetric",
            Path(base_model) if base_model else None,
        )
    except (WorkflowConfigError, PassRunError, ValueError) as exc:
        click.echo(f"olive convert-adapters: {exc}", err=True)
        raise SystemExit(2) from None
    if not checked:
        click.echo(
            "olive convert-adapters: no --base_model given, so the names (the builder's) are not checked against a "
            "base model's inputs; give --base_model to check",
            err=True,
        )
    click.echo(f"Exported adapter weights to {written}")
