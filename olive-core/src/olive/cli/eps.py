"""``olive eps``: the execution providers onnxruntime offers here, built in or from plugin packages."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from olive.cli.layout import minimum_width

if TYPE_CHECKING:
    from olive.execution_providers.registry import ProviderStatus


@click.command("eps")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def eps_command(as_json: bool) -> None:
    """List onnxruntime's built-in execution providers and every plugin provider Olive knows, with its devices
    and status.

    Plugin providers come from pip packages ("pip install onnxruntime-ep-openvino") through the
    olive.execution_providers entry points; each library is loaded to list its devices. One that is not
    installed, does not load or finds no device is shown with the reason; the others are unaffected.
    """
    from olive.execution_providers.registry import list_providers

    statuses = list_providers()
    for status in statuses:
        if status.name == "CPUExecutionProvider" and not status.devices:
            status.devices.append(_cpu_device())
    if as_json:
        click.echo(json.dumps([status.to_json() for status in statuses], indent=2))
        return

    from rich.console import Console

    console = Console()
    rows = [_row(status) for status in statuses]
    table = _table(rows)
    # Rich would squeeze a table wider than the terminal by cutting words; measure, and give each provider
    # a block of lines when it does not fit.
    if minimum_width(table, console.width) <= console.width:
        console.print(table)
    else:
        _print_blocks(console, rows)


def _cpu_device() -> dict[str, Any]:
    """The CPU the CPU provider runs on, with what its int8 MatMul does here (measured): latency and int8
    agreement differ between CPUs, so a report names it."""
    from olive.hardware.cpu import describe_cpu
    from olive.measure.int8_kernel import int8_matmul

    saturates = int8_matmul().saturates
    return {
        "ep_name": "CPUExecutionProvider",
        "device": "cpu",
        "name": describe_cpu(),
        "int8_matmul": "saturating" if saturates else "exact",
    }


def _row(status: ProviderStatus) -> tuple[str, str, str, list[str], str]:
    devices = [
        f"{d['ep_name']} on {d['device']}"
        + (f" ({d['name']})" if d.get("name") else "")
        + (f"; int8 MatMul {d['int8_matmul']}" if d.get("int8_matmul") else "")
        for d in status.devices
    ]
    package = f"{status.package} {status.version}" if status.version else status.package or "-"
    state = status.status if not status.error else f"{status.status}: {status.error}"
    return status.name, status.kind, package, devices, state


def _longest_word(texts: list[str]) -> int:
    return max((len(word) for text in texts for word in text.split()), default=1)


def _table(rows: list[tuple[str, str, str, list[str], str]]) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Execution providers", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("Provider", no_wrap=True)
    table.add_column("Kind", no_wrap=True)
    # Wrapped between words only: each column is as wide as its longest word.
    for name, index in (("Package", 2), ("Devices", 3), ("Status", 4)):
        texts = [t for row in rows for t in (row[index] if isinstance(row[index], list) else [row[index]])]
        table.add_column(name, min_width=max(_longest_word(texts), len(name)))
    for name, kind, package, devices, state in rows:
        table.add_row(name, kind, Text(package), Text("\n".join(devices) or "-"), Text(state))
    return table


def _print_blocks(console: Any, rows: list[tuple[str, str, str, list[str], str]]) -> None:
    from rich.padding import Padding
    from rich.text import Text

    console.print("Execution providers", style="bold")
    for name, kind, package, devices, state in rows:
        console.print(Padding(Text(name), (0, 0, 0, 2), expand=False))
        lines = [f"{kind}, {package}", *(f"device: {d}" for d in devices), f"status: {state}"]
        for line in lines:
            # Continuation lines keep the indent, so a wrapped line still reads as the provider's.
            console.print(Padding(Text(line), (0, 0, 0, 4), expand=False))
