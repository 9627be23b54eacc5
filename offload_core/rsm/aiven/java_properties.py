"""``java.util.Properties.load`` syntax, as a Kafka broker reads its
``server.properties``. Pure.

A logical line is natural lines joined where one ends in an odd number of
backslashes (the next one's leading white space dropped). Lines whose first
non-blank character is ``#`` or ``!`` are comments. The key runs to the
first unescaped ``=``, ``:`` or white space; then white space, one optional
``=`` or ``:``, and white space more are skipped; the rest is the value.
Escapes in both: ``\\t \\n \\r \\f``, ``\\uXXXX``, and ``\\`` before any
other character stands for that character. A later key replaces an earlier.
"""

from __future__ import annotations

import re

from ...errors import ConfigError

__all__ = ["parse_properties"]

_BLANK = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_NATURAL_LINES = re.compile(r"\r\n|\r|\n")


def parse_properties(text: str) -> dict[str, str]:
    """The properties in ``text``. Raises :class:`ConfigError` naming the
    line of a malformed ``\\uXXXX`` escape."""
    found: dict[str, str] = {}
    lines = _NATURAL_LINES.split(text)
    number = 0
    while number < len(lines):
        first = number
        line = lines[number].lstrip(_BLANK)
        number += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and number < len(lines):
            line = line[:-1] + lines[number].lstrip(_BLANK)
            number += 1
        if _continues(line):
            line = line[:-1]  # a continuation at the end of the file joins nothing
        key, value = _split(line)
        found[_unescape(key, first + 1)] = _unescape(value, first + 1)
    return found


def _continues(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split(line: str) -> tuple[str, str]:
    at = 0
    while at < len(line):
        char = line[at]
        if char == "\\":
            at += 2
            continue
        if char in "=:" or char in _BLANK:
            break
        at += 1
    key, rest = line[:at], line[at:].lstrip(_BLANK)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANK)
    return key, rest


def _unescape(text: str, line: int) -> str:
    if "\\" not in text:
        return text
    out = []
    at = 0
    while at < len(text):
        char = text[at]
        if char != "\\" or at + 1 == len(text):
            out.append(char)
            at += 1
            continue
        escaped = text[at + 1]
        if escaped == "u":
            digits = text[at + 2 : at + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ConfigError(f"properties line {line}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            at += 6
            continue
        out.append(_ESCAPES.get(escaped, escaped))
        at += 2
    return "".join(out)
