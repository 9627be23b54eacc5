"""Azure Blob Storage as an offload-core storage driver."""

from __future__ import annotations

import base64
import contextlib
import os
import re
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.storage.blob import BlobServiceClient

from offload_core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigError,
    InvalidRangeError,
    NotFoundError,
    OffloadError,
    TransientStorageError,
    mask_secret_text,
)
from offload_core.metadata_codec import decode_header_value, encode_header_value
from offload_core.model import ObjectInfo
from offload_core.retry import RetryPolicy
from offload_core.storage import BytesLike, StorageDriver, key_prefix, split_bucket_url
from offload_core.urls import check_endpoint, endpoint_problem, redact_url, redact_url_text

from .names import decode_name, encode_name

__all__ = ["AzureBlobDriver"]

_CONTAINER_NAME = re.compile(r"^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$")


class AzureBlobDriver(StorageDriver):
    """Block blobs in ``container`` under ``prefix``, through azure-storage-blob.

    (adlfs is not used: its path parsing URL-decodes ``%2F`` inside object
    names, so some valid keys would not round-trip.)

    Credentials: ``connection_string``, or ``account_name`` with
    ``account_key`` or ``sas_token``; without them, the environment
    (``AZURE_STORAGE_CONNECTION_STRING``, or ``AZURE_STORAGE_ACCOUNT`` with
    ``AZURE_STORAGE_ACCESS_KEY``, as Pulsar reads them). Raises :class:`ConfigError` for an
    invalid container name or missing credentials (the message never shows
    a secret).
    """

    name = "azure"
    counts_requests = True

    def __init__(
        self,
        container: str | None = None,
        *,
        bucket: str | None = None,
        prefix: str = "",
        connection_string: str | None = None,
        account_name: str | None = None,
        account_key: str | None = None,
        sas_token: str | None = None,
        endpoint: str | None = None,
        retry_attempts: int = 5,
        connect_timeout: float = 10,
        read_timeout: float = 60,
        list_page_size: int = 1000,
    ) -> None:
        container = container or bucket
        if endpoint is not None:
            check_endpoint(endpoint)
        if connection_string is None and not (account_key or sas_token):
            # As Pulsar's azureblob driver does, fall back to the environment.
            connection_string = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
            account_name = account_name or os.environ.get("AZURE_STORAGE_ACCOUNT")
            account_key = os.environ.get("AZURE_STORAGE_ACCESS_KEY") or os.environ.get("AZURE_STORAGE_KEY")
        if not container or not _CONTAINER_NAME.match(container):
            raise ConfigError(
                f"Azure container name {container!r} is invalid (3-63 lowercase letters, digits and single '-'); "
                "check managedLedgerOffloadBucket"
            )
        if connection_string is None:
            if not account_name or not (account_key or sas_token):
                raise ConfigError(
                    "Azure Blob needs connection_string, or account_name with account_key or sas_token "
                    f"(account_name given: {account_name!r})"
                )
            url = endpoint or f"https://{account_name}.blob.core.windows.net"
            if account_key:
                connection_string = (
                    f"DefaultEndpointsProtocol={url.split('://')[0]};AccountName={account_name};"
                    f"AccountKey={account_key};BlobEndpoint={url};"
                )
        # Our RetryPolicy is the only retry layer: the SDK's own would stack
        # under it (minutes against a refused port), so it is switched off.
        client_options: dict[str, Any] = {
            "retry_total": 0,
            "connection_timeout": connect_timeout,
            "read_timeout": read_timeout,
        }
        try:
            if connection_string is not None:
                self._service = BlobServiceClient.from_connection_string(connection_string, **client_options)
            else:
                self._service = BlobServiceClient(endpoint or f"https://{account_name}.blob.core.windows.net",
                                                  credential=sas_token, **client_options)  # fmt: skip
        except ValueError as exc:
            raise ConfigError(
                f"Azure Blob rejected the connection settings ({redact_url_text(mask_secret_text(str(exc)))}); "
                "check connection_string (AccountName=...;AccountKey=...;BlobEndpoint=...) or endpoint"
            ) from None
        self.container = container
        self.prefix = key_prefix(prefix)
        self.account = self._service.account_name
        self._endpoint = str(self._service.url)
        self.retry = RetryPolicy(attempts=retry_attempts)
        self.list_page_size = list_page_size
        self._container = self._service.get_container_client(container)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> AzureBlobDriver:
        """``az://container/prefix``, ``abfs[s]://container/prefix`` or
        ``abfs://container@account.dfs.core.windows.net/prefix``."""
        container, prefix = split_bucket_url(url, ("az", "abfs", "abfss"), "az://container/prefix")
        if "@" in container:
            container, _, host = container.partition("@")
            options.setdefault("account_name", host.split(".")[0])
        return cls(container, prefix=prefix, **options)

    def __repr__(self) -> str:
        return f"AzureBlobDriver(az://{self.container}/{self.prefix} in account {self.account})"

    # -- errors ------------------------------------------------------------------

    def _translate(self, exc: Exception, key: str) -> Exception:
        if isinstance(exc, OffloadError):
            return exc
        where = f"az://{self.container}/{self.prefix}{key}"
        cause = _azure_cause(exc)
        code = str(getattr(cause, "error_code", "") or "")
        status = getattr(cause, "status_code", None)
        if code == "ContainerNotFound":
            return ConfigError(
                f"Azure container {self.container!r} does not exist in account {self.account!r}; create it "
                "(offload drivers check URL --create), or fix managedLedgerOffloadBucket"
            )
        if isinstance(cause, ResourceNotFoundError):
            return NotFoundError(f"object {where} not found", key=key)
        if isinstance(cause, ResourceExistsError):
            return AlreadyExistsError(f"object {where} already exists; conditional create refused", key=key)
        if isinstance(cause, ClientAuthenticationError) or status == 403:
            return AccessDeniedError(
                f"Azure refused access to {where} in account {self.account!r} ({code or status or exc}): check "
                "account_key / sas_token / connection_string and the container's access for "
                f"managedLedgerOffloadBucket={self.container!r}"
            )
        if status == 400 and not code:
            return ConfigError(
                f"Azure request for {where} answered 400 Bad Request with no error code: "
                f"{redact_url(self._endpoint)} is not a blob endpoint with an account in it (Azurite: "
                "http://host:port/<account>, e.g. http://127.0.0.1:10000/devstoreaccount1)"
            )
        if status == 416 or "InvalidRange" in code:
            return InvalidRangeError(f"read of {where}: the start is at or past the end of the object")
        problem = endpoint_problem(exc, self._endpoint, setting="the endpoint (BlobEndpoint= or -o endpoint=)")
        if problem is not None:
            return ConfigError(f"Azure request for {where}: {problem}")
        if isinstance(cause, (ServiceRequestError, ServiceResponseError)) or (
            status is not None and (status == 429 or status >= 500)
        ):
            return TransientStorageError(f"Azure request for {where} failed transiently: {code or status or exc}")
        if isinstance(cause, HttpResponseError):
            return _refused(where, code, status, cause)
        return exc

    # -- reading ------------------------------------------------------------------

    def _blob(self, key: str) -> Any:
        return self._container.get_blob_client(self.prefix + key)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        if end is not None and end == start:
            return self._empty_read(key, start, end)
        length = None if end is None else end - start
        data: bytes = self._call(
            key, lambda: self._blob(key).download_blob(offset=start, length=length).readall(), op="read"
        )
        # Some servers answer a start at the end with an empty body, not 416.
        return data or self._empty_read(key, start, end)

    def _stat(self, key: str) -> ObjectInfo:
        properties = self._call(key, lambda: self._blob(key).get_blob_properties(), op="stat")
        metadata = {decode_name(name): decode_header_value(value) for name, value in properties.metadata.items()}
        return ObjectInfo(key=key, size=int(properties.size), metadata=metadata,
                          etag=str(properties.etag).strip('"') or None)  # fmt: skip

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        # One page at a time (each its own retried request, resumed from its
        # continuation token), in the store's key order.
        token: str | None = None
        while True:

            def page(token: str | None = token) -> tuple[list[ObjectInfo], str | None]:
                pages = self._container.list_blobs(
                    name_starts_with=self.prefix + prefix, results_per_page=self.list_page_size
                ).by_page(continuation_token=token)
                blobs = [
                    ObjectInfo(key=blob.name[len(self.prefix) :], size=int(blob.size), etag=str(blob.etag).strip('"'))
                    for blob in next(pages, [])
                ]
                return blobs, pages.continuation_token  # type: ignore[attr-defined]

            try:
                found, token = self._call(prefix, page, op="list")
            except NotFoundError:
                raise self._where_missing() from None
            yield from found
            if not token:
                return

    def _delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            with contextlib.suppress(NotFoundError):  # deleting a missing object is not an error
                self._delete_one(key)

    def _delete_one(self, key: str) -> None:
        self._call(key, lambda: self._blob(key).delete_blob(), op="delete")

    # -- writing --------------------------------------------------------------------

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        """Set Blob Metadata: replaces all of it, the blob's bytes untouched."""
        stored = {encode_name(name): encode_header_value(value) for name, value in metadata.items()}
        self._call(key, lambda: self._blob(key).set_blob_metadata(metadata=stored), op="write")
        return self._stat(key)

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        """Stage one block per non-empty part, then commit the list (the
        blob appears only then). Blocks of a failed write stay uncommitted,
        invisible, and Azure discards them."""
        blob = self._blob(key)
        stored = {encode_name(name): encode_header_value(value) for name, value in metadata.items()}
        attempt = uuid.uuid4().hex[:16]
        blocks: list[str] = []
        size = 0
        try:
            for part in parts:
                if not len(part):
                    continue
                block_id = base64.b64encode(f"{attempt}-{len(blocks):08d}".encode()).decode()
                self._stage(key, blob, block_id, bytes(part))
                blocks.append(block_id)
                size += len(part)
            condition = {"if_none_match": "*"} if if_absent else {}
            self._call(key, lambda: blob.commit_block_list(blocks, metadata=stored, **condition), op="write")
        except NotFoundError:
            raise self._where_missing() from None
        return ObjectInfo(key=key, size=size, metadata=metadata)

    def _stage(self, key: str, blob: Any, block_id: str, data: bytes) -> None:
        self._call(key, lambda: blob.stage_block(block_id, data), op="write")

    def create_bucket(self) -> bool:
        """Create the container unless it exists."""
        try:
            self._call("", lambda: self._container.create_container(), op="write")
        except AlreadyExistsError:
            return False
        return True

    def _where_missing(self) -> ConfigError:
        """A write or a listing answered 404, which names no object: the
        container or the account is not where the endpoint points."""
        return ConfigError(
            f"container {self.container!r} or account {self.account!r} not found at {redact_url(self._endpoint)}: "
            "the endpoint must include the account for emulators (Azurite: http://host:port/<account>, e.g. "
            "http://127.0.0.1:10000/devstoreaccount1); check the endpoint and managedLedgerOffloadBucket"
        )

    def close(self) -> None:
        self._service.close()


def _refused(where: str, code: str, status: object, cause: HttpResponseError) -> ConfigError:
    """Any other answer the service refused a request with, in one line (the
    SDK's message spans several, with headers)."""
    said = (str(cause.message or cause).strip().splitlines() or [""])[0]
    if code == "InvalidHeaderValue" and "version" in str(cause).lower():
        return ConfigError(
            f"Azure request for {where}: the server refused the API version of the Azure SDK ({said}); with "
            "Azurite, start it with --skipApiVersionCheck (or upgrade it)"
        )
    return ConfigError(f"Azure refused the request for {where} ({code or status}): {said}")


def _azure_cause(exc: BaseException) -> BaseException | None:
    """The azure-core exception in ``exc``'s chain."""
    for candidate in (exc, exc.__cause__, exc.__context__):
        if isinstance(candidate, HttpResponseError | ServiceRequestError | ServiceResponseError):
            return candidate
    return None
