"""``olive eps``: the execution providers onnxruntime offers here, built in or from plugin packages."""

from __future__ import annotations

import json

import click


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
    if as_json:
        click.echo(json.dumps([status.to_json() for status in statuses], indent=2))
        return

    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Execution providers", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("Provider", no_wrap=True)
    table.add_column("Kind", no_wrap=True)
    table.add_column("Package", overflow="fold")
    table.add_column("Devices", overflow="fold")
    table.add_column("Status", overflow="fold")
    for status in statuses:
        devices = "\n".join(
            f"{d['ep_name']} on {d['device']}" + (f" ({d['name']})" if d.get("name") else "") for d in status.devices
        )
        package = f"{status.package} {status.version}" if status.version else status.package or "-"
        state = status.status if not status.error else f"{status.status}: {status.error}"
        table.add_row(status.name, status.kind, escape(package), escape(devices or "-"), escape(state))
    Console().print(table)
