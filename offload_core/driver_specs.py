"""What a driver registration records, and opening a driver from it.

A plugin registers a driver class, or, so that a command which never
opens that store does not import its SDK, the class's import path as
``"module:attribute"`` (entry-point syntax). The path is resolved the
first time the driver is needed.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, PluginLoadError
from .storage import StorageDriver

__all__ = ["DriverSpec", "PluginInfo", "construct", "driver_target"]


@dataclass(frozen=True)
class PluginInfo:
    """Where a loaded plugin came from."""

    name: str
    module: str
    group: str
    distribution: str
    version: str

    def describe(self) -> str:
        return f"{self.distribution} {self.version} (entry point {self.name!r} in {self.group})"


@dataclass(frozen=True)
class DriverSpec:
    """A registered storage driver. ``target`` is the class, or its import
    path (``"module:attribute"``) until :attr:`driver` is first read."""

    name: str
    target: type[StorageDriver] | str
    aliases: tuple[str, ...]
    schemes: tuple[str, ...]
    plugin: PluginInfo

    @functools.cached_property
    def driver(self) -> type[StorageDriver]:
        """The driver class. Raises :class:`PluginLoadError`, naming the
        plugin, when an import path does not import or does not name a
        :class:`StorageDriver`."""
        if not isinstance(self.target, str):
            return self.target
        module_name, _, attribute = self.target.partition(":")
        try:
            found: object = importlib.import_module(module_name)
            for part in attribute.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError) as exc:
            raise PluginLoadError(
                f"storage driver {self.name!r} of plugin {self.plugin.describe()}: {self.target!r} does not load "
                f"({type(exc).__name__}: {exc}); reinstall that distribution with its dependencies"
            ) from exc
        if isinstance(found, type) and issubclass(found, StorageDriver):
            return found
        raise PluginLoadError(
            f"plugin {self.plugin.describe()} registered {self.target!r}, which is {found!r}, not a StorageDriver"
        )


def driver_target(target: object, plugin: PluginInfo) -> type[StorageDriver] | str:
    """``target`` checked as a registration: a :class:`StorageDriver`
    subclass, or an import path ``"module:attribute"``. Raises
    :class:`PluginLoadError` naming ``plugin`` otherwise."""
    if isinstance(target, str):
        module_name, colon, attribute = target.partition(":")
        parts = [*module_name.split("."), *attribute.split(".")]
        if colon and all(part.isidentifier() for part in parts):
            return target
        raise PluginLoadError(
            f"plugin {plugin.describe()} registered the driver path {target!r}; write it as 'module:Class'"
        )
    if isinstance(target, type) and issubclass(target, StorageDriver):
        return target
    raise PluginLoadError(f"plugin {plugin.describe()} registered {target!r}, which is not a StorageDriver")


def construct(
    spec: DriverSpec, factory: Callable[..., StorageDriver], url: str | None, options: dict[str, Any]
) -> StorageDriver:
    """``factory(url, **options)`` (or ``factory(**options)``), after
    checking ``options`` against its signature. Raises
    :class:`ConfigError` for an option it does not take (suggesting the
    closest) or a required one missing."""
    parameters = _keyword_parameters(factory, skip_first=url is not None)
    accepted = _accepted_options(parameters, factory, spec.driver)
    if accepted is not None:
        for option in options:
            if option not in accepted:
                close = difflib.get_close_matches(option, accepted, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    f"storage driver {spec.name!r} does not take the option {option!r}{hint} "
                    f"(it takes: {', '.join(accepted) or 'no options'})"
                )
        missing = [name for name in _required_options(parameters or []) if name not in options]
        if missing:
            raise ConfigError(f"storage driver {spec.name!r} needs the option(s) {', '.join(missing)}")
    # A TypeError raised inside the constructor is the driver's bug and
    # propagates as one; only a mismatch with its signature is ours to report.
    return factory(url, **options) if url is not None else factory(**options)


def _keyword_parameters(function: Callable[..., Any], *, skip_first: bool) -> list[inspect.Parameter] | None:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    if (
        skip_first
        and parameters
        and parameters[0].kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ):
        parameters = parameters[1:]  # fmt: skip
    return [p for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL]


def _accepted_options(
    parameters: list[inspect.Parameter] | None, factory: Callable[..., Any], driver: type[StorageDriver]
) -> list[str] | None:
    """The options ``factory`` (whose keyword ``parameters`` are given)
    takes; a ``from_url(url, **options)`` that passes them on takes what the
    driver class's ``__init__`` does. ``None`` when that cannot be told."""
    if parameters is None:
        return None
    names = [p.name for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        if factory is driver:
            return None
        inner = _keyword_parameters(driver.__init__, skip_first=True)
        if inner is None or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inner):
            return None
        names += [p.name for p in inner if p.name not in names]
    return names


def _required_options(parameters: list[inspect.Parameter]) -> list[str]:
    return [
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
