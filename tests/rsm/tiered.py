"""A RemoteStorageManager over a test's store, under the key prefix
``tiered``, and the keys it holds there."""

from __future__ import annotations

from offload_core.rsm import RemoteLogMetadataManager, RemoteStorageManager
from offload_core.storage import StorageDriver


def manager_for(
    store: StorageDriver, rlmm: RemoteLogMetadataManager | None = None, **options: int
) -> RemoteStorageManager:
    return RemoteStorageManager(store, prefix="tiered", metadata_manager=rlmm, **options)  # type: ignore[arg-type]


def keys(store: StorageDriver) -> list[str]:
    return [info.key for info in store.list("tiered/")]
