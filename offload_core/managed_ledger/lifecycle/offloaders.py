"""Offloaders for a broker, from policies or from what a ledger recorded.

A ledger is read back with the driver settings recorded in its
``OffloadContext.driverMetadata`` at offload time, so changing the policy
(a new bucket, say) never strands ledgers already offloaded. Credentials
are never among them: they reach a cloud store's driver as the provider's
driver options, given by whoever opens the broker (a Spark backfill's job
argument), and are never recorded.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError, OffloadError, mask_secrets
from ...hooks import Event
from ...leftovers import sweep_leftovers
from ...model import Temporary
from ...offload.ledger import LedgerOffloader
from ...offload.reading.read_ahead import ReadAheadPool
from ...plugins import OffloaderSpec, PluginManager
from ...storage import StorageDriver
from ...urls import redact_url_text
from .filesystem_offload import FILESYSTEM, LOCAL_DIRECTORY, check_offload_driver, filesystem_settings
from .policies import OffloadPolicies

__all__ = [
    "OffloaderProvider",
    "check_driver_options",
    "default_bucket",
    "describe_store",
    "driver_settings",
    "store_location",
]

_SETTINGS = ("driver", "bucket", "endpoint", "region", "transforms", "transform_chunk_size")
# "filesystem" among them only for ledgers recorded before it meant the
# file-system offloader: their settings name the blob-store offloader too.
_LOCAL_DRIVERS = {LOCAL_DIRECTORY, "filesystem", "file", "local"}
# The file-system offloader's options, from the Hadoop profile's names.
# What is recorded with each ledger, so it is read back from the same store:
# set in the broker config, never as a driver option (key -> its config key).
_RECORDED_OPTIONS = {
    "bucket": "managedLedgerOffloadBucket",
    "root": "managedLedgerOffloadBucket",
    "endpoint": "managedLedgerOffloadServiceEndpoint",
    "region": "managedLedgerOffloadRegion",
    "transforms": "managedLedgerOffloadTransforms",
    "transform_chunk_size": "managedLedgerOffloadTransformChunkSizeInBytes",
}
_MAPFILE_OPTIONS = {
    "io.seqfile.compression.type": ("compression", str),
    "io.seqfile.compress.blocksize": ("block_size", int),
    "io.map.index.interval": ("index_interval", int),
}


def driver_settings(policies: OffloadPolicies, data_dir: Path) -> dict[str, str]:
    """Driver name and location from policies; the embedded default is a
    ``bucket`` folder in the data directory. ``"filesystem"`` is Pulsar's
    file-system offloader (see :mod:`.filesystem_offload`); its old meaning
    raises :class:`ConfigError` saying how to move over."""
    if (policies.driver or "").lower() == FILESYSTEM:
        check_offload_driver(
            policies.driver,
            bucket=policies.bucket,
            uri=policies.file_system_uri,
            profile=policies.file_system_profile_path,
            streaming=policies.streaming_enabled,
        )
        return filesystem_settings(policies.file_system_uri, policies.file_system_profile_path)
    settings = {name: str(value) for name in _SETTINGS if (value := getattr(policies, name)) is not None}
    settings.setdefault("driver", LOCAL_DIRECTORY)
    if "bucket" not in settings and (bucket := default_bucket(settings["driver"], data_dir)) is not None:
        settings["bucket"] = bucket
    return settings


def default_bucket(driver: str | None, data_dir: Path) -> str | None:
    """The bucket a broker in ``data_dir`` offloads to with ``driver`` (no
    driver: the local directory) when none is set: a ``bucket`` folder in
    the data directory for a local directory; ``None`` for every other
    driver, which needs one set (the file-system offloader none at all)."""
    name = (driver or LOCAL_DIRECTORY).lower()
    return str(data_dir / "bucket") if name in _LOCAL_DRIVERS and name != FILESYSTEM else None


def store_location(settings: Mapping[str, str], data_dir: Path) -> tuple[str, dict[str, str]]:
    """The driver name (or URL) and driver options of the blob store that
    recorded ``settings`` name: a local directory's ``root`` resolved
    against ``data_dir``, a cloud store's ``bucket``, ``endpoint`` and
    ``region``; the file-system offloader's (Pulsar's
    ``managedLedgerOffloadDriver="filesystem"``) ``storageBasePath``, the
    URL its MapFile ledgers live under, as it is. Transforms are not among
    them (the caller chains them)."""
    if settings.get("storageBasePath"):
        return settings["storageBasePath"], {}
    driver_name = settings.get("driver", LOCAL_DIRECTORY)
    if "://" in driver_name:
        return driver_name, {}
    if driver_name.lower() in _LOCAL_DRIVERS:
        root = Path(settings.get("bucket") or data_dir / "bucket")
        return driver_name, {"root": str(root if root.is_absolute() else data_dir / root)}
    return driver_name, {name: settings[name] for name in ("bucket", "endpoint", "region") if settings.get(name)}


def check_driver_options(options: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` if ``options`` (driver options given to a
    broker) name what is recorded with each ledger (bucket, endpoint,
    region, transforms): those belong in the broker config, so a ledger is
    read back from where it was written whoever reads it."""
    recorded = sorted(name for name in options if name in _RECORDED_OPTIONS)
    if recorded:
        keys = ", ".join(f"{name} ({_RECORDED_OPTIONS[name]})" for name in recorded)
        raise ConfigError(
            f"driver option(s) {keys} name where offloads go, which is recorded with each ledger: set them in the "
            "broker config instead; driver options are for what is never recorded (credentials, client settings)"
        )


def _takes_driver_options(driver_name: str) -> bool:
    """Whether a store is a cloud one, to which the provider's driver
    options (credentials) go; a local directory never takes them."""
    if "://" in driver_name:
        return driver_name.split("://", 1)[0].lower() not in {"file", "memory"}
    return driver_name.lower() not in _LOCAL_DRIVERS


def describe_store(settings: Mapping[str, str], data_dir: Path) -> str:
    """The store ``settings`` name, fit to print in an error: its driver,
    bucket and endpoint (a URL without its secrets), or its directory."""
    driver_name, location = store_location(settings, data_dir)
    if "://" in driver_name:
        return redact_url_text(driver_name)
    if "root" in location:
        return location["root"]
    where = f" bucket {location['bucket']}" if "bucket" in location else ""
    at = f" at {redact_url_text(location['endpoint'])}" if "endpoint" in location else ""
    return f"{driver_name}{where}{at}"


class OffloaderProvider:
    """Opens (and caches) one offloader per distinct driver setting.

    The offloader is the one the plugin registry names for the configured
    driver (an offloader registered through ``offload_core_register_offloaders``
    that claims the driver's name, else the blob-store one), or the one a
    ledger recorded (``offloader`` in its driver metadata) when reading it
    back.

    ``driver_options`` (credentials: ``access_key_id``,
    ``secret_access_key`` ...) go to every cloud store's driver it opens,
    and are never recorded, cached under, nor printed. Raises
    :class:`ConfigError` if they name a recorded setting
    (:func:`check_driver_options`)."""

    def __init__(
        self,
        plugins: PluginManager,
        data_dir: Path,
        emit: Callable[[Event], None] | None = None,
        *,
        read_ahead: ReadAheadPool | None = None,
        entry_offsets: bool = True,
        driver_options: Mapping[str, Any] | None = None,
    ) -> None:
        check_driver_options(driver_options or {})
        self._driver_options = dict(driver_options or {})
        self._plugins = plugins
        self._data_dir = data_dir
        self._emit = emit
        self._read_ahead = read_ahead
        self._entry_offsets = entry_offsets
        self._cache: dict[tuple[tuple[str, str], ...], tuple[LedgerOffloader, StorageDriver]] = {}

    def for_settings(
        self, settings: Mapping[str, str], *, max_block_size: int, read_buffer_size: int
    ) -> LedgerOffloader:
        """An offloader for ``settings`` (``driver``, ``bucket``, ``endpoint``,
        ``region``, ``prefix``, ``offloader``). Raises
        :class:`DriverNotInstalledError` / :class:`ConfigError` from the
        registry or the driver."""
        return self._open(settings, max_block_size=max_block_size, read_buffer_size=read_buffer_size)[0]

    def _open(
        self, settings: Mapping[str, str], *, max_block_size: int, read_buffer_size: int
    ) -> tuple[LedgerOffloader, StorageDriver]:
        key = tuple(
            sorted(
                {**settings, "max_block_size": str(max_block_size), "read_buffer_size": str(read_buffer_size)}.items()
            )
        )
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        spec = self._spec_for(settings)
        driver = self._open_driver(settings)
        options: dict[str, object] = {
            "max_block_size": max_block_size,
            "read_buffer_size": read_buffer_size,
            "prefix": settings.get("prefix", ""),
            "emit": self._emit,
            "entry_offsets": self._entry_offsets,
        }
        for name, (option, convert) in _MAPFILE_OPTIONS.items():
            if name in settings:
                options[option] = convert(settings[name])
        if self._read_ahead is not None:
            options["read_ahead"] = self._read_ahead  # one pool for every offloader: one budget for the broker
        accepted = inspect.signature(spec.factory).parameters
        offloader: LedgerOffloader = spec.factory(
            driver, **{name: value for name, value in options.items() if name in accepted}
        )
        self._cache[key] = (offloader, driver)
        return offloader, driver

    def _spec_for(self, settings: Mapping[str, str]) -> OffloaderSpec:
        recorded = settings.get("offloader")
        if recorded:
            return self._plugins.offloader(recorded)
        return self._plugins.offloader_for_driver(settings.get("driver", LOCAL_DIRECTORY))

    def sweep_leftovers(self, policies: OffloadPolicies, *, now: float, grace: float) -> tuple[Temporary, ...]:
        """Remove the files killed writers left in the store ``policies``
        name (see :func:`offload_core.leftovers.sweep_leftovers`); what was
        removed."""
        settings = driver_settings(policies, self._data_dir)
        assert policies.max_block_size is not None and policies.read_buffer_size is not None
        _, driver = self._open(settings, max_block_size=policies.max_block_size,
                               read_buffer_size=policies.read_buffer_size)  # fmt: skip
        return sweep_leftovers(driver, now=now, grace=grace, plugins=self._plugins)

    def _open_driver(self, settings: Mapping[str, str]) -> StorageDriver:
        """The storage driver ``settings`` name. A driver that rejects them
        with a plain ``ValueError`` (an SDK refusing an endpoint, say) is a
        :class:`ConfigError` naming the settings, secrets masked."""
        driver_name = settings.get("driver", LOCAL_DIRECTORY)
        if "storageBasePath" in settings:  # the file-system offloader: Hadoop's files, never transformed
            return self._plugins.open_driver(settings["storageBasePath"])
        # With transform plugins installed, every driver can read what they
        # wrote, whatever the policy says now ("auto": detect, write plain).
        chained: dict[str, object] = {}
        if settings.get("transforms") or self._plugins.transforms():
            chained["transforms"] = settings.get("transforms") or "auto"
            if settings.get("transform_chunk_size"):
                chained["transform_chunk_size"] = int(settings["transform_chunk_size"])
        try:
            name, options = store_location(settings, self._data_dir)
            given = self._driver_options if _takes_driver_options(name) else {}
            return self._plugins.open_driver(name, **options, **given, **chained)
        except OffloadError:
            raise
        except ValueError as exc:
            shown = redact_url_text(str(exc))
            raise ConfigError(
                f"offload driver {redact_url_text(driver_name)!r} cannot be opened with "
                f"{mask_secrets(dict(settings))} ({shown}); fix managedLedgerOffloadDriver / Bucket / "
                "ServiceEndpoint / Region"
            ) from None

    def for_policies(self, policies: OffloadPolicies) -> tuple[LedgerOffloader, dict[str, str]]:
        """The offloader the policies choose, and the settings to record
        with each ledger it offloads (its own driver metadata included)."""
        settings = driver_settings(policies, self._data_dir)
        assert policies.max_block_size is not None and policies.read_buffer_size is not None
        offloader = self.for_settings(
            settings, max_block_size=policies.max_block_size, read_buffer_size=policies.read_buffer_size
        )
        recorded = {**settings, "offloader": self._spec_for(settings).name}
        for name, value in offloader.driver_metadata().items():
            recorded.setdefault(name, value)
        return offloader, recorded

    def close(self) -> None:
        """Close every offloader opened (the read-ahead pool stays with its owner)."""
        for offloader, _ in self._cache.values():
            offloader.close()
        self._cache.clear()
