"""Azure metadata names must be C# identifiers; ours may hold '.' and '-'.

Pure, reversible: a name that already is an identifier (and does not start
with the marker) is kept, so Pulsar's ``s3managedledgeroffloaderformatversion``
is stored exactly as Pulsar stores it."""

from __future__ import annotations

import re

__all__ = ["decode_name", "encode_name"]

_MARKER = "ocx_"
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


def encode_name(name: str) -> str:
    if _IDENTIFIER.match(name) and not name.startswith(_MARKER):
        return name
    return _MARKER + "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):02x}" for c in name)


def decode_name(stored: str) -> str:
    stored = stored.lower()
    if not stored.startswith(_MARKER):
        return stored
    body, out, position = stored[len(_MARKER) :], [], 0
    while position < len(body):
        if body[position] == "_":
            out.append(chr(int(body[position + 1 : position + 3], 16)))
            position += 3
        else:
            out.append(body[position])
            position += 1
    return "".join(out)
