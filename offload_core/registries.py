"""The registries plugins fill: which driver, offloader and transform
each name (alias, URL scheme) stands for, and which plugin registered it.
Two plugins claiming one name is an error naming both."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import hooks
from .driver_specs import DriverSpec, PluginInfo, driver_target
from .errors import DriverNotInstalledError, PluginLoadError
from .hooks import Transform
from .storage import StorageDriver

__all__ = [
    "ENV_ALLOW",
    "OffloaderSpec",
    "Registries",
    "driver_registrar",
    "install_hint",
    "not_installed",
    "offloader_registrar",
    "transform_registrar",
]

ENV_ALLOW = "OFFLOAD_CORE_PLUGINS"

# Where to send a user who asks for a driver nobody installed.
_DISTRIBUTION_FOR = {
    "filesystem": "offload-driver-filesystem",
    "file": "offload-driver-filesystem",
    "s3": "offload-driver-s3",
    "aws-s3": "offload-driver-s3",
    "s3a": "offload-driver-s3",
    "gcs": "offload-driver-gcs",
    "gs": "offload-driver-gcs",
    "google-cloud-storage": "offload-driver-gcs",
    "azure": "offload-driver-azure",
    "azureblob": "offload-driver-azure",
    "az": "offload-driver-azure",
    "abfs": "offload-driver-azure",
    "abfss": "offload-driver-azure",
    "hdfs": "offload-driver-hdfs",
    "webhdfs": "offload-driver-hdfs",
}


def install_hint(distribution: str) -> str:
    """How to install one of this project's distributions, which no package
    index serves: from a clone, or from a wheel ``make wheels`` built
    (``offload-driver-s3``: ``pip install -e drivers/s3``)."""
    kind, _, name = distribution.removeprefix("offload-").partition("-")
    if distribution == "offload-core" or not name:
        clone, wheel = ".", "offload_core"
    else:
        clone, wheel = f"{kind}s/{name}", distribution.replace("-", "_")
    return f"pip install -e {clone} in a clone of offload-core, or pip install {wheel}-*.whl built there by make wheels"


@dataclass(frozen=True)
class OffloaderSpec:
    """A registered ledger-offloader factory, the storage-driver names it
    serves (``"*"``: any driver no other offloader claims) and the kinds of
    stored offload it writes."""

    name: str
    factory: Callable[..., Any]
    aliases: tuple[str, ...]
    plugin: PluginInfo
    drivers: tuple[str, ...] = ()
    stored: tuple[Any, ...] = ()


@dataclass
class Registries:
    drivers_by_name: dict[str, DriverSpec] = field(default_factory=dict)
    drivers_by_scheme: dict[str, DriverSpec] = field(default_factory=dict)
    offloaders: dict[str, OffloaderSpec] = field(default_factory=dict)
    offloaders_by_driver: dict[str, OffloaderSpec] = field(default_factory=dict)
    stored_kinds: dict[str, OffloaderSpec] = field(default_factory=dict)
    transforms: dict[str, tuple[Transform, PluginInfo]] = field(default_factory=dict)


def _claim(table: dict[str, Any], key: str, spec: Any, what: str) -> None:
    existing = table.get(key)
    if existing is not None and existing is not spec:
        raise PluginLoadError(
            f"{what} {key!r} is registered by both {existing.plugin.describe()} and {spec.plugin.describe()}; "
            f"uninstall one, or choose one with {ENV_ALLOW}"
        )
    table[key] = spec


def driver_registrar(registries: Registries, info: PluginInfo) -> hooks.DriverRegistrar:
    def register(
        driver: type[StorageDriver] | str, *, name: str, aliases: Sequence[str] = (), schemes: Sequence[str] = ()
    ) -> None:
        target = driver_target(driver, info)
        spec = DriverSpec(name=name, target=target, aliases=tuple(aliases), schemes=tuple(schemes), plugin=info)
        for label in {name.lower(), *(alias.lower() for alias in aliases)}:
            _claim(registries.drivers_by_name, label, spec, "driver name")
        for scheme in schemes:
            _claim(registries.drivers_by_scheme, scheme.lower(), spec, "URL scheme")

    return register


def offloader_registrar(registries: Registries, info: PluginInfo) -> hooks.OffloaderRegistrar:
    def register(
        factory: Callable[..., Any],
        *,
        name: str,
        aliases: Sequence[str] = (),
        drivers: Sequence[str] = (),
        stored: Sequence[Any] = (),
    ) -> None:
        spec = OffloaderSpec(name=name, factory=factory, aliases=tuple(aliases), plugin=info, drivers=tuple(drivers),
                             stored=tuple(stored))  # fmt: skip
        for label in {name.lower(), *(alias.lower() for alias in aliases)}:
            _claim(registries.offloaders, label, spec, "offloader name")
        for driver in {driver.lower() for driver in drivers}:
            _claim(registries.offloaders_by_driver, driver, spec, "offloader for storage driver")
        for kind in stored:
            _claim(registries.stored_kinds, kind.name, spec, "kind of stored offload")

    return register


def transform_registrar(registries: Registries, info: PluginInfo) -> hooks.TransformRegistrar:
    def register(transform: Transform) -> None:
        _check_transform_api(transform, info)
        existing = registries.transforms.get(transform.name)
        if existing is not None:
            raise PluginLoadError(
                f"block transform {transform.name!r} is registered by both {existing[1].describe()} and "
                f"{info.describe()}; uninstall one, or choose one with {ENV_ALLOW}"
            )
        registries.transforms[transform.name] = (transform, info)

    return register


def _check_transform_api(transform: Transform, info: PluginInfo) -> None:
    """:class:`PluginLoadError` for a transform written against the API before
    chunks were bound to their object (its methods would fail with a bare
    ``TypeError`` at the first write or read)."""
    wanted = {"for_writing": {"object_id"}, "for_reading": {"version", "object_id"}}
    for method, names in wanted.items():
        try:
            parameters = inspect.signature(getattr(transform, method)).parameters
        except (AttributeError, TypeError, ValueError):
            raise PluginLoadError(f"block transform of {info.describe()} has no {method} method") from None
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        if not takes_any and not names <= set(parameters):
            raise PluginLoadError(
                f"block transform {getattr(transform, 'name', '?')!r} of {info.describe()} has {method} without "
                f"{', '.join(sorted(names - set(parameters)))}: it was written for an offload-core whose chunks were "
                "not bound to their object; upgrade it (docs/plugin-authors.md: Transforms)"
            )


def not_installed(message: str, wanted: str, registries: Registries) -> DriverNotInstalledError:
    distribution = _DISTRIBUTION_FOR.get(wanted.lower())
    if distribution is not None:
        return DriverNotInstalledError(f"{message}; install {distribution}: {install_hint(distribution)}")
    names = sorted({spec.name for spec in registries.drivers_by_name.values()})
    schemes = sorted(registries.drivers_by_scheme)
    close = difflib.get_close_matches(wanted.lower(), [*registries.drivers_by_name, *schemes], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return DriverNotInstalledError(
        f"{message}{hint} (installed drivers: {', '.join(names) or 'none'}; schemes: {', '.join(schemes) or 'none'})"
    )
