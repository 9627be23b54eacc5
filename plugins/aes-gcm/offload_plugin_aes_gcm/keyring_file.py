"""Keeping a keyring file: add a key, list the keys, retire one.

The file is :class:`~.keyring.FileKeyring`'s JSON (``{"active": ID,
"keys": {ID: base64 of 32 bytes}}``), rewritten whole through a temporary
file, so a reader sees the old keyring or the new one, never half of
either; a new keyring is readable by its owner only, a rewritten one keeps
its mode. ``offload keys add / list / retire`` call
these."""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .keyring import FileKeyring, KeyringError

__all__ = ["KeyringFile", "add_key", "read_keyring_file", "retire_key"]

_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class KeyringFile:
    """What a keyring file holds, without the key material."""

    path: Path
    active: str
    key_ids: tuple[str, ...]


def read_keyring_file(path: Path) -> KeyringFile:
    """The key ids of the keyring at ``path``; :class:`KeyringError` if it
    is missing or malformed (the message says how to create one)."""
    FileKeyring.load(path)  # checks every key, names what is wrong
    body = json.loads(path.read_text())
    return KeyringFile(path, str(body["active"]), tuple(sorted(body["keys"])))


def _write(path: Path, active: str, keys: dict[str, str]) -> None:
    """Replace the keyring at ``path`` whole. A new file is its owner's
    only (0600); a rewritten one keeps its mode, so a keyring shared with a
    broker's group (0640) stays readable by it."""
    previous = path.stat() if path.exists() else None
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    try:
        if previous is not None:
            os.fchmod(descriptor, stat.S_IMODE(previous.st_mode))
        with os.fdopen(descriptor, "w") as file:
            file.write(json.dumps({"active": active, "keys": keys}, indent=2) + "\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _next_id(taken: list[str]) -> str:
    numbers = [int(key_id[1:]) for key_id in taken if re.fullmatch(r"k[0-9]+", key_id)]
    return f"k{max(numbers, default=0) + 1}"


def add_key(path: Path, key_id: str | None = None, *, activate: bool = False) -> str:
    """Add a fresh random 256-bit key to the keyring at ``path`` (created,
    with that key active, if it does not exist) under ``key_id`` (default:
    ``k<n+1>``); make it the active key if ``activate``. Returns its id.
    Raises :class:`KeyringError` for an id already there or not made of
    letters, digits, ``.``, ``_`` and ``-``."""
    if key_id is not None and not _KEY_ID.fullmatch(key_id):
        raise KeyringError(f"key id {key_id!r}: use 1-64 letters, digits, '.', '_' or '-'")
    if path.exists():
        current = read_keyring_file(path)
        body = json.loads(path.read_text())
        keys, active = dict(body["keys"]), current.active
    else:
        keys, active, activate = {}, "", True
    chosen = key_id or _next_id(list(keys))
    if chosen in keys:
        raise KeyringError(f"key id {chosen!r} is already in {path}; choose another id")
    keys[chosen] = base64.b64encode(os.urandom(32)).decode("ascii")
    _write(path, chosen if activate else active, keys)
    return chosen


def retire_key(path: Path, key_id: str, *, dry_run: bool = False) -> None:
    """Remove ``key_id`` from the keyring at ``path`` (with ``dry_run``,
    only check that it could be). Raises :class:`KeyringError` if it is not
    there or is the active key (make another active first). Objects whose
    data keys are still wrapped under it become unreadable: run ``offload
    keys rotate`` over them first."""
    current = read_keyring_file(path)
    if key_id not in current.key_ids:
        raise KeyringError(f"key id {key_id!r} is not in {path} (it holds {list(current.key_ids)})")
    if key_id == current.active:
        raise KeyringError(f"key id {key_id!r} is the active key of {path}: add and activate another one first "
                           "(offload keys add --activate), then rotate (offload keys rotate URL)")  # fmt: skip
    if dry_run:
        return
    keys = dict(json.loads(path.read_text())["keys"])
    del keys[key_id]
    _write(path, current.active, keys)
