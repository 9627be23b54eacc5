"""Objects as chunked rows in a SQLite file."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence

from offload_core import AlreadyExistsError, ConfigError, NotFoundError, ObjectInfo, StorageDriver
from offload_core.storage import BytesLike, slice_range

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, size INTEGER NOT NULL, metadata TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    key TEXT NOT NULL, start INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (key, start)
);
"""


class SqliteDriver(StorageDriver):
    """Every object in one SQLite database file at ``path``.

    Each write is one transaction, so a failure (including the part
    iterator raising) rolls back and leaves nothing behind.
    """

    name = "sqlite"

    def __init__(self, path: str) -> None:
        if not path:
            raise ConfigError("sqlite driver needs a database path: open_driver('sqlite:///path/to/bucket.db')")
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str) -> SqliteDriver:
        """``sqlite:///abs/path.db`` or ``sqlite://relative.db``."""
        return cls(url.partition("://")[2])

    def close(self) -> None:
        self._db.close()

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if if_absent and self._row(key) is not None:
                    raise AlreadyExistsError(f"object {key!r} already exists in {self.path}", key=key)
                self._db.execute("DELETE FROM chunks WHERE key = ?", (key,))
                size = 0
                for part in parts:
                    if len(part):
                        self._db.execute("INSERT INTO chunks VALUES (?, ?, ?)", (key, size, bytes(part)))
                        size += len(part)
                self._db.execute("INSERT OR REPLACE INTO objects VALUES (?, ?, ?)", (key, size, json.dumps(metadata)))
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return ObjectInfo(key=key, size=size, metadata=metadata)

    def _row(self, key: str) -> tuple[int, str] | None:
        row = self._db.execute("SELECT size, metadata FROM objects WHERE key = ?", (key,)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def _existing(self, key: str) -> tuple[int, str]:
        row = self._row(key)
        if row is None:
            raise NotFoundError(f"object {key!r} not found in {self.path}", key=key)
        return row

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        with self._lock:
            size, _ = self._existing(key)
            first, last = slice_range(key, size, start, end)
            chunks = self._db.execute(
                "SELECT start, data FROM chunks WHERE key = ? AND start < ? AND start + length(data) > ? "
                "ORDER BY start",
                (key, last, first),
            ).fetchall()
        out = bytearray()
        for chunk_start, data in chunks:
            out += data[max(first - chunk_start, 0) : last - chunk_start]
        return bytes(out)

    def _stat(self, key: str) -> ObjectInfo:
        with self._lock:
            size, metadata = self._existing(key)
        return ObjectInfo(key=key, size=size, metadata=json.loads(metadata))

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        with self._lock:
            rows = self._db.execute(
                "SELECT key, size FROM objects WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix)
            ).fetchall()
        return iter([ObjectInfo(key=key, size=size) for key, size in rows])

    def _delete(self, keys: Sequence[str]) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            for key in keys:
                self._db.execute("DELETE FROM chunks WHERE key = ?", (key,))
                self._db.execute("DELETE FROM objects WHERE key = ?", (key,))
            self._db.execute("COMMIT")
