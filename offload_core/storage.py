"""The storage driver interface: the only layer that touches object stores.

A backend subclasses :class:`StorageDriver` and implements the five
protected methods (``_write``, ``_read``, ``_stat``, ``_list``,
``_delete``). The public methods validate keys, ranges and metadata first,
so every backend enforces the same contract; ``offload_core.testing``
holds the test kit that proves a backend keeps it.

:class:`FsspecDriver` implements the interface on any fsspec filesystem.
"""

from __future__ import annotations

import abc
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import ClassVar, TypeVar

from .errors import (
    ConfigError,
    InvalidKeyError,
    InvalidMetadataError,
    InvalidRangeError,
    NotFoundError,
)
from .keys import validate_key, validate_prefix
from .model import ObjectInfo, Temporary
from .retry import RetryPolicy, call_with_retries
from .urls import redact_url

__all__ = [
    "BytesLike",
    "ObjectInfo",
    "StorageDriver",
    "key_prefix",
    "split_bucket_url",
    "validate_metadata",
]

BytesLike = bytes | bytearray | memoryview
T = TypeVar("T")

_METADATA_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,127}$")


def validate_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """Return ``metadata`` as a plain dict if every backend can store it.

    Names are lowercase ``[a-z0-9_.-]`` (S3 folds names to lowercase, so
    mixed case would not round-trip); values are any strings, including
    non-ASCII ones. Raises :class:`InvalidMetadataError` otherwise.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidMetadataError(f"metadata must be a mapping of str to str, got {type(metadata).__name__}")
    checked: dict[str, str] = {}
    for name, value in metadata.items():
        if not isinstance(name, str) or not _METADATA_NAME.match(name):
            raise InvalidMetadataError(
                f"metadata name {name!r} is not allowed: use 1-128 lowercase letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
        if not isinstance(value, str):
            raise InvalidMetadataError(
                f"metadata value for {name!r} must be a str, got {type(value).__name__}; convert it with str()"
            )
        if "\x00" in value:
            raise InvalidMetadataError(f"metadata value for {name!r} contains a NUL byte")
        checked[name] = value
    return checked


def _single_parts(parts: Iterable[BytesLike] | BytesLike) -> Iterable[BytesLike]:
    if isinstance(parts, (bytes, bytearray, memoryview)):
        return (parts,)
    return parts


def checked_parts(parts: Iterable[BytesLike] | BytesLike) -> Iterator[bytes | bytearray | memoryview]:
    """Yield the parts of a write, rejecting anything that is not bytes-like.

    A bare bytes object is one part (iterating it would give ints)."""
    for part in _single_parts(parts):
        if not isinstance(part, (bytes, bytearray, memoryview)):
            raise TypeError(f"write parts must be bytes-like, got {type(part).__name__}")
        yield part


class StorageDriver(abc.ABC):
    """A flat namespace of immutable objects addressed by key.

    Contract (enforced here and by ``offload_core.testing.DriverContract``):

    * ``write`` is all-or-nothing: if it raises (including when the
      ``parts`` iterator raises halfway), no new object is visible and any
      previous object under the key is unchanged.
    * ``read`` takes a half-open byte range; an ``end`` past the object's
      end is truncated; a ``start`` at or past the end raises
      :class:`InvalidRangeError`, except that reading a whole empty object
      (``read(key)``) returns ``b""``.
    * A missing key raises :class:`NotFoundError` from ``read`` and ``stat``.
    * ``list`` yields objects sorted by key; ``delete`` is idempotent.
    * Keys are validated by :func:`offload_core.keys.validate_key`: at most
      1024 bytes, each ``/``-separated segment at most 240 bytes of UTF-8
      (:data:`offload_core.keys.MAX_SEGMENT_BYTES`), so a key valid on one
      backend is valid on all of them.
    * A store whose killed writers can leave files behind lists them with
      :meth:`list_temporaries` and removes them with
      :meth:`remove_temporaries`: never a live writer's, never a committed
      object or its metadata.
    """

    #: The name the driver is registered under (set by subclasses).
    name: ClassVar[str] = ""
    #: Smallest part a multipart write accepts (except the last); S3's is
    #: 5 MiB. Offloaders refuse block sizes below it.
    min_part_size: int = 0
    #: Bounded, jittered retries of transient failures (see :meth:`_call`).
    retry: RetryPolicy = RetryPolicy()
    #: True for a driver that counts each request it sends (every attempt,
    #: listing page and upload part) through :meth:`_call` and
    #: :meth:`_count_request`; for the others each public call counts as one.
    counts_requests: ClassVar[bool] = False

    @property
    def request_counts(self) -> Counter[str]:
        """Requests sent so far, by operation (``read``, ``write``, ``stat``,
        ``list``, ``delete``): each retry attempt, listing page and part of
        a multipart upload is one."""
        counts: Counter[str] | None = self.__dict__.get("_request_counts")
        if counts is None:
            counts = self.__dict__["_request_counts"] = Counter()
        return counts

    def _count_request(self, op: str, n: int = 1) -> None:
        # Read-ahead threads send requests at once; ``+=`` on a Counter is
        # a read and a write, so it needs the lock not to lose counts.
        lock: threading.Lock = self.__dict__.setdefault("_count_lock", threading.Lock())
        with lock:
            self.request_counts[op] += n

    def _translate(self, exc: Exception, key: str) -> Exception:
        """Our error for a backend exception; ``exc`` itself if unknown.
        Backends map their error codes here."""
        return exc

    def _empty_read(self, key: str, start: int, end: int | None) -> bytes:
        """The answer to a read that came back (or would come back) empty:
        ``b""`` for an empty range inside the object, else
        :class:`InvalidRangeError` for a start at or past its end. Only the
        object's size tells which, so this costs a stat."""
        slice_range(key, self._stat(key).size, start, end)
        return b""

    def _call(self, key: str, action: Callable[[], T], op: str | None = None) -> T:
        """Run one storage request: translate its errors with
        :meth:`_translate`, retry :class:`TransientStorageError` with
        bounded, jittered backoff (``self.retry``), never forever. Each
        attempt counts as an ``op`` request (on a driver that
        :attr:`counts_requests`)."""

        def attempt() -> T:
            if op is not None and self.counts_requests:
                self._count_request(op)
            try:
                return action()
            except Exception as exc:
                mapped = self._translate(exc, key)
                if mapped is exc:
                    raise
                raise mapped from exc

        return call_with_retries(attempt, self.retry)

    # Drivers registered for a URL scheme also define a classmethod
    # ``from_url(url, **options)``; its options are theirs to choose, so it
    # is not declared here (an override could not narrow them).

    def write(
        self,
        key: str,
        parts: Iterable[BytesLike] | BytesLike,
        *,
        metadata: Mapping[str, str] | None = None,
        if_absent: bool = False,
    ) -> ObjectInfo:
        """Store the concatenation of ``parts`` under ``key``, with user
        ``metadata``, replacing any object there.

        Parts are consumed as they come (a multipart upload where the
        backend has one), so a large object never has to be in memory.
        Raises :class:`AlreadyExistsError` when ``if_absent`` is true and the
        key exists, :class:`InvalidKeyError` / :class:`InvalidMetadataError`
        for bad input, and re-raises whatever the ``parts`` iterator raises;
        in every failure case no object becomes visible.
        """
        validate_key(key)
        checked = validate_metadata(metadata)
        if not self.counts_requests:
            self._count_request("write")
        return self._write(key, checked_parts(parts), checked, if_absent)

    def read(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Return bytes ``[start, end)`` of the object (``end=None``: to its end).

        Raises :class:`NotFoundError` for a missing key and
        :class:`InvalidRangeError` for a start or end that is not an ``int``
        (bools included), a negative or reversed range, or a ``start`` at or
        past the object's end. An ``end`` far past the object's end (up to
        ``2**63 - 1``) is truncated without allocating for it.
        """
        validate_key(key)
        check_range_types(key, start, end)
        if start < 0:
            raise InvalidRangeError(f"read of {key!r}: start must be non-negative, got {start}")
        if end is not None and end < start:
            raise InvalidRangeError(f"read of {key!r}: end {end} is before start {start}")
        if not self.counts_requests:
            self._count_request("read")
        try:
            return self._read(key, start, end)
        except InvalidRangeError:
            # Stores answer a whole-object read of an empty object with
            # "range not satisfiable"; the contract says it is b"".
            if start == 0 and end is None and self._stat(key).size == 0:
                return b""
            raise

    def stat(self, key: str) -> ObjectInfo:
        """Return the object's size and metadata; :class:`NotFoundError` if missing."""
        validate_key(key)
        if not self.counts_requests:
            self._count_request("stat")
        return self._stat(key)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Yield every object whose key starts with ``prefix``, sorted by key.

        ``prefix`` is a string prefix, not a directory: ``"a/b"`` matches
        ``"a/b"``, ``"a/bc"`` and ``"a/b/c"``. Listed objects carry key, size
        and etag; their ``metadata`` is empty (most stores do not return it
        in listings): call :meth:`stat` for it.
        """
        validate_prefix(prefix)
        if not self.counts_requests:
            self._count_request("list")
        return self._list(prefix)

    def delete(self, keys: Iterable[str] | str) -> None:
        """Delete the objects; missing keys are not an error.

        A single key may be passed as a plain string. All keys are validated
        before anything is deleted.
        """
        batch = [keys] if isinstance(keys, str) else list(keys)
        for key in batch:
            validate_key(key)
        if batch:
            if not self.counts_requests:
                self._count_request("delete")
            self._delete(batch)

    def replace_metadata(self, key: str, metadata: Mapping[str, str]) -> ObjectInfo:
        """Replace the object's user metadata, leaving its bytes as they are
        (S3's copy-in-place, a new sidecar on a directory store): how
        encrypted objects get their data keys re-wrapped without rewriting
        data. Raises :class:`NotFoundError` for a missing key,
        :class:`InvalidMetadataError` for bad metadata, and
        :class:`ConfigError` from a driver that cannot do it in place."""
        validate_key(key)
        checked = validate_metadata(metadata)
        if not self.counts_requests:
            self._count_request("write")
        return self._replace_metadata(key, checked)

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        raise ConfigError(
            f"storage driver {self.name or type(self).__name__!r} cannot replace an object's metadata in place "
            f"(needed for {key!r}); rewrite the object instead"
        )

    def create_bucket(self) -> bool:
        """Create the bucket (container) this driver stores in if missing:
        ``True`` if created, ``False`` if there. Raises :class:`ConfigError`
        for a store that cannot (the default), else what a write raises."""
        raise ConfigError(f"storage driver {self.name or type(self).__name__!r} cannot create its bucket: create it "
                          "with the store's own tools")  # fmt: skip

    def exists(self, key: str) -> bool:
        """True if an object is stored under ``key``."""
        try:
            self.stat(key)
        except NotFoundError:
            return False
        return True

    def list_temporaries(self) -> Iterator[Temporary]:
        """The files this store's write paths keep outside the object
        namespace that are there now: uploads in progress or left by
        killed writers, metadata records about to be renamed into place,
        and the markers that tell live writers from dead ones. Never a
        committed object or its metadata. A store whose writes leave
        nothing behind when killed lists none (the default)."""
        return iter(())

    def remove_temporaries(self, temporaries: Iterable[Temporary], *, dry_run: bool = False) -> tuple[Temporary, ...]:
        """Remove what :meth:`list_temporaries` listed and the caller chose
        (see :func:`offload_core.leftovers.sweep_leftovers`); returns what
        was removed (with ``dry_run``: what would be, changing nothing). A
        temporary that a live writer holds by now, that is gone already, or
        that holds the data of a write that reached its commit point before
        its writer was killed is not removed: that write is finished
        instead, as any reader would finish it. Idempotent, and safe to
        kill at any point: a later call carries on. Raises :class:`InvalidKeyError` for a path this store
        never lists: by default (a store without temporaries), any."""
        for temporary in temporaries:
            raise InvalidKeyError(
                f"{temporary.path!r} is not a temporary file of this store: "
                f"{self.name or type(self).__name__!r} keeps none"
            )
        return ()

    def close(self) -> None:  # noqa: B027 - optional: most drivers hold nothing to release
        """Release connections and handles; the driver is unusable after."""

    def __enter__(self) -> StorageDriver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abc.abstractmethod
    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo: ...

    @abc.abstractmethod
    def _read(self, key: str, start: int, end: int | None) -> bytes: ...

    @abc.abstractmethod
    def _stat(self, key: str) -> ObjectInfo: ...

    @abc.abstractmethod
    def _list(self, prefix: str) -> Iterator[ObjectInfo]: ...

    @abc.abstractmethod
    def _delete(self, keys: Sequence[str]) -> None: ...


def check_range_types(key: str, start: object, end: object) -> None:
    """Raise :class:`InvalidRangeError` unless ``start`` is an ``int`` and
    ``end`` an ``int`` or ``None``; a ``bool`` is refused although Python
    counts it as an ``int`` (``True`` would silently read from byte 1)."""
    for name, value in (("start", start), ("end", end)):
        if name == "end" and value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidRangeError(
                f"read of {key!r}: {name} must be an int byte offset, got {type(value).__name__} {value!r}"
            )


def split_bucket_url(url: str, schemes: Sequence[str], example: str) -> tuple[str, str]:
    """``scheme://bucket/some/prefix`` -> ``("bucket", "some/prefix")``.

    Raises :class:`ConfigError` (showing ``example``) for another scheme or
    a missing bucket, and for credentials in the URL (``KEY:SECRET@`` or a
    query string such as a SAS token): URLs end up in logs and messages, so
    secrets go in options or the environment. No message shows them."""
    scheme, _, rest = url.partition("://")
    bucket, _, prefix = rest.partition("/")
    if "?" in url or "#" in url or ("@" in bucket and ":" in bucket.partition("@")[0]):
        raise ConfigError(
            f"URL {redact_url(url)!r} carries credentials or a query string; this driver takes them as options "
            f"or environment variables (see docs/operators.md, Credentials), never in the URL: use {example}"
        )
    if scheme.lower() not in schemes or not bucket:
        raise ConfigError(f"URLs for this driver look like {example}, not {redact_url(url)!r}")
    return bucket, prefix


def key_prefix(prefix: str) -> str:
    """A bucket prefix as keys are joined to it: ``"a/b/"``, or ``""`` for none."""
    stripped = prefix.strip("/")
    return stripped + "/" if stripped else ""


def slice_range(key: str, size: int, start: int, end: int | None) -> tuple[int, int]:
    """Clamp ``[start, end)`` to an object of ``size`` bytes.

    Raises :class:`InvalidRangeError` when ``start`` is at or past the end,
    except for a whole-object read (``start=0, end=None``), which is
    ``(0, 0)`` for an empty object: reading all of nothing is no error."""
    if start == 0 and end is None and size == 0:
        return 0, 0
    if start >= size:
        raise InvalidRangeError(f"read of {key!r}: start {start} is at or past the end of the object ({size} bytes)")
    return start, size if end is None else min(end, size)
