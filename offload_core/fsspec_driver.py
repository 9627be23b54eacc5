"""A :class:`~offload_core.storage.StorageDriver` over any fsspec filesystem.

Object stores with native user metadata (S3, GCS) map each object to one
file; directory stores (a local disk, HDFS) keep metadata in sidecars and
commit object and sidecar together through a pending record, so a crash at
any step leaves either the old object or the new one. The temporary files
killed writers leave behind are listed and removed by
:mod:`offload_core.directory_temporaries`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from .directory_temporaries import (
    META_DIR,
    TMP_DIR,
    list_directory_temporaries,
    new_owner,
    remove_directory_temporaries,
    temporary_name,
)
from .errors import (
    AccessDeniedError,
    AlreadyExistsError,
    InvalidKeyError,
    NotFoundError,
    OffloadError,
    TransientStorageError,
)
from .formats.sidecar_records import decode_record, encode_record, etag_of, is_reserved, record_problem
from .model import ObjectInfo, Temporary
from .retry import RetryPolicy
from .storage import BytesLike, StorageDriver

__all__ = ["FsspecDriver"]

_log = logging.getLogger(__name__)

_UNCHECKED_RANGE = 64 * 2**20


class FsspecDriver(StorageDriver):
    """A :class:`StorageDriver` over any fsspec filesystem, rooted at ``root``.

    Objects are files at ``{root}/{key}``. A backend with native user
    metadata sets ``native_metadata = True`` and overrides
    :meth:`_write_object` and :meth:`_metadata_from_info`. Otherwise metadata
    lives in a sidecar (``{root}/.offload-meta/{key}.json``) and a write
    commits object and sidecar together through a pending record:

    1. the data is streamed to a temporary file in ``.offload-tmp/``;
    2. under the commit lock, ``.offload-meta/{key}.pending`` is created
       atomically, naming the temporary file and the metadata (the commit
       point);
    3. the temporary file is renamed onto the key, then the pending record
       onto the sidecar.

    Any reader that finds a pending record first rolls it forward, so after
    a crash at any step the key shows either the old object with its old
    metadata or the new one with the new. This mode needs atomic rename
    (local disks, HDFS); subclasses add durability (fsync) and
    cross-process locking in :meth:`_create_file`, :meth:`_make_durable`,
    :meth:`_sync_directory`, :meth:`_rename` and :meth:`_commit_lock`, and
    tell live writers from dead ones in :meth:`_claim_owner`,
    :meth:`_owner_alive` and :meth:`_held_by_a_writer`.
    """

    native_metadata: ClassVar[bool] = False
    counts_requests: ClassVar[bool] = True

    def __init__(self, fs: Any, root: str, *, retry: RetryPolicy | None = None) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.retry = retry if retry is not None else RetryPolicy()
        self._lock = threading.RLock()
        self._owner = new_owner()

    # -- errors and retries ------------------------------------------------

    def _translate(self, exc: Exception, key: str) -> Exception:
        """Our error for a backend exception (``exc`` itself if unknown).
        Subclasses extend this with their backend's error codes."""
        if isinstance(exc, OffloadError):
            return exc
        if isinstance(exc, (FileNotFoundError, IsADirectoryError)):
            return NotFoundError(f"object {key!r} not found under {self.root!r}", key=key)
        if isinstance(exc, FileExistsError):
            return AlreadyExistsError(f"object {key!r} already exists under {self.root!r}", key=key)
        if isinstance(exc, PermissionError):
            return AccessDeniedError(
                f"access to {key!r} under {self.root!r} was denied ({exc}); check the credentials and permissions"
            )
        if isinstance(exc, (TimeoutError, ConnectionError)):
            return TransientStorageError(f"{type(exc).__name__} on {key!r} under {self.root!r}: {exc}")
        return exc

    def _path(self, key: str) -> str:
        return f"{self.root}/{key}"

    def _meta_path(self, key: str) -> str:
        return f"{self.root}/{META_DIR}/{key}.json"

    def _pending_path(self, key: str) -> str:
        return f"{self.root}/{META_DIR}/{key}.pending"

    def _tmp_path(self, suffix: str = "") -> str:
        return f"{self.root}/{TMP_DIR}/{temporary_name(self._owner, suffix)}"

    # -- primitives a subclass may harden -------------------------------

    def _put_file(self, path: str, parts: Iterable[BytesLike]) -> int:
        """Write ``parts`` to ``path`` (a private temporary name); return the
        size. On failure, remove what was written and re-raise."""
        self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        self._claim_owner()
        self._count_request("write")
        size = 0
        try:
            with self._create_file(path) as out:
                for part in parts:
                    out.write(part)
                    self._part_written(out, size, size + len(part))
                    size += len(part)
                self._make_durable(out)
        except BaseException:
            self._remove_quietly(path)
            raise
        return size

    def _create_file(self, path: str) -> Any:
        """Open ``path`` for writing (a binary file object)."""
        return self.fs.open(path, "wb")

    def _part_written(self, out: Any, start: int, end: int) -> None:
        """Called after each part, which took bytes ``start..end`` of the
        file; a store that buffers in the OS may start writing them back
        here, so that :meth:`_make_durable` finds little left to do.
        Nothing by default."""

    def _make_durable(self, out: Any) -> None:
        """Called with the written file still open; a store that buffers in
        the OS (a local disk) flushes and syncs here. Nothing by default."""

    def _sync_directory(self, path: str) -> None:
        """Make the entries of directory ``path`` (files created in it)
        durable; a store that buffers in the OS syncs here. Called before a
        commit point for the directory of temporary files. Nothing by
        default."""

    def _rename(self, src: str, dst: str) -> None:
        self._count_request("write")
        self.fs.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
        self.fs.mv(src, dst)

    @contextlib.contextmanager
    def _commit_lock(self) -> Iterator[None]:
        with self._lock:
            yield

    def _claim_owner(self) -> None:
        """Called before each temporary file is created: a store that can
        tell a live process from a dead one marks this driver's temporary
        files as held while it lives (see
        :mod:`~offload_core.directory_temporaries`). Nothing by default."""

    def _owner_alive(self, owner: str) -> bool | None:
        """Whether the driver instance ``owner`` that made a temporary file
        is alive; ``None`` when the store cannot tell (the default)."""
        return None

    def _held_by_a_writer(self, path: str) -> bool:
        """Whether a live writer still has the temporary file ``path``
        open; a store that cannot tell relies on its owner and age alone."""
        return False

    def _remove_quietly(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(path)

    def _remove_with_retries(self, key: str, path: str) -> None:
        self._call(key, lambda: self._remove_quietly(path), op="delete")

    # -- native metadata hooks ------------------------------------------

    def _write_object(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> int:
        raise NotImplementedError(f"{type(self).__name__} sets native_metadata but has no _write_object")

    def _metadata_from_info(self, key: str, info: Mapping[str, Any]) -> dict[str, str]:
        raise NotImplementedError(f"{type(self).__name__} sets native_metadata but has no _metadata_from_info")

    # -- the contract ----------------------------------------------------

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        if self.native_metadata:
            size = self._write_object(key, parts, metadata, if_absent)
            return ObjectInfo(key=key, size=size, metadata=metadata)
        tmp = self._tmp_path()
        size = self._put_file(tmp, parts)
        committed = False
        try:
            with self._commit_lock():
                self._roll_forward(key)
                if if_absent and self._data_exists(key):
                    raise AlreadyExistsError(
                        f"object {key!r} already exists; conditional create refused to replace it", key=key
                    )
                self._check_parent_is_not_object(key)
                if not self.fs.exists(tmp):
                    raise TransientStorageError(
                        f"write of {key!r}: its temporary file was swept as abandoned before it was committed; "
                        "write again"
                    )
                record = encode_record(tmp, size, metadata)
                self._publish_pending(key, record)
                committed = True
                self._roll_forward(key)
        finally:
            # Once the pending record exists the temporary file is the
            # committed data: only a roll-forward may move it.
            if not committed:
                self._remove_quietly(tmp)
        return ObjectInfo(key=key, size=size, metadata=metadata)

    def _publish_pending(self, key: str, record: bytes) -> None:
        """Create ``key``'s pending record atomically (the commit point).
        On failure nothing is left: neither the record's temporary file nor
        a record whose rename went through before a later step (a directory
        sync) failed. Called under the commit lock, so no reader has rolled
        such a record forward."""
        record_tmp = self._tmp_path(".pending")
        pending = self._pending_path(key)
        self._put_file(record_tmp, [record])  # removes what it wrote if it fails
        try:
            # Once the record is in place a crash is rolled forward from the
            # data's temporary file: its name must survive one by then.
            self._sync_directory(record_tmp.rsplit("/", 1)[0])
            self._rename(record_tmp, pending)
        except BaseException:
            if self.fs.exists(record_tmp):
                self._remove_quietly(record_tmp)
            else:
                self._remove_quietly(pending)
            raise

    def _check_parent_is_not_object(self, key: str) -> None:
        segments = key.split("/")
        for depth in range(1, len(segments)):
            parent = "/".join(segments[:depth])
            if self._data_exists(parent):
                raise InvalidKeyError(
                    f"object {key!r} cannot be stored: {parent!r} is an object, and a directory store cannot "
                    "hold a key below another key; choose keys that are not prefixes of each other by segment"
                )
        if self.fs.isdir(self._path(key)):
            raise InvalidKeyError(
                f"object {key!r} cannot be stored: keys below it exist, and a directory store cannot hold "
                "a key above other keys; choose keys that are not prefixes of each other by segment"
            )

    def _roll_forward(self, key: str) -> None:
        """Finish a committed write of ``key`` left half-applied (by a crash
        or by this write); a no-op when there is none. A corrupt pending
        record is discarded (logged), so the committed object stays
        readable; it never moves a file from outside ``.offload-tmp/``."""
        if self.native_metadata:
            return  # no sidecars, nothing to roll forward
        pending = self._pending_path(key)
        self._count_request("stat")
        if not self.fs.exists(pending):
            return
        with self._commit_lock():
            record = self._load_record(key, pending)
            if record is None:
                return  # another process finished it, or it was corrupt and is gone
            if self.fs.exists(record["tmp"]):
                self._rename(record["tmp"], self._path(key))
            self._rename(pending, self._meta_path(key))

    def _load_record(self, key: str, path: str) -> dict[str, Any] | None:
        """The pending record or sidecar at ``path``, checked; ``None`` if it
        is missing, or if it is a corrupt pending record (then removed).
        Raises :class:`OffloadError` naming the file for a corrupt sidecar
        or a record that cannot be read."""
        self._count_request("stat")
        try:
            raw = self.fs.cat_file(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise OffloadError(
                f"metadata record {path!r} of {key!r} cannot be read ({exc}); check the file's permissions"
            ) from exc
        problem = record_problem(raw, pending=path.endswith(".pending"), tmp_dir=f"{self.root}/{TMP_DIR}/")
        if problem is None:
            return decode_record(raw)
        if path.endswith(".pending"):
            _log.warning("discarding the corrupt pending record %s of %r (%s)", path, key, problem)
            self._remove_quietly(path)
            return None
        raise OffloadError(
            f"metadata sidecar {path!r} of {key!r} is corrupt ({problem}); rewrite the object to repair it, "
            "or delete it"
        )

    def list_temporaries(self) -> Iterator[Temporary]:
        if self.native_metadata:
            return iter(())  # one file per object: no temporary files of ours
        return list_directory_temporaries(self)

    def remove_temporaries(self, temporaries: Iterable[Temporary], *, dry_run: bool = False) -> tuple[Temporary, ...]:
        if self.native_metadata:
            return super().remove_temporaries(temporaries, dry_run=dry_run)
        return remove_directory_temporaries(self, temporaries, dry_run=dry_run)

    def _data_exists(self, key: str) -> bool:
        self._count_request("stat")
        return bool(self.fs.isfile(self._path(key)))

    def _info(self, key: str) -> Mapping[str, Any]:
        self._roll_forward(key)
        info = dict(self._call(key, lambda: self.fs.info(self._path(key)), op="stat"))
        if info.get("type") != "file":
            raise NotFoundError(f"object {key!r} not found under {self.root!r}", key=key)
        return info

    def _stat(self, key: str) -> ObjectInfo:
        info = self._info(key)
        metadata = self._metadata_from_info(key, info) if self.native_metadata else self._sidecar_metadata(key)
        return ObjectInfo(key=key, size=int(info["size"]), metadata=metadata, etag=etag_of(info))

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        if self.native_metadata:
            return super()._replace_metadata(key, metadata)  # a native store overrides this itself
        with self._commit_lock():
            info = self._info(key)  # rolls a pending write forward first
            # A new sidecar, renamed over the old one: readers see the old
            # metadata or the new, never a mix; the data file is untouched.
            record = encode_record("", int(info["size"]), metadata)
            record_tmp = self._tmp_path(".meta")
            self._put_file(record_tmp, [record])
            try:
                self._rename(record_tmp, self._meta_path(key))
            except BaseException:
                self._remove_quietly(record_tmp)
                raise
        return ObjectInfo(key=key, size=int(info["size"]), metadata=metadata, etag=etag_of(info))

    def _sidecar_metadata(self, key: str) -> dict[str, str]:
        record = self._load_record(key, self._meta_path(key))
        return {} if record is None else dict(record["metadata"])

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        self._roll_forward(key)
        path = self._path(key)
        if end is not None and end - start > _UNCHECKED_RANGE:
            # Some filesystems (local files among them) allocate the whole
            # requested range before reading: clamp a huge one to the size.
            end = min(end, self._info(key)["size"])
            if start >= end:
                return self._empty_read(key, start, end)
        data: bytes = self._call(key, lambda: self.fs.cat_file(path, start=start, end=end), op="read")
        return data or self._empty_read(key, start, end)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        directory = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        base = self._path(directory) if directory else self.root
        try:
            found = self._call(prefix, lambda: self.fs.find(base, detail=True, withdirs=False), op="list")
        except NotFoundError:
            return iter(())
        root = self.root + "/"
        infos = []
        for path, info in found.items():
            key = path[len(root) :] if path.startswith(root) else None
            if key is None or not key.startswith(prefix) or is_reserved(key):
                continue
            infos.append(ObjectInfo(key=key, size=int(info["size"]), etag=etag_of(info)))
        infos.sort(key=lambda info: info.key)
        return iter(infos)

    def _delete(self, keys: Sequence[str]) -> None:
        with self._commit_lock():
            for key in keys:
                self._roll_forward(key)
                # Data first: a crash in between leaves an invisible sidecar,
                # never an object without its metadata.
                self._remove_with_retries(key, self._path(key))
                if not self.native_metadata:
                    self._remove_with_retries(key, self._meta_path(key))
