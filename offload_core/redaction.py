"""URLs and text fit to print. Pure, and below everything (the error
types use it to mask what they quote).

A store URL may carry secrets in two places: the userinfo
(``s3a://KEY:SECRET@bucket``) and the query string (an Azure SAS token,
``?...&sig=SECRET``). :func:`redact_url` drops both.
"""

from __future__ import annotations

import re

__all__ = ["redact_url", "redact_url_text"]

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*")


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
