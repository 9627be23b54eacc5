"""Amazon S3 (and S3-compatible stores) as an offload-core storage driver."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator, Sequence
from typing import Any

import s3fs

from offload_core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigError,
    InvalidRangeError,
    NotFoundError,
    OffloadError,
    TransientStorageError,
)
from offload_core.fsspec_driver import FsspecDriver
from offload_core.metadata_codec import decode_header_value, encode_header_value
from offload_core.model import ObjectInfo
from offload_core.retry import RetryPolicy, call_with_retries
from offload_core.storage import BytesLike, key_prefix, split_bucket_url
from offload_core.urls import check_endpoint, endpoint_problem, redact_url

__all__ = ["S3Driver"]

MIN_PART_SIZE = 5 * 2**20
_DELETE_BATCH = 1000
# Which counted operation each S3 API call is (the rest are writes: put,
# multipart create/part/complete/abort).
_OPS = {"head_object": "stat", "list_objects_v2": "list", "delete_objects": "delete", "get_object": "read",
        "head_bucket": "stat"}  # fmt: skip
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_TRANSIENT_CODES = {
    "SlowDown",
    "ServiceUnavailable",
    "InternalError",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "Throttling",
    "ThrottlingException",
    "500",
    "502",
    "503",
    "504",
}
_DENIED_CODES = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "403",
    "AllAccessDisabled",
}


class S3Driver(FsspecDriver):
    """Objects in ``bucket`` under ``prefix``, through s3fs.

    Credentials: ``access_key_id``/``secret_access_key`` (and
    ``session_token``), ``anonymous=True``, or by default the AWS credential
    chain. ``endpoint`` selects an S3-compatible store. Raises
    :class:`ConfigError` for an invalid bucket name.
    """

    name = "s3"
    native_metadata = True
    min_part_size = MIN_PART_SIZE

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        region: str | None = None,
        endpoint: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        anonymous: bool = False,
        retry_attempts: int = 5,
        connect_timeout: float = 10,
        read_timeout: float = 60,
        list_page_size: int = 1000,
    ) -> None:
        if not isinstance(bucket, str) or not _BUCKET_NAME.match(bucket):
            raise ConfigError(
                f"S3 bucket name {bucket!r} is invalid (3-63 lowercase letters, digits, '.' or '-'); "
                "check managedLedgerOffloadBucket"
            )
        if endpoint is not None:
            check_endpoint(endpoint)
        if (access_key_id is None) != (secret_access_key is None):
            raise ConfigError("S3 credentials need both access_key_id and secret_access_key (or neither)")
        client_kwargs: dict[str, Any] = {}
        if region:
            client_kwargs["region_name"] = region
        fs = s3fs.S3FileSystem(
            key=access_key_id,
            secret=secret_access_key,
            token=session_token,
            anon=anonymous,
            endpoint_url=endpoint,
            client_kwargs=client_kwargs,
            # One attempt per call below us: retries are ours, bounded and jittered.
            config_kwargs={
                "retries": {"total_max_attempts": 1, "mode": "standard"},
                "connect_timeout": connect_timeout,
                "read_timeout": read_timeout,
            },
            skip_instance_cache=True,
        )
        fs.retries = 1
        self.bucket = bucket
        self.region = region
        self.prefix = key_prefix(prefix)
        self.endpoint = endpoint
        self.list_page_size = list_page_size
        super().__init__(fs, f"{bucket}/{self.prefix}".rstrip("/"), retry=RetryPolicy(attempts=retry_attempts))

    @classmethod
    def from_url(cls, url: str, **options: Any) -> S3Driver:
        """``s3://bucket`` or ``s3://bucket/prefix`` (also ``s3a://``)."""
        bucket, prefix = split_bucket_url(url, ("s3", "s3a"), "s3://bucket/prefix")
        return cls(bucket, prefix=prefix, **options)

    def __repr__(self) -> str:
        where = f" at {redact_url(self.endpoint)}" if self.endpoint else ""
        return f"S3Driver(s3://{self.bucket}/{self.prefix}{where})"

    # -- requests and errors ------------------------------------------------

    def _where(self, key: str) -> str:
        return f"s3://{self.bucket}/{self.prefix}{key}"

    def _s3(self, key: str, operation: str, **kwargs: Any) -> Any:
        return self._call(key, lambda: self.fs.call_s3(operation, Bucket=self.bucket, **kwargs),
                          op=_OPS.get(operation, "write"))  # fmt: skip

    def _translate(self, exc: Exception, key: str) -> Exception:
        if isinstance(exc, OffloadError):
            return exc
        code, status = _error_code(exc)
        where = self._where(key)
        if _any_named(exc, {"NoCredentialsError", "PartialCredentialsError"}):
            return ConfigError(
                f"no AWS credentials found for s3://{self.bucket}: pass access_key_id and secret_access_key, "
                "or configure the AWS default credential chain (environment, ~/.aws, instance role)"
            )
        if code == "NoSuchBucket" or (isinstance(exc, FileNotFoundError) and "bucket does not exist" in str(exc)):
            return ConfigError(
                f"S3 bucket {self.bucket!r} does not exist{self._at()}; create it (offload drivers check URL "
                "--create), or fix managedLedgerOffloadBucket"
            )
        if code in ("NoSuchKey", "NotFound", "404") or isinstance(exc, FileNotFoundError):
            return NotFoundError(f"object {where} not found", key=key)
        if code in ("PreconditionFailed", "412", "ConditionalRequestConflict") or isinstance(exc, FileExistsError):
            return AlreadyExistsError(f"object {where} already exists; conditional create refused", key=key)
        if code in ("InvalidRange", "416"):
            return InvalidRangeError(f"read of {where}: the start is at or past the end of the object")
        if code in _DENIED_CODES or isinstance(exc, PermissionError):
            return AccessDeniedError(
                f"S3 refused access to {where}{self._at()} ({code or exc}): check access_key_id / secret_access_key "
                "(or the AWS default credential chain) and the bucket policy for managedLedgerOffloadBucket="
                f"{self.bucket!r}"
            )
        problem = endpoint_problem(exc, self.endpoint, setting="managedLedgerOffloadServiceEndpoint (-o endpoint=)")
        if problem is not None:
            return ConfigError(f"S3 request for {where}: {problem}")
        if code in _TRANSIENT_CODES or (status is not None and status >= 500) or _is_connection_error(exc):
            return TransientStorageError(f"S3 request for {where}{self._at()} failed transiently: {code or exc}")
        return exc

    def _at(self) -> str:
        return f" at {redact_url(self.endpoint)}" if self.endpoint else ""

    def create_bucket(self) -> bool:
        """Create the bucket (in ``region``) unless it exists."""
        try:
            self._s3("", "head_bucket")
            return False
        except (NotFoundError, ConfigError) as exc:
            if isinstance(exc, ConfigError) and "does not exist" not in str(exc):
                raise
        where = {"CreateBucketConfiguration": {"LocationConstraint": self.region}} if self.region not in (
            None, "", "us-east-1") else {}  # fmt: skip
        self._s3("", "create_bucket", **where)
        return True

    # -- the contract ------------------------------------------------------

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        if end is not None and end == start:
            return self._empty_read(key, start, end)  # S3 cannot express an empty byte range
        path = self._path(key)
        data: bytes = self._call(key, lambda: self.fs.cat_file(path, start=start, end=end), op="read")
        return data

    def _stat(self, key: str) -> ObjectInfo:
        head = self._s3(key, "head_object", Key=self.prefix + key)
        metadata = {name: decode_header_value(value) for name, value in head.get("Metadata", {}).items()}
        return ObjectInfo(key=key, size=int(head["ContentLength"]), metadata=metadata,
                          etag=str(head.get("ETag", "")).strip('"') or None)  # fmt: skip

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        # One page at a time, as S3 returns them: already in key order (S3
        # sorts by UTF-8 bytes, which is code-point order), so a bucket of
        # millions of objects lists in one page's memory.
        token: str | None = None
        while True:
            try:
                page = self._s3(prefix, "list_objects_v2", Prefix=self.prefix + prefix, MaxKeys=self.list_page_size,
                                **({"ContinuationToken": token} if token else {}))  # fmt: skip
            except NotFoundError:
                # A listing names no object: a 404 means the bucket, or the endpoint, is wrong.
                raise ConfigError(
                    f"listing s3://{self.bucket}/{self.prefix}{prefix}{self._at()} answered 404: the bucket does not "
                    "exist or the endpoint is not an S3 endpoint; check managedLedgerOffloadBucket and "
                    "managedLedgerOffloadServiceEndpoint"
                ) from None
            for item in page.get("Contents", []):
                key = item["Key"][len(self.prefix) :]
                yield ObjectInfo(key=key, size=int(item["Size"]), etag=str(item.get("ETag", "")).strip('"'))
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    def _delete(self, keys: Sequence[str]) -> None:
        for first in range(0, len(keys), _DELETE_BATCH):
            batch = keys[first : first + _DELETE_BATCH]
            objects = [{"Key": self.prefix + key} for key in batch]
            answer = self._s3(batch[0], "delete_objects", Delete={"Objects": objects, "Quiet": True})
            errors = [e for e in answer.get("Errors", []) if e.get("Code") != "NoSuchKey"]
            if errors:
                first_error = errors[0]
                raise self._translate(_ClientCode(first_error.get("Code", "")), first_error["Key"][len(self.prefix) :])

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        """CopyObject onto itself with the new metadata: S3 copies the bytes
        server-side, nothing passes through here (objects up to 5 GiB)."""
        full_key = self.prefix + key
        headers = {name: encode_header_value(value) for name, value in metadata.items()}
        self._s3(key, "copy_object", Key=full_key, CopySource={"Bucket": self.bucket, "Key": full_key},
                 Metadata=headers, MetadataDirective="REPLACE")  # fmt: skip
        self.fs.invalidate_cache(self._path(key))
        return self._stat(key)

    def _write_object(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> int:
        """Small objects: one PutObject. Larger: a multipart upload, a part
        per incoming part once they reach 5 MiB (smaller ones coalesce).
        Any failure aborts the upload."""
        headers = {name: encode_header_value(value) for name, value in metadata.items()}
        condition = {"IfNoneMatch": "*"} if if_absent else {}
        full_key = self.prefix + key
        pending: list[BytesLike] = []
        pending_size = 0
        upload_id: str | None = None
        uploaded: list[dict[str, Any]] = []
        size = 0
        try:
            for part in parts:
                size += len(part)
                if pending_size >= MIN_PART_SIZE:
                    if upload_id is None:
                        upload_id = self._s3(key, "create_multipart_upload", Key=full_key, Metadata=headers)["UploadId"]
                    uploaded.append(self._upload_part(key, upload_id, len(uploaded) + 1, _joined(pending)))
                    pending, pending_size = [], 0
                pending.append(part)
                pending_size += len(part)
            if upload_id is None:
                self._s3(key, "put_object", Key=full_key, Body=_joined(pending), Metadata=headers, **condition)
                return size
            uploaded.append(self._upload_part(key, upload_id, len(uploaded) + 1, _joined(pending)))
            self._s3(key, "complete_multipart_upload", Key=full_key, UploadId=upload_id,
                     MultipartUpload={"Parts": uploaded}, **condition)  # fmt: skip
            return size
        except BaseException:
            if upload_id is not None:
                self._abort(key, upload_id)
            raise

    def _upload_part(self, key: str, upload_id: str, number: int, body: bytes) -> dict[str, Any]:
        answer = self._s3(key, "upload_part", Key=self.prefix + key, UploadId=upload_id, PartNumber=number, Body=body)
        return {"PartNumber": number, "ETag": answer["ETag"]}

    def _abort(self, key: str, upload_id: str) -> None:
        """Abort an upload so no part lingers (and is billed); a failure
        here is reported, not swallowed."""
        call_with_retries(
            lambda: self._s3(key, "abort_multipart_upload", Key=self.prefix + key, UploadId=upload_id),
            self.retry,
            retry_on=(TransientStorageError,),
        )


def _joined(chunks: list[BytesLike]) -> bytes:
    if len(chunks) == 1 and isinstance(chunks[0], bytes):
        return chunks[0]
    return b"".join(chunks)


class _ClientCode(Exception):
    """An S3 error code from a batch response, for :meth:`S3Driver._translate`."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {}}


def _error_code(exc: BaseException) -> tuple[str | None, int | None]:
    """The S3 error code and HTTP status behind ``exc`` (s3fs wraps botocore's
    ClientError as an OSError with the original as ``__cause__``)."""
    for candidate in (exc, exc.__cause__):
        response = getattr(candidate, "response", None)
        if isinstance(response, dict):
            error = response.get("Error", {})
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return (str(error.get("Code")) if error.get("Code") else None), status
    return None, None


def _any_named(exc: BaseException, names: set[str]) -> bool:
    chain = (exc, exc.__cause__, exc.__context__)
    return any(candidate is not None and type(candidate).__name__ in names for candidate in chain)


def _is_connection_error(exc: BaseException) -> bool:
    names = {"EndpointConnectionError", "ConnectionClosedError", "ReadTimeoutError", "ConnectTimeoutError",
             "ClientConnectorError", "ServerDisconnectedError", "ClientOSError"}  # fmt: skip
    chain = (exc, exc.__cause__, exc.__context__)
    return _any_named(exc, names) or any(isinstance(c, (ConnectionError, asyncio.TimeoutError)) for c in chain)
