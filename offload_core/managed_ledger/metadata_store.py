"""Versioned metadata records with compare-and-set updates.

The interface is ZooKeeper's, reduced to what a managed ledger needs: a
record has a value and a version; ``set`` and ``delete`` name the version
they expect and fail with :class:`ConflictError` if it changed. A
ZooKeeper or etcd store can implement :class:`MetadataStore` as a plugin.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import AlreadyExistsError, ConflictError, NotFoundError, OffloadError

__all__ = ["MetadataStore", "SqliteMetadataStore", "Versioned"]


@dataclass(frozen=True)
class Versioned:
    """A record's value and the version it had when read."""

    value: bytes
    version: int


class MetadataStore(Protocol):
    """Records at ``/``-separated paths, each with a version."""

    def get(self, path: str) -> Versioned | None:
        """The record, or ``None`` if there is none."""
        ...

    def create(self, path: str, value: bytes) -> Versioned:
        """Create a record at version 0; :class:`AlreadyExistsError` if it exists."""
        ...

    def set(self, path: str, value: bytes, expected_version: int) -> Versioned:
        """Replace the record if it is still at ``expected_version``, else
        raise :class:`ConflictError` (:class:`NotFoundError` if it is gone)."""
        ...

    def delete(self, path: str, expected_version: int | None = None) -> None:
        """Remove the record (at ``expected_version``, if given); missing is fine."""
        ...

    def children(self, prefix: str) -> Iterator[str]:
        """Paths starting with ``prefix``, sorted."""
        ...

    def close(self) -> None: ...


class SqliteMetadataStore:
    """:class:`MetadataStore` in one SQLite file; safe across processes
    (SQLite's locking) and threads. Each update is one transaction."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS records (path TEXT PRIMARY KEY, value BLOB NOT NULL, "
                "version INTEGER NOT NULL)"
            )
        except sqlite3.DatabaseError as exc:
            raise OffloadError(
                f"metadata store {self.path} cannot be opened ({exc}): it is not a SQLite database or it is damaged; "
                "restore it from a backup (or move it away to start with empty metadata)"
            ) from None
        self._lock = threading.Lock()
        # This connection's own updates, by area (a path's first component),
        # so that a cache of one area (policies) is not invalidated by the
        # steady stream of another's (ledger metadata, offload status).
        self._local_changes: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"SqliteMetadataStore({self.path!r})"

    def change_marker(self, area: str | None = None) -> tuple[int, int]:
        """A value that differs whenever a record may have changed since it
        was taken: SQLite's ``data_version`` (bumped by other connections'
        commits, other processes included) and this connection's own
        updates, of every record or, with ``area``, of records whose path's
        first component is ``area`` (``"policies"`` for ``policies/...``).
        Lets callers cache what they derive from records."""
        with self._lock:
            (version,) = self._db.execute("PRAGMA data_version").fetchone()
            local = self._local_changes[area] if area is not None else self._local_changes.total()
            return int(version), local

    def _changing(self, path: str) -> None:
        self._local_changes[path.split("/", 1)[0]] += 1

    def get(self, path: str) -> Versioned | None:
        with self._lock:
            row = self._db.execute("SELECT value, version FROM records WHERE path = ?", (path,)).fetchone()
        return None if row is None else Versioned(bytes(row[0]), int(row[1]))

    def create(self, path: str, value: bytes) -> Versioned:
        with self._lock:
            self._changing(path)
            try:
                self._db.execute("INSERT INTO records VALUES (?, ?, 0)", (path, value))
            except sqlite3.IntegrityError:
                raise AlreadyExistsError(f"metadata record {path!r} already exists", key=path) from None
        return Versioned(value, 0)

    def set(self, path: str, value: bytes, expected_version: int) -> Versioned:
        with self._lock:
            self._changing(path)
            # One statement, its own transaction, the version test in its
            # WHERE: a set is one round trip through SQLite, not four.
            updated = self._db.execute(
                "UPDATE records SET value = ?, version = ? WHERE path = ? AND version = ?",
                (value, expected_version + 1, path, expected_version),
            ).rowcount
            if not updated:
                row = self._db.execute("SELECT version FROM records WHERE path = ?", (path,)).fetchone()
        if not updated:
            if row is None:
                raise NotFoundError(f"metadata record {path!r} does not exist", key=path)
            raise ConflictError(
                f"metadata record {path!r} is at version {row[0]}, not {expected_version}: another writer changed "
                "it; re-read it and try again"
            )
        return Versioned(value, expected_version + 1)

    def delete(self, path: str, expected_version: int | None = None) -> None:
        with self._lock:
            self._changing(path)
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute("SELECT version FROM records WHERE path = ?", (path,)).fetchone()
                if row is not None and expected_version is not None and int(row[0]) != expected_version:
                    raise ConflictError(
                        f"metadata record {path!r} is at version {row[0]}, not {expected_version}; not deleted"
                    )
                self._db.execute("DELETE FROM records WHERE path = ?", (path,))
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def children(self, prefix: str) -> Iterator[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT path FROM records WHERE substr(path, 1, ?) = ? ORDER BY path", (len(prefix), prefix)
            ).fetchall()
        return iter([str(row[0]) for row in rows])

    def close(self) -> None:
        with self._lock:
            self._db.close()
