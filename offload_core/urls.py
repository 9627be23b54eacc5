"""URLs fit to print, and endpoints checked before an SDK sees them. Pure.

A store URL may carry secrets in two places: the userinfo
(``s3a://KEY:SECRET@bucket``) and the query string (an Azure SAS token,
``?...&sig=SECRET``). Every URL quoted in a message or a ``repr`` goes
through :func:`redact_url` (or :func:`redact_url_text` for free text), which
drops both.
"""

from __future__ import annotations

import re

from .errors import ConfigError

__all__ = ["check_endpoint", "redact_url", "redact_url_text"]

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")
_ENDPOINT = re.compile(r"^https?://([^\s/?#@]+@)?[^\s/?#@:]+(:\d{1,5})?(/[^\s?#]*)?$", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` without userinfo, query string or fragment:
    ``s3a://KEY:SECRET@bucket/p?x=1`` -> ``s3a://***@bucket/p?***``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    tail = slash + path
    for mark in ("?", "#"):
        if mark in authority:
            authority = authority.split(mark, 1)[0] + mark + "***"
            tail = ""
        if mark in tail:
            tail = tail.split(mark, 1)[0] + mark + "***"
    return f"{scheme}://{authority}{tail}"


def redact_url_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    return _URL.sub(lambda match: redact_url(match.group(0)), text)


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
