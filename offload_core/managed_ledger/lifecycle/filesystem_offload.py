"""``managedLedgerOffloadDriver = "filesystem"``, as in Pulsar: the
file-system offloader (Hadoop MapFiles, :mod:`offload_core.offload.mapfile`)
on ``fileSystemURI`` (``file:///...`` or ``hdfs://...``) with the Hadoop
profile ``fileSystemProfilePath`` names.

Our local blob-store directory, which ``"filesystem"`` named before, is
``"local-directory"`` (:data:`LOCAL_DIRECTORY`). A config written for the
old meaning (a ``managedLedgerOffloadBucket`` with ``"filesystem"``, or
``"filesystem"`` with neither ``fileSystemURI`` nor a profile) is refused
with a one-line :class:`ConfigError` saying how to move it over, never
silently given another format. Ledgers offloaded under the old meaning
recorded their offloader, so they stay readable.
"""

from __future__ import annotations

from ...errors import ConfigError
from ...offload.mapfile.hadoop_profile import read_profile, storage_url

__all__ = ["FILESYSTEM", "LOCAL_DIRECTORY", "check_offload_driver", "filesystem_settings"]

FILESYSTEM = "filesystem"
LOCAL_DIRECTORY = "local-directory"


def check_offload_driver(
    driver: str | None, *, bucket: str | None, uri: str | None, profile: str | None, streaming: bool | None
) -> None:
    """Raise :class:`ConfigError` for ``"filesystem"`` used in its old
    meaning, or with streaming offload (the file-system offloader has none,
    in Pulsar too)."""
    if driver is None or driver.lower() != FILESYSTEM:
        return
    if bucket is not None or not (uri or profile):
        raise ConfigError(
            f'managedLedgerOffloadDriver = "{FILESYSTEM}" now means Pulsar\'s file-system offloader (Hadoop MapFiles '
            f"on fileSystemURI, with fileSystemProfilePath); for the local blob-store directory this config means, "
            f'write managedLedgerOffloadDriver = "{LOCAL_DIRECTORY}" (ledgers offloaded before stay readable)'
        )
    if streaming:
        raise ConfigError(
            f'managedLedgerOffloadStreamingEnabled needs a blob store: the "{FILESYSTEM}" offloader (Hadoop '
            "MapFiles) offloads whole ledgers only, as in Pulsar; turn streaming off or choose another driver"
        )


def filesystem_settings(uri: str | None, profile_path: str | None) -> dict[str, str]:
    """The driver settings a file-system offload records with each ledger:
    where the ledgers go (``storageBasePath``, the URL of ``hadoop.tmp.dir``
    on the file system, resolved now so that a later profile or working
    directory strands nothing) and the profile's file shape. Raises
    :class:`ConfigError` for a profile or URI that does not do."""
    profile = read_profile(profile_path)
    return {
        "driver": FILESYSTEM,
        "offloader": FILESYSTEM,
        "fileSystemURI": uri or profile.default_fs or "file:///",
        "storageBasePath": storage_url(uri or profile.default_fs, profile.tmp_dir),
        "io.seqfile.compression.type": profile.compression.value,
        "io.seqfile.compress.blocksize": str(profile.block_size),
        "io.map.index.interval": str(profile.index_interval),
    }
