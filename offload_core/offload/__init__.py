"""Offloaders: moving sealed ledgers to object storage and reading them back.

The offloader contract and the blob-store offloader are here
(:mod:`.ledger`, on :mod:`.offloader_base`: what our offloaders share); its
object families are rooms of their own: :mod:`.ledgers` (PIP-17 ledger
objects) and :mod:`.segments` (PIP-76 segments), both on the shared read
machinery in :mod:`.reading`.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import ConfigError
from ..plugins import PluginManager, default_plugin_manager
from .ledger import BlobStoreLedgerOffloader, LedgerOffloader, OffloadResult
from .reading.read_handle import InMemoryReadHandle, ReadHandle
from .segments.streaming_offload import OfferResult, OffloadHandle, SegmentLimits, StreamingOffloadResult

__all__ = [
    "BlobStoreLedgerOffloader",
    "InMemoryReadHandle",
    "LedgerOffloader",
    "OfferResult",
    "OffloadHandle",
    "OffloadResult",
    "ReadHandle",
    "SegmentLimits",
    "StreamingOffloadResult",
    "open_offloader",
]

# Pulsar's broker.conf names for the offloader's own settings.
PULSAR_OFFLOADER_OPTIONS = {
    "managedLedgerOffloadMaxBlockSizeInBytes": "max_block_size",
    "managedLedgerOffloadReadBufferSizeInBytes": "read_buffer_size",
}


def open_offloader(
    url_or_name: str,
    *,
    offloader: str = "blobstore",
    plugin_manager: PluginManager | None = None,
    **options: Any,
) -> LedgerOffloader:
    """Open a storage driver and the ledger offloader on top of it.

    ``url_or_name`` is what :func:`offload_core.open_driver` takes. Options
    the offloader knows (``max_block_size``, ``read_buffer_size``,
    ``prefix``, or their Pulsar names such as
    ``managedLedgerOffloadMaxBlockSizeInBytes``) go to the offloader; the
    rest go to the driver. Raises :class:`ConfigError` for invalid options
    and :class:`DriverNotInstalledError` for a missing driver.

    ``url_or_name`` always names a storage driver, and ``offloader`` the
    offloader, whatever the driver: ``open_offloader("local-directory",
    root=...)`` (or the driver's other name, ``"filesystem"``) is the
    blob-store (PIP-17) offloader over a local directory; Pulsar's
    file-system offloader, which ``managedLedgerOffloadDriver =
    "filesystem"`` means to the broker, is ``offloader="filesystem"``
    (Hadoop MapFiles).

    Example: ``open_offloader("file:///data/bucket", max_block_size=8 << 20)``.
    """
    manager = plugin_manager if plugin_manager is not None else default_plugin_manager()
    spec = manager.offloader(offloader)
    parameters = inspect.signature(spec.factory).parameters
    offloader_options: dict[str, Any] = {}
    driver_options: dict[str, Any] = {}
    for name, value in options.items():
        canonical = PULSAR_OFFLOADER_OPTIONS.get(name, name)
        if canonical in parameters and canonical not in ("driver", "emit"):
            if canonical in offloader_options:
                raise ConfigError(f"offloader option {canonical!r} was given twice (as {name!r} too)")
            offloader_options[canonical] = value
        else:
            driver_options[name] = value
    driver = manager.open_driver(url_or_name, **driver_options)
    instance: LedgerOffloader = spec.factory(driver, emit=manager.emit, **offloader_options)
    return instance
