"""The ``memory`` driver: a private in-process object store, for tests.

Each instance owns its own dict (fsspec's ``memory://`` filesystem is one
global dict per process; this is not), so tests never see each other's
objects. ``open_driver("memory://")`` returns a new, empty store each time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from .errors import AlreadyExistsError, NotFoundError
from .hooks import DriverRegistrar, hookimpl
from .model import ObjectInfo
from .storage import BytesLike, StorageDriver, slice_range

__all__ = ["MemoryDriver"]


class MemoryDriver(StorageDriver):
    """Objects in a dict owned by this instance; thread-safe."""

    name = "memory"

    def __init__(self) -> None:
        self._objects: dict[str, tuple[bytes, dict[str, str]]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str) -> MemoryDriver:
        """``memory://`` (anything after the scheme is ignored): a new empty store."""
        return cls()

    def create_bucket(self) -> bool:
        """A private dict: always there."""
        return False

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        data = bytearray()
        for part in parts:
            data += part
        with self._lock:
            if if_absent and key in self._objects:
                raise AlreadyExistsError(
                    f"object {key!r} already exists; conditional create refused to replace it", key=key
                )
            self._objects[key] = (bytes(data), dict(metadata))
        return ObjectInfo(key=key, size=len(data), metadata=metadata)

    def _get(self, key: str) -> tuple[bytes, dict[str, str]]:
        try:
            return self._objects[key]
        except KeyError:
            raise NotFoundError(f"object {key!r} not found in the memory store", key=key) from None

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        data, _ = self._get(key)
        first, last = slice_range(key, len(data), start, end)
        return data[first:last]

    def _stat(self, key: str) -> ObjectInfo:
        data, metadata = self._get(key)
        return ObjectInfo(key=key, size=len(data), metadata=metadata)

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        with self._lock:
            data, _ = self._get(key)
            self._objects[key] = (data, dict(metadata))
        return ObjectInfo(key=key, size=len(data), metadata=metadata)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        with self._lock:
            snapshot = sorted((key, len(data)) for key, (data, _) in self._objects.items() if key.startswith(prefix))
        return iter([ObjectInfo(key=key, size=size) for key, size in snapshot])

    def _delete(self, keys: Sequence[str]) -> None:
        with self._lock:
            for key in keys:
                self._objects.pop(key, None)


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    register(MemoryDriver, name="memory", schemes=("memory",))
