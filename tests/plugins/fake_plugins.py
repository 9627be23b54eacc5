"""Plugins as a third party would ship them: an installed-looking
distribution with an entry point, and a plugin registering drivers."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from offload_core import PluginManager, hookimpl


def install_fake_distribution(
    site: Path, dist: str, entry_point: str, module: str, source: str, group: str = "offload_core.drivers"
) -> None:
    """Make an installed-looking distribution under ``site`` (on sys.path)."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 9.9\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry_point} = {module}\n")


def with_drivers(*registrations: tuple[Any, dict[str, Any]]) -> PluginManager:
    """A plugin manager (no entry points) holding one plugin that registers
    each ``(driver, keyword arguments)`` as a third party's plugin would."""

    class Plugin:
        @hookimpl
        def offload_core_register_drivers(self, register):  # type: ignore[no-untyped-def]
            for driver, options in registrations:
                register(driver, **options)

    manager = PluginManager(load_entry_points=False)
    manager.register(Plugin())
    return manager
