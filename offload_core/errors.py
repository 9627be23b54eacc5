"""The one error hierarchy of offload-core.

Every error a caller can act on derives from :class:`OffloadError`. Messages
name the object key (or setting) involved and what to do about it; they never
contain credentials: build them with :func:`mask_secrets` when they quote
configuration.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .redaction import redact_url_text

__all__ = [
    "AccessDeniedError",
    "AlreadyExistsError",
    "ConfigError",
    "ConflictError",
    "CopyCancelledError",
    "DriverNotInstalledError",
    "FormatError",
    "InvalidKeyError",
    "InvalidMetadataError",
    "InvalidRangeError",
    "KeyUnavailableError",
    "LostEntriesError",
    "NoSuchIndexError",
    "NotFoundError",
    "OffloadError",
    "PluginLoadError",
    "StateError",
    "TransformNotInstalledError",
    "TransientStorageError",
    "mask_secret_text",
    "mask_secrets",
]


class OffloadError(Exception):
    """Base class of every error raised by offload-core and its drivers."""


class FormatError(OffloadError, ValueError):
    """Bytes that do not decode as the expected object format.

    Raised by the pure ``formats`` modules for arbitrary, truncated or
    corrupted input; never any other exception type.
    """


class LostEntriesError(FormatError):
    """Entries ``first..last`` of ledger ``ledger_id`` cannot be read back
    intact (a damaged, cut-short or zeroed part of the data object). The
    entries before ``first`` stay readable; so may later blocks."""

    def __init__(self, message: str, *, ledger_id: int, first: int, last: int) -> None:
        super().__init__(message)
        self.ledger_id = ledger_id
        self.first = first
        self.last = last


class _StoreOSError(OffloadError, OSError):
    """An error that is also the matching ``OSError`` subclass, so code
    written for files (``except FileNotFoundError``) handles it too."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key

    def __str__(self) -> str:
        # OSError would otherwise format as "[Errno None] ...".
        return str(self.args[0]) if self.args else ""


class NotFoundError(_StoreOSError, FileNotFoundError):
    """The object (or ledger, or plugin-provided resource) does not exist."""


class NoSuchIndexError(NotFoundError):
    """A tiered Kafka segment, itself in the store, has no index of the
    type asked for: Kafka writes a transaction index only for a segment
    with aborted transactions. A reader takes it for "none"; any other
    :class:`NotFoundError` (the segment gone) is not that."""


class AlreadyExistsError(_StoreOSError, FileExistsError):
    """A conditional create (``if_absent=True``) found the key taken."""


class AccessDeniedError(_StoreOSError, PermissionError):
    """The store refused the credentials or the permission for an operation."""


class InvalidRangeError(OffloadError, ValueError):
    """A byte or entry range that cannot be served (start at or past the end,
    negative, or reversed)."""


class StateError(OffloadError):
    """The operation does not fit the object's state: a ledger not sealed
    or already offloaded, a handle closed, a managed ledger open in another
    process. Retrying will not help until the state changes; reading the
    other tier will not either."""


class CopyCancelledError(StateError):
    """A copy stopped because it was cancelled (Kafka's
    ``cancelCopyingLogSegment``); its partial objects are removed."""


class ConflictError(OffloadError):
    """A compare-and-set update lost: the record changed since it was read.

    Re-read the record and decide again; never retry the same write blindly."""


class InvalidKeyError(OffloadError, ValueError):
    """An object key that could escape the store's root or is malformed."""


class InvalidMetadataError(OffloadError, ValueError):
    """User metadata that every backend could not store faithfully (names
    must be lowercase ``[a-z0-9_.-]``, values strings)."""


class ConfigError(OffloadError, ValueError):
    """A configuration value or option that is missing, unknown or invalid."""


class DriverNotInstalledError(ConfigError):
    """No installed plugin provides the requested storage driver."""


class TransformNotInstalledError(DriverNotInstalledError):
    """An object was written with a transform whose plugin is not installed
    here; the message names the distribution to install."""


class KeyUnavailableError(ConfigError):
    """A key an encrypted object needs cannot be had: its keyring is gone or
    lacks it, or holds other key material under its id. The message names
    the key id. (Raised by encrypting transforms' keyrings; a read under a
    ``*_FIRST`` priority falls back to the other tier on it.)"""


class PluginLoadError(OffloadError):
    """An installed plugin failed to register (two claiming one name, a
    registration that is not a driver), or the allow-list names a plugin
    that is not installed. (One that fails to import is left out and listed
    by :meth:`PluginManager.failed`.)"""


class TransientStorageError(OffloadError):
    """A failure that may succeed when retried (throttling, 5xx, timeouts)."""


_SECRET_NAME = re.compile(
    r"(secret|password|passwd|token|credential|key_?id|access_?key|account_?key|sas|signature|sig)",
    re.IGNORECASE,
)
_SECRET_IN_TEXT = re.compile(
    r"((?:AccountKey|SharedAccessSignature|sig|password|secret|token)=)([^;&\s'\"]+)",
    re.IGNORECASE,
)


def mask_secrets(options: Mapping[str, object]) -> dict[str, object]:
    """Return a copy of ``options`` fit to print: values of secret-looking
    names become ``"***"``, secrets embedded in strings (connection
    strings, SAS query strings) are masked in place, and URLs lose their
    userinfo and query strings (:func:`mask_secret_text`)."""
    masked: dict[str, object] = {}
    for name, value in options.items():
        if _SECRET_NAME.search(name) and value is not None:
            masked[name] = "***"
        elif isinstance(value, str):
            masked[name] = mask_secret_text(value)
        else:
            masked[name] = value
    return masked


def mask_secret_text(text: str) -> str:
    """``text`` fit to print: secrets embedded as ``name=value`` (connection
    strings, SAS query strings) masked, and every URL in it without its
    userinfo, query string or fragment (:func:`~offload_core.redaction.redact_url`)."""
    return redact_url_text(_SECRET_IN_TEXT.sub(r"\1***", text))
