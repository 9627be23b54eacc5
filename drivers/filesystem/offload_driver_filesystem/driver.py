"""A local directory as an object store, durable across crashes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from typing import BinaryIO

from fsspec.implementations.local import LocalFileSystem

from offload_core.errors import ConfigError
from offload_core.fsutil import fsync_dir
from offload_core.keys import RESERVED_SEGMENT_PREFIX
from offload_core.storage import FsspecDriver

__all__ = ["FilesystemDriver"]

_LOCK_FILE = RESERVED_SEGMENT_PREFIX + "lock"


class FilesystemDriver(FsspecDriver):
    """Objects are files under ``root``; see the package README for layout.

    ``create`` makes ``root`` if it is missing (otherwise a missing root is
    a :class:`ConfigError`); ``fsync=False`` trades crash durability for
    speed (atomicity is kept: a crash may lose a recent write, never tear
    one).
    """

    name = "filesystem"

    def __init__(self, root: str, *, create: bool = True, fsync: bool = True) -> None:
        if not root:
            raise ConfigError("filesystem driver needs a root directory: open_driver('file:///path/to/bucket')")
        absolute = os.path.abspath(os.path.expanduser(root))
        if create and not os.path.exists(absolute):
            os.makedirs(absolute, exist_ok=True)
        if not os.path.isdir(absolute):
            raise ConfigError(
                f"filesystem driver root {absolute!r} is not a directory: "
                "it is missing (pass create=True) or names a file"
            )
        super().__init__(LocalFileSystem(), absolute)
        self._fsync = fsync
        self._flock_depth = 0
        self._flock_guard = threading.RLock()

    @classmethod
    def from_url(cls, url: str, *, create: bool = True, fsync: bool = True) -> FilesystemDriver:
        """``file:///abs/path`` or ``file://relative/path``: everything after
        ``file://`` is the root directory."""
        scheme, _, path = url.partition("://")
        if scheme.lower() != "file":
            raise ConfigError(f"filesystem driver opens file:// URLs, not {url!r}")
        return cls(path, create=create, fsync=fsync)

    def __repr__(self) -> str:
        return f"FilesystemDriver({self.root!r})"

    def _create_file(self, path: str) -> BinaryIO:
        return open(path, "xb")

    def _make_durable(self, out: BinaryIO) -> None:
        out.flush()
        if self._fsync:
            os.fsync(out.fileno())

    def _rename(self, src: str, dst: str) -> None:
        parent = os.path.dirname(dst)
        os.makedirs(parent, exist_ok=True)
        os.replace(src, dst)
        if self._fsync:
            fsync_dir(parent)
            fsync_dir(os.path.dirname(src))

    def _remove_quietly(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)

    @contextlib.contextmanager
    def _commit_lock(self) -> Iterator[None]:
        # flock is per open file description, so nest in-process holders on
        # one descriptor and only take the OS lock at the outermost level.
        with self._flock_guard:
            if self._flock_depth == 0:
                self._lock_fd = os.open(os.path.join(self.root, _LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            self._flock_depth += 1
            try:
                yield
            finally:
                self._flock_depth -= 1
                if self._flock_depth == 0:
                    os.close(self._lock_fd)
