"""A local directory as an object store, durable across crashes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from typing import BinaryIO

from fsspec.implementations.local import LocalFileSystem

from offload_core.directory_temporaries import TMP_DIR, marker_name
from offload_core.errors import ConfigError, InvalidKeyError
from offload_core.fsspec_driver import FsspecDriver
from offload_core.fsutil import fsync_dir
from offload_core.keys import RESERVED_SEGMENT_PREFIX
from offload_core.model import ObjectInfo
from offload_core.urls import redact_url

from .sorted_names import sorted_names

__all__ = ["FilesystemDriver"]

_LOCK_FILE = RESERVED_SEGMENT_PREFIX + "lock"
# Written-back a mebibyte at a time at least: one system call per part of a
# stream of small parts would cost more than the early writeback saves.
_WRITEBACK_CHUNK = 1 << 20


class FilesystemDriver(FsspecDriver):
    """Objects are files under ``root``; see the package README for layout.

    ``create`` makes ``root`` if it is missing (otherwise a missing root is
    a :class:`ConfigError`); ``fsync=False`` trades crash durability for
    speed (atomicity is kept: a crash may lose a recent write, never tear
    one).

    Keys map to literal paths below ``root``: a symbolic link inside the
    root is never followed (reads, stats, writes and deletes through one
    raise :class:`InvalidKeyError`; listings skip it), so no key can reach
    a file outside the root, whatever links someone placed there.
    """

    name = "filesystem"

    def __init__(self, root: str, *, create: bool | str = True, fsync: bool | str = True) -> None:
        if not root:
            raise ConfigError("filesystem driver needs a root directory: open_driver('file:///path/to/bucket')")
        create = _flag("create", create)
        fsync = _flag("fsync", fsync)
        absolute = os.path.abspath(os.path.expanduser(root))
        if create and not os.path.exists(absolute):
            try:
                os.makedirs(absolute, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    f"filesystem driver root {absolute!r} cannot be created ({exc.strerror or exc}); choose a "
                    "directory you can write"
                ) from None
        if not os.path.isdir(absolute):
            raise ConfigError(
                f"filesystem driver root {absolute!r} is not a directory: "
                "it is missing (pass create=True) or names a file"
            )
        super().__init__(LocalFileSystem(), absolute)
        self._real_root = os.path.realpath(absolute)
        self._fsync = fsync
        self._flock_depth = 0
        self._flock_guard = threading.RLock()
        self._owner_fd: int | None = None

    @classmethod
    def from_url(cls, url: str, *, create: bool | str = True, fsync: bool | str = True) -> FilesystemDriver:
        """``file:///abs/path`` or ``file://relative/path``: everything after
        ``file://`` is the root directory."""
        scheme, _, path = url.partition("://")
        if scheme.lower() != "file":
            raise ConfigError(f"filesystem driver opens file:// URLs, not {redact_url(url)!r}")
        return cls(path, create=create, fsync=fsync)

    def __repr__(self) -> str:
        return f"FilesystemDriver({self.root!r})"

    def create_bucket(self) -> bool:
        """The root is there: opening the driver made it (``create``) or
        refused a missing one."""
        return False

    def _path(self, key: str) -> str:
        return self._confined(key, super()._path(key))

    def _meta_path(self, key: str) -> str:
        return self._confined(key, super()._meta_path(key))

    def _pending_path(self, key: str) -> str:
        return self._confined(key, super()._pending_path(key))

    def _confined(self, key: str, path: str) -> str:
        """``path`` if resolving it follows no symbolic link below the root;
        else :class:`InvalidKeyError`."""
        if os.path.realpath(path) != self._real_root + path[len(self.root) :]:
            raise InvalidKeyError(
                f"object key {key!r} leads through a symbolic link under {self.root!r}; the filesystem driver "
                "follows no links inside its root, so no key can reach outside it: remove the link"
            )
        return path

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        directory = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        if directory:
            try:
                self._confined(prefix, self._path(directory))
            except InvalidKeyError:
                return iter(())
        return self._walk(directory, prefix)

    def _walk(self, directory: str, prefix: str) -> Iterator[ObjectInfo]:
        """Objects below ``directory`` whose keys start with ``prefix``, in
        key order, the names of each directory entered held compactly
        (:func:`~offload_driver_filesystem.sorted_names.sorted_names`). A directory's
        entries sort as ``name/`` so that ``a-b`` comes before ``a/x``, as
        the keys do; symbolic links (and whatever is neither a file nor a
        directory) are skipped, and so is a file deleted while its
        directory is listed."""
        base = os.path.join(self.root, directory) if directory else self.root
        # What a name at this level must start with: the prefix's last segment where the listing starts
        # (_list starts at the prefix's directory), nothing below it (a directory entered matched it).
        wanted = prefix[len(directory) + 1 :] if directory else prefix
        self._count_request("list")  # one directory scan
        try:
            with os.scandir(base) as scan:
                # Names only, and only those the prefix wants: a scan's entries (and the stat each caches
                # once asked) cost ten times a name, and a store's directory may hold every object.
                names = sorted_names(
                    name for name in map(_listed_name, scan) if name is not None and name.startswith(wanted)
                )
        except (FileNotFoundError, NotADirectoryError):
            return
        for name in names:
            key = f"{directory}/{name}" if directory else name
            if name.endswith("/"):
                yield from self._walk(key[:-1], prefix)
                continue
            try:
                size = os.lstat(os.path.join(base, name)).st_size
            except FileNotFoundError:
                continue  # deleted since the scan: listed as a store lists it after the delete
            yield ObjectInfo(key=key, size=size)

    def _create_file(self, path: str) -> BinaryIO:
        out = open(path, "xb")  # noqa: SIM115 - the caller closes it (a context manager around the writes)
        # Held while the data is written: the sweep of leftovers never
        # removes a temporary file a live writer has locked.
        fcntl.flock(out.fileno(), fcntl.LOCK_EX)
        return out

    def _held_by_a_writer(self, path: str) -> bool:
        return _locked(path) is True

    def _claim_owner(self) -> None:
        # Created and locked under the commit lock, which every sweep holds
        # while it judges owners: none sees the marker before it is locked.
        # Exclusive, as a writer's lock on its data is: a sweep probes with a
        # shared lock (see _locked). A forked child keeping the descriptor
        # (and writing as the same owner) shares this lock, which belongs
        # to the open file, so it keeps the marker locked too.
        if self._owner_fd is not None:
            return
        with self._commit_lock():
            if self._owner_fd is None:
                path = os.path.join(self.root, TMP_DIR, marker_name(self._owner))
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._owner_fd = fd

    def _owner_alive(self, owner: str) -> bool | None:
        return _locked(os.path.join(self.root, TMP_DIR, marker_name(owner)))

    def close(self) -> None:
        """Remove this driver's owner marker: its temporary files (none,
        unless removing one failed) are judged by their age from now on."""
        if self._owner_fd is None:
            return
        with self._commit_lock():
            if self._owner_fd is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.root, TMP_DIR, marker_name(self._owner)))
                os.close(self._owner_fd)
                self._owner_fd = None

    def _part_written(self, out: BinaryIO, start: int, end: int) -> None:
        # Without this the whole object is dirty in the page cache until the
        # fsync at its end, which then waits for all of it: an offload that
        # streams its parts as they are framed would add that whole wait
        # after its last part. POSIX_FADV_DONTNEED starts the writeback of
        # the range on Linux without waiting for it (PostgreSQL's
        # pg_flush_data relies on the same where sync_file_range, which
        # Python does not expose, is missing); pages still dirty are not
        # dropped from the cache by it.
        if not self._fsync or not hasattr(os, "posix_fadvise"):
            return
        first, last = start - start % _WRITEBACK_CHUNK, end - end % _WRITEBACK_CHUNK
        if last > first:
            out.flush()
            # Advice only: a filesystem that refuses it costs speed, never the write.
            with contextlib.suppress(OSError):
                os.posix_fadvise(out.fileno(), first, last - first, os.POSIX_FADV_DONTNEED)

    def _make_durable(self, out: BinaryIO) -> None:
        out.flush()
        if self._fsync:
            os.fsync(out.fileno())

    def _sync_directory(self, path: str) -> None:
        if self._fsync:
            fsync_dir(path)

    def _rename(self, src: str, dst: str) -> None:
        self._count_request("write")
        parent = os.path.dirname(dst)
        os.makedirs(parent, exist_ok=True)
        os.replace(src, dst)
        # The new name is what must survive a crash (as in PostgreSQL's
        # durable_rename). The old one is in .offload-tmp or is the pending
        # record beside the new: syncing its directory too cost a device
        # flush (0.2 ms here) per rename, and an old name that came back
        # after a crash would be a stray temporary file, which the
        # sweep of leftovers removes.
        if self._fsync:
            fsync_dir(parent)

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


def _locked(path: str) -> bool | None:
    """Whether some process holds an exclusive lock on the file at ``path``
    (a live writer on its data, or a live owner on its marker); ``None`` if
    there is no such file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    try:
        # Shared, so that no probe is mistaken for a live writer by another:
        # a concurrent sweep's, or this one's own earlier probe whose
        # descriptor a fork in another thread copied (the copy keeps the
        # lock until the child closes it), which an exclusive probe would
        # leave held while the sweep re-checks the same file.
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _flag(name: str, value: object) -> bool:
    """A boolean option, also as the text ``true``/``false`` (Spark and
    ``-o`` options arrive as text); anything else is a :class:`ConfigError`."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"filesystem driver option {name!r} is true or false, not {value!r}")


def _listed_name(entry: os.DirEntry[str]) -> str | None:
    """A scanned entry as the listing sorts it: a file's name, a
    directory's with ``/`` (so that ``a-b`` comes before ``a/x``, as the
    keys do), ``None`` for a reserved name, a symbolic link or anything
    else."""
    if entry.name.startswith(RESERVED_SEGMENT_PREFIX):
        return None
    if entry.is_dir(follow_symlinks=False):
        return entry.name + "/"
    return entry.name if entry.is_file(follow_symlinks=False) else None
