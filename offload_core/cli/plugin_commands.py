"""``offload plugins``: what is installed."""

from __future__ import annotations

import json
from typing import Any

import click

from ..errors import mask_secret_text
from ..plugins import PluginManager


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per plugin, one per line.")
def plugins(as_json: bool) -> None:
    """List installed plugins, their distributions, and the drivers and
    ledger offloaders they add (with the drivers each offloader serves), and
    their chunk transforms; and each plugin that failed to import, with its
    error."""
    manager = PluginManager()
    drivers_by_plugin: dict[str, list[dict[str, Any]]] = {}
    for spec in manager.drivers():
        drivers_by_plugin.setdefault(spec.plugin.name, []).append(
            {"name": spec.name, "aliases": list(spec.aliases), "schemes": list(spec.schemes)}
        )
    offloaders_by_plugin: dict[str, list[dict[str, Any]]] = {}
    for offloader in manager.offloaders():
        offloaders_by_plugin.setdefault(offloader.plugin.name, []).append(
            {"name": offloader.name, "aliases": list(offloader.aliases), "serves": list(offloader.drivers)}
        )
    transforms_by_plugin: dict[str, list[dict[str, Any]]] = {}
    for transform, owner in manager.transforms():
        transforms_by_plugin.setdefault(owner.name, []).append({"name": transform.name, "version": transform.version})
    if as_json:
        rows = [
            {
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
                "group": info.group,
                "drivers": drivers_by_plugin.get(info.name, []),
                "offloaders": offloaders_by_plugin.get(info.name, []),
                "transforms": transforms_by_plugin.get(info.name, []),
                "error": None,
            }
            for info in manager.plugins()
        ]
        rows += [
            {
                "name": failure.plugin.name,
                "distribution": failure.plugin.distribution,
                "version": failure.plugin.version,
                "group": failure.plugin.group,
                "drivers": [],
                "offloaders": [],
                "transforms": [],
                "error": mask_secret_text(failure.error),
            }
            for failure in manager.failed()
        ]
        for plugin_row in rows:
            click.echo(json.dumps(plugin_row))
        return
    for info in manager.plugins():
        click.echo(f"{info.name:<24} {info.distribution} {info.version}  [{info.group}]")
        for driver in drivers_by_plugin.get(info.name, []):
            aliases = ", ".join(driver["aliases"]) or "-"
            schemes = ", ".join(f"{s}://" for s in driver["schemes"]) or "-"
            click.echo(f"    driver {driver['name']:<14} aliases: {aliases:<28} schemes: {schemes}")
        for row in offloaders_by_plugin.get(info.name, []):
            serves = ", ".join("any other driver" if d == "*" else d for d in row["serves"]) or "-"
            aliases = ", ".join(row["aliases"]) or "-"
            click.echo(f"    offloader {row['name']:<11} aliases: {aliases:<28} serves: {serves}")
        for row in transforms_by_plugin.get(info.name, []):
            click.echo(f"    transform {row['name']:<11} version {row['version']}")
    for failure in manager.failed():
        info = failure.plugin
        click.echo(f"{info.name:<24} {info.distribution} {info.version}  [{info.group}]")
        click.echo(f"    FAILED to import: {mask_secret_text(failure.error)}")
