"""Plugin discovery and the registries built from it.

Plugins come from two entry-point groups, ``offload_core.drivers`` and
``offload_core.plugins``. The core's own plugins (:data:`BUILTIN_PLUGINS`)
go through the same registration path but are always loaded, as pytest
does with its built-ins. Two environment variables steer loading:

``OFFLOAD_CORE_PLUGINS``
    Comma-separated allow-list of entry-point (or distribution) names: only
    these installed plugins load. Naming one that is not installed is an
    error.
``OFFLOAD_CORE_DISABLE_PLUGIN_AUTOLOAD``
    Any value but ``""``/``"0"``: load no installed plugin except those
    named in ``OFFLOAD_CORE_PLUGINS``.

An installed plugin that fails to import (any exception) is left out and
reported by name, not swallowed: :meth:`PluginManager.failed` lists it, and
a driver, transform or offloader that nothing loaded names it as the
possible provider. The other plugins work as usual.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pluggy

from . import hooks
from .driver_specs import DriverSpec, PluginInfo, construct
from .errors import ConfigError, PluginLoadError, TransformNotInstalledError
from .hooks import Event, LeftoverSource, MetricsServer, Transform
from .registries import (
    ENV_ALLOW,
    OffloaderSpec,
    Registries,
    driver_registrar,
    install_hint,
    not_installed,
    offloader_registrar,
    transform_registrar,
)
from .storage import StorageDriver

__all__ = [
    "BUILTIN_PLUGINS",
    "DriverSpec",
    "ENTRY_POINT_GROUPS",
    "ENV_ALLOW",
    "ENV_DISABLE_AUTOLOAD",
    "OffloaderSpec",
    "PluginFailure",
    "PluginInfo",
    "PluginManager",
    "default_plugin_manager",
    "open_driver",
]

ENTRY_POINT_GROUPS = ("offload_core.drivers", "offload_core.plugins")
ENV_DISABLE_AUTOLOAD = "OFFLOAD_CORE_DISABLE_PLUGIN_AUTOLOAD"
BUILTIN_PLUGINS: tuple[str, ...] = (
    "offload_core.memory",
    "offload_core.offload.ledger",
    "offload_core.offload.mapfile.mapfile_plugin",
)

_Missing = TypeVar("_Missing", bound=ConfigError)  # what a lookup of something nothing registers raises


@dataclass(frozen=True)
class PluginFailure:
    """An installed plugin that failed to import, and why (``error``: the
    exception's type and message, one line)."""

    plugin: PluginInfo
    error: str

    def describe(self) -> str:
        return (
            f"plugin {self.plugin.describe()} failed to import ({self.error}); reinstall or uninstall "
            f"{self.plugin.distribution}, or leave it out with {ENV_ALLOW}"
        )


class PluginManager:
    """Loads plugins and answers "which driver/offloader/transform is X".

    Construct one per application (there is no process-global instance).
    ``environ`` defaults to ``os.environ``; ``load_entry_points=False``
    loads only the built-ins and what is passed to :meth:`register`.

    An installed plugin that fails to import is left out and listed by
    :meth:`failed`. Raises :class:`PluginLoadError` when the allow-list
    names a plugin that is not installed.
    """

    def __init__(self, *, load_entry_points: bool = True, environ: Mapping[str, str] | None = None) -> None:
        self._pm = pluggy.PluginManager(hooks.PROJECT)
        self._pm.add_hookspecs(hooks)
        self._infos: dict[str, PluginInfo] = {}
        self._failures: list[PluginFailure] = []
        self._registries: Registries | None = None
        env = os.environ if environ is None else environ
        for module_name in BUILTIN_PLUGINS:
            module = importlib.import_module(module_name)
            self.register(module, info=_builtin_info(module_name))
        if load_entry_points:
            self._load_entry_points(env)

    def register(self, plugin: object, *, info: PluginInfo | None = None) -> None:
        """Register a plugin object (a module or any object with hookimpls).

        Plugins registered after a registry was built are taken into account
        at the next lookup."""
        if info is None:
            module = getattr(plugin, "__name__", type(plugin).__name__)
            info = PluginInfo(name=module, module=module, group="(registered)", distribution=module, version="")
        self._pm.register(plugin, name=info.name)
        self._infos[info.name] = info
        self._registries = None

    def plugins(self) -> list[PluginInfo]:
        """Every loaded plugin, built-ins first."""
        return list(self._infos.values())

    def failed(self) -> list[PluginFailure]:
        """Every installed plugin that failed to import, in loading order."""
        return list(self._failures)

    # -- loading ---------------------------------------------------------

    def _load_entry_points(self, env: Mapping[str, str]) -> None:
        allow = {name.strip() for name in env.get(ENV_ALLOW, "").split(",") if name.strip()}
        autoload = env.get(ENV_DISABLE_AUTOLOAD, "") in ("", "0")
        candidates = [ep for group in ENTRY_POINT_GROUPS for ep in importlib_metadata.entry_points(group=group)]
        if allow:
            known = {ep.name for ep in candidates} | {_dist_name(ep) for ep in candidates}
            missing = sorted(allow - known)
            if missing:
                raise PluginLoadError(
                    f"{ENV_ALLOW} names {', '.join(map(repr, missing))}, but no installed plugin has that "
                    f"entry-point or distribution name; installed: {', '.join(sorted(known)) or 'none'}"
                )
        for ep in candidates:
            selected = ep.name in allow or _dist_name(ep) in allow
            if (allow and not selected) or (not autoload and not selected):
                continue
            if ep.name in self._infos:
                continue
            info = PluginInfo(
                name=ep.name, module=ep.value, group=ep.group, distribution=_dist_name(ep), version=_dist_version(ep)
            )
            try:
                plugin = ep.load()
            except Exception as exc:  # a third party's module may raise anything at import
                first_line = (str(exc).splitlines() or [""])[0]
                self._failures.append(PluginFailure(info, f"{type(exc).__name__}: {first_line}".rstrip(": ")))
                continue
            self.register(plugin, info=info)

    # -- registries ------------------------------------------------------

    def _build(self) -> Registries:
        if self._registries is not None:
            return self._registries
        registries = Registries()
        registrars = (
            ("offload_core_register_drivers", driver_registrar),
            ("offload_core_register_offloaders", offloader_registrar),
            ("offload_core_register_transforms", transform_registrar),
        )
        for hook_name, make_registrar in registrars:
            for plugin_name, call in self._callers_by_plugin(hook_name):
                call(register=make_registrar(registries, self._infos[plugin_name]))
        self._registries = registries
        return registries

    def _callers_by_plugin(self, hook_name: str) -> list[tuple[str, pluggy.HookCaller]]:
        """One hook caller per plugin implementing ``hook_name`` (pluggy's
        ``subset_hook_caller``), so each call goes through pluggy (its
        argument handling, tracing and wrappers) and what it registers is
        attributed to the plugin that did."""
        implementers = {impl.plugin_name: impl.plugin for impl in getattr(self._pm.hook, hook_name).get_hookimpls()}
        everyone = self._pm.get_plugins()
        return [
            (name, self._pm.subset_hook_caller(hook_name, remove_plugins=[p for p in everyone if p is not plugin]))
            for name, plugin in implementers.items()
        ]

    def drivers(self) -> list[DriverSpec]:
        """Every registered driver, sorted by name."""
        registries = self._build()
        unique = {spec.name: spec for spec in registries.drivers_by_name.values()}
        return [unique[name] for name in sorted(unique)]

    def offloaders(self) -> list[OffloaderSpec]:
        """Every registered offloader, sorted by name."""
        registries = self._build()
        unique = {spec.name: spec for spec in registries.offloaders.values()}
        return [unique[name] for name in sorted(unique)]

    def stored_kinds(self) -> list[Any]:
        """Every kind of stored offload the registered offloaders write
        (:class:`~offload_core.offload.stored.kinds.StoredKind`), by name."""
        registries = self._build()
        by_name = {kind.name: kind for spec in registries.stored_kinds.values() for kind in spec.stored}
        return [by_name[name] for name in sorted(by_name)]

    def transforms(self) -> list[tuple[Transform, PluginInfo]]:
        """Every registered chunk transform with the plugin that registered it, by name."""
        registries = self._build()
        return [registries.transforms[name] for name in sorted(registries.transforms)]

    def driver(self, name: str) -> DriverSpec:
        """The driver registered under ``name`` or alias (case-insensitive).

        Raises :class:`DriverNotInstalledError` naming the distribution to
        install, or listing what is installed."""
        registries = self._build()
        spec = registries.drivers_by_name.get(name.lower())
        if spec is None:
            raise self._maybe_failed(not_installed(f"no storage driver named {name!r} is installed", name, registries))
        return spec

    def driver_for_scheme(self, scheme: str) -> DriverSpec:
        """The driver registered for URL ``scheme``; see :meth:`driver`."""
        registries = self._build()
        spec = registries.drivers_by_scheme.get(scheme.lower())
        if spec is None:
            raise self._maybe_failed(not_installed(f"no storage driver handles {scheme}:// URLs", scheme, registries))
        return spec

    def offloader(self, name: str) -> OffloaderSpec:
        """The offloader factory registered under ``name`` or alias."""
        registries = self._build()
        spec = registries.offloaders.get(name.lower())
        if spec is None:
            installed = ", ".join(sorted({s.name for s in registries.offloaders.values()})) or "none"
            raise self._maybe_failed(
                ConfigError(f"no ledger offloader named {name!r} is registered; installed: {installed}")
            )
        return spec

    def offloader_for_driver(self, driver_name: str) -> OffloaderSpec:
        """The offloader serving storage driver ``driver_name`` (a name,
        alias or URL scheme): the one that claims the driver by any of its
        names, else the one serving ``"*"``. Raises
        :class:`DriverNotInstalledError` for an unknown driver and
        :class:`ConfigError` when no offloader serves it."""
        registries = self._build()
        lowered = driver_name.lower()
        if "://" in lowered:
            driver = self.driver_for_scheme(urlsplit(lowered).scheme)
        else:
            claimed = registries.offloaders_by_driver.get(lowered)
            if claimed is not None:
                return claimed
            driver = self.driver(lowered)
        for label in (driver.name, *driver.aliases, *driver.schemes):
            claimed = registries.offloaders_by_driver.get(label.lower())
            if claimed is not None:
                return claimed
        fallback = registries.offloaders_by_driver.get("*")
        if fallback is None:
            raise ConfigError(f"no ledger offloader serves storage driver {driver_name!r}; install one that does")
        return fallback

    def transform(self, name: str, *, distribution: str | None = None) -> Transform:
        """The chunk transform registered under ``name``. Raises
        :class:`TransformNotInstalledError` if none is, naming
        ``distribution`` (what an object written with it records) when known."""
        registries = self._build()
        try:
            return registries.transforms[name][0]
        except KeyError:
            installed = ", ".join(sorted(registries.transforms)) or "none"
            where = (
                f"install {distribution} ({install_hint(distribution)}); " if distribution else "install its plugin; "
            )
            raise self._maybe_failed(
                TransformNotInstalledError(
                    f"no chunk transform named {name!r} is registered: objects written with it cannot be read or "
                    f"written here; {where}installed: {installed}"
                )
            ) from None

    def _maybe_failed(self, error: _Missing) -> _Missing:
        """``error`` (something nothing loaded registers), naming the plugins
        that failed to import: one of them may be what provides it."""
        if not self._failures:
            return error
        failed = "; ".join(failure.describe() for failure in self._failures)
        return type(error)(f"{error}; it may come from a plugin that failed to import: {failed}")

    def open_driver(self, url_or_name: str, **options: Any) -> StorageDriver:
        """Open a storage driver by URL (``file:///data/bucket``,
        ``memory://``, ``s3://bucket/prefix``) or by name/alias with options
        (``open_driver("aws-s3", bucket=..., endpoint=...)``).

        ``transforms`` (``"zstd,crc32c"``, in order; ``"auto"``: write
        plain) returns it wrapped in a :class:`TransformingDriver` that writes
        through that chain and reads objects written with any installed one
        (``transform_chunk_size`` bytes a chunk, default 1 MiB).

        Raises :class:`DriverNotInstalledError` for an unknown driver and
        :class:`ConfigError` for options the driver does not take."""
        transforms = options.pop("transforms", None)
        chunk_size = options.pop("transform_chunk_size", None)
        if "://" in url_or_name:
            scheme = urlsplit(url_or_name).scheme
            spec = self.driver_for_scheme(scheme)
            from_url = getattr(spec.driver, "from_url", None)
            if from_url is None:
                raise ConfigError(f"storage driver {spec.name!r} registered scheme {scheme!r} but has no from_url")
            driver = construct(spec, from_url, url_or_name, options)
        else:
            spec = self.driver(url_or_name)
            driver = construct(spec, spec.driver, None, options)
        if transforms is None:
            return driver
        from .transforming_driver import with_transforms

        return with_transforms(driver, transforms, chunk_size, self.transform)

    def leftover_sources(self, driver: StorageDriver) -> list[LeftoverSource]:
        """Where killed writers may leave files in ``driver``'s store: the
        driver itself, then what plugins add through
        ``offload_core_leftover_sources``."""
        added = self._pm.hook.offload_core_leftover_sources(driver=driver)
        return [driver, *(source for sources in added for source in sources)]

    def emit(self, event: Event) -> None:
        """Deliver ``event`` to every ``offload_core_on_event`` implementation."""
        self._pm.hook.offload_core_on_event(event=event)

    def serve_metrics(self, port: int, host: str = "127.0.0.1") -> MetricsServer:
        """Serve metrics through the installed metrics plugin. Raises
        :class:`ConfigError` when no installed plugin serves metrics (it names
        the distribution to install) or the port cannot be bound."""
        server = self._pm.hook.offload_core_serve_metrics(host=host, port=port)
        if server is None:
            raise ConfigError(
                "no installed plugin serves metrics: install offload-plugin-prometheus "
                f"({install_hint('offload-plugin-prometheus')}; make setup installs it)"
            )
        return server  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=8)
def _shared_manager(allow: str, disable_autoload: str) -> PluginManager:
    return PluginManager(environ={ENV_ALLOW: allow, ENV_DISABLE_AUTOLOAD: disable_autoload})


def default_plugin_manager() -> PluginManager:
    """The process's plugin manager, for callers that bring none: installed
    plugins are scanned once, and again only when ``OFFLOAD_CORE_PLUGINS``
    or ``OFFLOAD_CORE_DISABLE_PLUGIN_AUTOLOAD`` change. Build your own
    :class:`PluginManager` to register plugins of your own."""
    return _shared_manager(os.environ.get(ENV_ALLOW, ""), os.environ.get(ENV_DISABLE_AUTOLOAD, ""))


def open_driver(url_or_name: str, *, plugin_manager: PluginManager | None = None, **options: Any) -> StorageDriver:
    """Open a storage driver by URL or name; see :meth:`PluginManager.open_driver`.

    Without ``plugin_manager``, the process's :func:`default_plugin_manager`."""
    manager = plugin_manager if plugin_manager is not None else default_plugin_manager()
    return manager.open_driver(url_or_name, **options)


def _builtin_info(module_name: str) -> PluginInfo:
    return PluginInfo(
        name=module_name,
        module=module_name,
        group="(built-in)",
        distribution="offload-core",
        version=_version_of("offload-core"),
    )


def _dist_name(ep: importlib_metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.name if dist is not None else "(unknown distribution)"


def _dist_version(ep: importlib_metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return dist.version if dist is not None else ""


def _version_of(distribution: str) -> str:
    try:
        return importlib_metadata.version(distribution)
    except importlib_metadata.PackageNotFoundError:
        return "0+unknown"
