"""Google Cloud Storage as an offload-core storage driver."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import types
from collections.abc import Iterator, Mapping
from typing import Any

import gcsfs
from fsspec.asyn import sync

from offload_core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigError,
    NotFoundError,
    OffloadError,
    TransientStorageError,
)
from offload_core.fsspec_driver import FsspecDriver
from offload_core.model import ObjectInfo
from offload_core.retry import RetryPolicy
from offload_core.storage import BytesLike, key_prefix, split_bucket_url
from offload_core.urls import check_endpoint, endpoint_problem, redact_url

__all__ = ["GCSDriver"]

log = logging.getLogger(__name__)

_GRANULE = 256 * 1024  # resumable-upload chunks are multiples of this, but the last
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


class GCSDriver(FsspecDriver):
    """Objects in ``bucket`` under ``prefix``, through gcsfs.

    ``token`` is any gcsfs token mode (default: Google's default
    credentials). gcsfs's own per-request retries (6 tries, up to half a
    minute of backoff) are switched off so that ``retry_attempts`` (our
    bounded, jittered :class:`RetryPolicy`) is the only retry layer;
    ``request_timeout`` bounds each request. Raises :class:`ConfigError` for an
    invalid bucket name or chunk size. ``keep_alive=False`` sends
    ``Connection: close`` (for servers and proxies that mishandle pooled
    connections).
    """

    name = "gcs"
    native_metadata = True

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        endpoint: str | None = None,
        project: str | None = None,
        token: Any = None,
        chunk_size: int = 8 * 2**20,
        retry_attempts: int = 5,
        keep_alive: bool = True,
        request_timeout: float = 60,
        list_page_size: int = 1000,
    ) -> None:
        if not isinstance(bucket, str) or not _BUCKET_NAME.match(bucket):
            raise ConfigError(f"GCS bucket name {bucket!r} is invalid; check managedLedgerOffloadBucket")
        if chunk_size <= 0 or chunk_size % _GRANULE:
            raise ConfigError(f"GCS chunk_size must be a positive multiple of 256 KiB, got {chunk_size}")
        # gcsfs.GCSFileSystem may be its experimental subclass, which probes the
        # bucket type over gRPC and stalls 60 s against anything but real GCS:
        # a custom endpoint gets the plain class, whatever the import order.
        if endpoint is not None:
            check_endpoint(endpoint)
        filesystem = gcsfs.core.GCSFileSystem if endpoint else gcsfs.GCSFileSystem
        try:
            fs = filesystem(
                project=project or "offload-core",
                token=token,
                endpoint_url=endpoint,
                skip_instance_cache=True,
                use_listings_cache=False,
                requests_timeout=request_timeout,
                # Some HTTP/1.0 servers and proxies drop pooled connections under the client.
                session_kwargs={} if keep_alive else {"headers": {"Connection": "close"}},
            )
        except Exception as exc:
            # gcsfs checks a token given as a string with a request whose URL
            # carries the token: neither the cause nor its text may be shown.
            raise ConfigError(
                f"GCS credentials in 'token' could not be used ({type(exc).__name__}); pass a service-account "
                "JSON file path, 'google_default', 'anon', or a valid token, and check the network"
            ) from None
        # gcsfs wraps every request in its own retry loop; calling the
        # unwrapped request leaves retries to our RetryPolicy alone.
        fs._request = types.MethodType(type(fs)._request.__wrapped__, fs)
        self.bucket = bucket
        self.prefix = key_prefix(prefix)
        self.endpoint = endpoint
        self.chunk_size = chunk_size
        self.list_page_size = list_page_size
        super().__init__(fs, f"{bucket}/{self.prefix}".rstrip("/"), retry=RetryPolicy(attempts=retry_attempts))

    @classmethod
    def from_url(cls, url: str, **options: Any) -> GCSDriver:
        """``gs://bucket`` or ``gs://bucket/prefix`` (also ``gcs://``)."""
        bucket, prefix = split_bucket_url(url, ("gs", "gcs"), "gs://bucket/prefix")
        return cls(bucket, prefix=prefix, **options)

    def __repr__(self) -> str:
        where = f" at {redact_url(self.endpoint)}" if self.endpoint else ""
        return f"GCSDriver(gs://{self.bucket}/{self.prefix}{where})"

    def _run(self, coroutine: Any) -> Any:
        return sync(self.fs.loop, lambda: coroutine)

    # -- errors --------------------------------------------------------------

    def _translate(self, exc: Exception, key: str) -> Exception:
        if isinstance(exc, OffloadError):
            return exc
        where = f"gs://{self.bucket}/{self.prefix}{key}"
        status = _status(exc)
        if isinstance(exc, FileNotFoundError) or status == 404:
            if not self._bucket_exists():
                return ConfigError(
                    f"GCS bucket {self.bucket!r} does not exist{self._at()}; create it (offload drivers check "
                    "URL --create), or fix managedLedgerOffloadBucket"
                )
            return NotFoundError(f"object {where} not found", key=key)
        if isinstance(exc, FileExistsError) or status == 412:
            return AlreadyExistsError(f"object {where} already exists; conditional create refused", key=key)
        if isinstance(exc, PermissionError) or status in (401, 403):
            return AccessDeniedError(
                f"GCS refused access to {where}{self._at()} ({status or exc}): check the credentials given as "
                f"'token' and the bucket's IAM for managedLedgerOffloadBucket={self.bucket!r}"
            )
        problem = endpoint_problem(exc, self.endpoint, setting="managedLedgerOffloadServiceEndpoint (-o endpoint=)")
        if problem is not None:
            return ConfigError(f"GCS request for {where}: {problem}")
        if (status is not None and (status == 429 or status >= 500)) or _is_connection_error(exc):
            return TransientStorageError(f"GCS request for {where}{self._at()} failed transiently: {exc}")
        return exc

    def _bucket_exists(self) -> bool:
        self._count_request("stat")
        try:
            return bool(self.fs.exists(self.bucket))
        except Exception:
            return True  # cannot tell: do not claim the bucket is missing

    def _at(self) -> str:
        return f" at {redact_url(self.endpoint)}" if self.endpoint else ""

    def create_bucket(self) -> bool:
        """Create the bucket (in ``project``) unless it exists."""
        if self._call("", lambda: bool(self.fs.exists(self.bucket)), op="stat"):
            return False
        self._call("", lambda: self.fs.mkdir(self.bucket), op="write")
        self.fs.invalidate_cache(self.bucket)
        return True

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        # One page of the JSON API at a time, in the store's key order.
        token: str | None = None
        while True:
            query = {"prefix": self.prefix + prefix, "maxResults": self.list_page_size,
                     **({"pageToken": token} if token else {})}  # fmt: skip
            page: dict[str, Any] = self._call(prefix, functools.partial(self._list_page, query), op="list")
            for item in page.get("items", []):
                yield ObjectInfo(key=item["name"][len(self.prefix) :], size=int(item["size"]),
                                 etag=item.get("etag") or item.get("md5Hash"))  # fmt: skip
            token = page.get("nextPageToken")
            if not token:
                return

    def _list_page(self, query: dict[str, Any]) -> dict[str, Any]:
        page: dict[str, Any] = self._run(self.fs._call("GET", "b/{}/o", self.bucket, json_out=True, **query))
        return page

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        """A metadata PATCH (GCS merges: keys to drop are sent as null); the
        object's bytes are untouched."""
        current = self._stat(key).metadata
        patch: dict[str, str | None] = {name: None for name in current if name not in metadata}
        patch.update(metadata)
        full_key = self.prefix + key
        self._call(key, lambda: self._run(self.fs._call("PATCH", "b/{}/o/{}", self.bucket, full_key,
                                                        json={"metadata": patch}, json_out=True)),
                   op="write")  # fmt: skip
        self.fs.invalidate_cache(self._path(key))
        return self._stat(key)

    def _metadata_from_info(self, key: str, info: Mapping[str, Any]) -> dict[str, str]:
        # A null value is a key a PATCH removed (the emulator keeps it as null; GCS drops it).
        return {name: value for name, value in (info.get("metadata") or {}).items() if value is not None}

    # -- writing ---------------------------------------------------------------

    def _write_object(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> int:
        """A resumable upload in ``chunk_size`` chunks (the object appears
        only when the last one lands); one request when it all fits in a
        chunk. A failure cancels the upload session."""
        core = gcsfs.core
        mode = "create" if if_absent else "overwrite"
        full_key = self.prefix + key
        pending = bytearray()
        location: str | None = None
        offset = 0
        try:
            for part in parts:
                pending += part
                if len(pending) > self.chunk_size:
                    if location is None:
                        location = self._call(key, lambda: self._run(
                            core.initiate_upload(self.fs, self.bucket, full_key, metadata=metadata or None, mode=mode)
                        ), op="write")  # fmt: skip
                    whole = len(pending) - len(pending) % _GRANULE
                    if whole == len(pending):
                        whole -= _GRANULE  # keep a tail: the final chunk must carry the total size
                    self._send(key, location, bytes(pending[:whole]), offset, None)
                    offset += whole
                    del pending[:whole]
            total = offset + len(pending)
            if location is None:
                data = bytes(pending)
                self._call(key, lambda: self._run(
                    core.simple_upload(self.fs, self.bucket, full_key, data, metadatain=metadata or None, mode=mode)
                ), op="write")  # fmt: skip
                return total
            self._send(key, location, bytes(pending), offset, total)
            return total
        except BaseException:
            if location is not None:
                self._cancel(location)
            raise

    def _send(self, key: str, location: str, chunk: bytes, offset: int, total: int | None) -> None:
        self._call(key, lambda: self._put_chunk(location, chunk, offset, total), op="write")

    def _put_chunk(self, location: str, chunk: bytes, offset: int, total: int | None) -> None:
        """One chunk of a resumable upload; ``total`` only on the last
        (``Content-Range: bytes a-b/*`` keeps the session open)."""
        last_byte = offset + len(chunk) - 1
        size = "*" if total is None else str(total)
        span = f"bytes {offset}-{last_byte}/{size}" if chunk else f"bytes */{size}"
        headers = {"Content-Range": span, "Content-Type": "application/octet-stream"}
        answer_headers, _ = self._run(self.fs._call("PUT", location, headers=headers, data=chunk))
        if total is None and "Range" in answer_headers:
            stored = int(str(answer_headers["Range"]).rsplit("-", 1)[1])
            if stored != last_byte:
                raise TransientStorageError(
                    f"GCS kept only bytes up to {stored} of a chunk ending at {last_byte}; retry the upload"
                )

    def _cancel(self, location: str) -> None:
        """Cancel a resumable session (one request, best effort). An
        unfinished session never becomes a visible object and GCS expires
        it, so a failed cancel is logged, not raised over the write's own
        error."""

        async def delete() -> int:
            async with self.fs.session.delete(location) as response:
                return int(response.status)

        self._count_request("write")
        try:
            status = self._run(delete())
        except Exception as exc:  # noqa: BLE001 - reported, and the write's error propagates
            log.warning("could not cancel GCS upload session %s: %s", location, exc)
            return
        if status not in (200, 204, 404, 410, 499):
            log.warning("cancelling GCS upload session %s answered HTTP %s", location, status)


def _is_connection_error(exc: BaseException) -> bool:
    """Dropped or refused connections and timeouts, from aiohttp or the OS."""
    names = {"ServerDisconnectedError", "ClientConnectorError", "ClientOSError", "ClientPayloadError",
             "ServerTimeoutError", "ClientConnectionError"}  # fmt: skip
    chain = [c for c in (exc, exc.__cause__, exc.__context__) if c is not None]
    return any(
        type(c).__name__ in names or isinstance(c, (ConnectionError, asyncio.TimeoutError, TimeoutError)) for c in chain
    )


def _status(exc: BaseException) -> int | None:
    for candidate in (exc, exc.__cause__):
        code = getattr(candidate, "code", None)
        if isinstance(code, int):
            return code
    return None
