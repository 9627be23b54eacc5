"""Versioned records kept as objects in a store, for a store that has no
metadata manager of ours beside it (Aiven's layout).

Compare-and-set is built from the one conditional write every driver has,
a create that fails when the key exists: a record at ``path`` is the
objects ``path/<20-digit generation>``, the highest generation being the
record. A change reads the highest generation ``g`` and creates ``g + 1``;
of two changes from ``g`` only one creates it. Older generations are then
removed, so a slow writer still holding ``g`` could create a removed
generation again unseen: after creating ``g + 1`` a writer lists, and
when a higher generation is already there its change lost (it removes
what it created and raises :class:`ConflictError`). A deleted record is a
tombstone generation, kept so generations never restart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..errors import AlreadyExistsError, ConflictError, FormatError, NotFoundError
from ..managed_ledger.metadata_store import Versioned
from ..storage import StorageDriver

__all__ = ["ObjectRecordStore"]

_DIGITS = 20
_LIVE = b"+"
_TOMBSTONE = b"-"
_READ_ATTEMPTS = 16


class ObjectRecordStore:
    """:class:`~offload_core.managed_ledger.metadata_store.MetadataStore`
    records as objects of ``driver`` (paths are object keys, so give them
    a prefix no other writer uses). Safe across processes and hosts on a
    store whose listings are strongly consistent (S3, GCS, Azure Blob, a
    local file system)."""

    def __init__(self, driver: StorageDriver) -> None:
        self._driver = driver

    def get(self, path: str) -> Versioned | None:
        """The record, or ``None`` if there is none (or it was deleted)."""
        found = self._current(path)
        if found is None or found[1] is None:
            return None
        return found[1]

    def create(self, path: str, value: bytes) -> Versioned:
        """Create the record at version 0; :class:`AlreadyExistsError` if it exists."""
        found = self._current(path)
        if found is not None and found[1] is not None:
            raise AlreadyExistsError(f"record {path!r} exists")
        try:
            self._advance(path, -1 if found is None else found[0], _encode(0, value))
        except ConflictError:
            raise AlreadyExistsError(f"record {path!r} was created meanwhile") from None
        return Versioned(value, 0)

    def set(self, path: str, value: bytes, expected_version: int) -> Versioned:
        """Replace the record if it is still at ``expected_version``, else
        raise :class:`ConflictError` (:class:`NotFoundError` if it is gone)."""
        generation, record = self._existing(path)
        if record.version != expected_version:
            raise ConflictError(f"record {path!r} is at version {record.version}, not {expected_version}")
        self._advance(path, generation, _encode(expected_version + 1, value))
        return Versioned(value, expected_version + 1)

    def delete(self, path: str, expected_version: int | None = None) -> None:
        """Remove the record (at ``expected_version``, if given, else
        :class:`ConflictError`); missing is fine."""
        found = self._current(path)
        if found is None or found[1] is None:
            return
        if expected_version is not None and found[1].version != expected_version:
            raise ConflictError(f"record {path!r} is at version {found[1].version}, not {expected_version}")
        self._advance(path, found[0], _TOMBSTONE)

    def children(self, prefix: str) -> Iterator[str]:
        """Paths of the live records starting with ``prefix``, sorted."""
        paths = sorted({info.key.rsplit("/", 1)[0] for info in self._driver.list(prefix) if "/" in info.key})
        return iter([path for path in paths if path.startswith(prefix) and self.get(path) is not None])

    def close(self) -> None:
        """Nothing to release: the driver is the caller's."""

    def _generations(self, path: str) -> list[int]:
        return sorted(
            int(name)
            for info in self._driver.list(f"{path}/")
            if len(name := info.key[len(path) + 1 :]) == _DIGITS and name.isdigit()
        )

    def _current(self, path: str) -> tuple[int, Versioned | None] | None:
        """The highest generation and its record (None for a tombstone), or None for no generation."""
        for _ in range(_READ_ATTEMPTS):
            generations = self._generations(path)
            if not generations:
                return None
            try:
                body = self._driver.read(_key(path, generations[-1]))
            except NotFoundError:
                continue  # a newer generation replaced it meanwhile: list again
            return generations[-1], _decode(body, path)
        raise ConflictError(f"record {path!r}: {_READ_ATTEMPTS} concurrent changes while reading it; try again")

    def _existing(self, path: str) -> tuple[int, Versioned]:
        found = self._current(path)
        if found is None or found[1] is None:
            raise NotFoundError(f"record {path!r} does not exist")
        return found[0], found[1]

    def _advance(self, path: str, generation: int, body: bytes) -> None:
        """Create generation ``generation + 1`` holding ``body``, then drop
        the older ones. :class:`ConflictError` when another change won."""
        mine = generation + 1
        try:
            self._driver.write(_key(path, mine), body, if_absent=True)
        except AlreadyExistsError:
            raise ConflictError(f"record {path!r} changed meanwhile") from None
        generations = self._generations(path)
        if generations and generations[-1] > mine:
            # Created over a generation already removed: the record had moved on without us.
            with contextlib.suppress(NotFoundError):
                self._driver.delete(_key(path, mine))
            raise ConflictError(f"record {path!r} changed meanwhile")
        older = [_key(path, g) for g in generations if g < mine]
        if older:
            with contextlib.suppress(NotFoundError):
                self._driver.delete(older)


def _key(path: str, generation: int) -> str:
    return f"{path}/{generation:0{_DIGITS}d}"


def _encode(version: int, value: bytes) -> bytes:
    return _LIVE + str(version).encode() + b"\n" + value


def _decode(body: bytes, path: str) -> Versioned | None:
    if body[:1] == _TOMBSTONE:
        return None
    header, _, value = body[1:].partition(b"\n")
    if body[:1] != _LIVE or not header.isdigit():
        raise FormatError(f"record {path!r} is not one this store wrote: remove the objects under it")
    return Versioned(value, int(header))
