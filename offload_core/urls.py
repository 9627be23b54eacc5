"""URLs fit to print, and endpoints checked before an SDK sees them. Pure.

Every URL quoted in a message or a ``repr`` goes through :func:`redact_url`
(or :func:`redact_url_text` for free text): see :mod:`.redaction`.
"""

from __future__ import annotations

import re
import socket

from .errors import ConfigError
from .redaction import redact_url, redact_url_text

__all__ = ["check_endpoint", "endpoint_problem", "redact_url", "redact_url_text"]

_ENDPOINT = re.compile(r"^https?://([^\s/?#@]+@)?[^\s/?#@:]+(:\d{1,5})?(/[^\s?#]*)?$", re.IGNORECASE)


def check_endpoint(endpoint: str, *, setting: str = "managedLedgerOffloadServiceEndpoint") -> str:
    """Return ``endpoint`` if it is ``http(s)://host[:port][/path]``.

    Raises :class:`ConfigError` naming ``setting`` otherwise (a bare
    ``host:port``, a typo'd scheme, spaces), before any SDK turns it into a
    traceback."""
    if not isinstance(endpoint, str) or not _ENDPOINT.match(endpoint):
        shown = redact_url(endpoint) if isinstance(endpoint, str) else repr(endpoint)
        raise ConfigError(
            f"endpoint {shown!r} is not a URL: it must start with http:// or https:// and name a host "
            f"(e.g. http://127.0.0.1:9000); check {setting}"
        )
    return endpoint


_TLS_NAMES = {"SSLError", "ClientConnectorSSLError", "ClientSSLError", "ClientConnectorCertificateError",
              "SSLCertVerificationError", "CertificateError"}  # fmt: skip
_DNS_NAMES = {"ClientConnectorDNSError", "NameResolutionError"}
_UNKNOWN_HOST_ERRNOS = {-2, -5, 8}  # EAI_NONAME, EAI_NODATA (glibc), EAI_NONAME (BSD)


def endpoint_problem(exc: BaseException, endpoint: str | None, *, setting: str) -> str | None:
    """What a connection failure says about the endpoint the user chose, or
    ``None`` if it looks transient: a TLS handshake with a plain-HTTP server
    (``https://`` against an emulator), or a host name that does not resolve
    at all. Both are configuration mistakes that retrying cannot fix; the
    message names ``setting``."""
    import ssl  # only here: every command imports this module, few ever fail a TLS handshake

    where = redact_url(endpoint) if endpoint else "the default endpoint"
    for cause in _chain(exc):
        name = type(cause).__name__
        if name in _TLS_NAMES or isinstance(cause, ssl.SSLError):
            return (f"TLS handshake with {where} failed ({name}): is the endpoint plain http? Emulators (moto, "
                    f"Azurite, gcp-storage-emulator) speak http://; check {setting}")  # fmt: skip
        if name in _DNS_NAMES or (isinstance(cause, socket.gaierror) and cause.errno in _UNKNOWN_HOST_ERRNOS):
            return f"the host of {where} does not resolve (no such host name); check {setting}"
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo and len(seen) < 20:
        current = todo.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [current.__cause__, current.__context__, *[a for a in current.args if isinstance(a, BaseException)]]
        # Where aiohttp (os_error) and azure-core (inner_exception, exc_value) keep the cause.
        for attribute in ("os_error", "inner_exception", "exc_value", "reason"):
            inner = getattr(current, attribute, None)
            if isinstance(inner, BaseException):
                todo.append(inner)
    return seen
