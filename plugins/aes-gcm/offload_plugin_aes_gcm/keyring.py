"""Key-encryption keys: the keyring protocol and the local-file keyring.

A keyring wraps and unwraps data keys under key-encryption keys named by
id; it never hands out a key-encryption key. Keyrings other than the file
one (a KMS) register a factory in the entry-point group
``offload_plugin_aes_gcm.keyrings``, chosen by the scheme of
``OFFLOAD_AES_GCM_KEYRING`` (``file:/path``, ``kms:...``).
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from offload_core.errors import KeyUnavailableError

__all__ = ["ENV_KEYRING", "FileKeyring", "Keyring", "KeyringError", "keyring_from_spec"]

ENV_KEYRING = "OFFLOAD_AES_GCM_KEYRING"
_WRAP_AD = b"offload-core aes-gcm data key v1"
_NONCE = 12


class KeyringError(KeyUnavailableError):
    """A key id the keyring does not hold, or key material that cannot
    unwrap a data key; the message names the key id."""


class Keyring(Protocol):
    def active_key_id(self) -> str: ...

    def wrap(self, key_id: str, data_key: bytes) -> bytes: ...

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes: ...


class FileKeyring:
    """Key-encryption keys in a local JSON file: ``{"active": ID, "keys":
    {ID: base64 of 32 bytes}}``. Raises :class:`KeyringError` for a file
    that is missing, unreadable, or holds a key that is not 32 bytes."""

    def __init__(self, keys: Mapping[str, bytes], active: str, *, source: str = "keyring") -> None:
        for key_id, key in keys.items():
            if len(key) != 32:
                raise KeyringError(f"{source}: key {key_id!r} is {len(key)} bytes; AES-256 keys are 32")
        if active not in keys:
            raise KeyringError(f"{source}: the active key {active!r} is not among its keys {sorted(keys)}")
        self._keys = dict(keys)
        self._active = active
        self._source = source

    @classmethod
    def load(cls, path: str | Path) -> FileKeyring:
        try:
            body = json.loads(Path(path).read_text())
            keys = {str(k): base64.b64decode(v, validate=True) for k, v in body["keys"].items()}
            return cls(keys, str(body["active"]), source=str(path))
        except KeyringError:
            raise
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise KeyringError(f"keyring file {path} cannot be read ({type(exc).__name__}: {exc}); restore it, "
                               f"or create a new one with: offload keys add --keyring {path}") from None  # fmt: skip

    @classmethod
    def from_spec(cls, spec: str) -> FileKeyring:
        """``file:/path`` (or a bare path)."""
        return cls.load(spec.removeprefix("file:"))

    def active_key_id(self) -> str:
        return self._active

    def _key(self, key_id: str) -> bytes:
        key = self._keys.get(key_id)
        if key is None:
            raise KeyringError(f"key id {key_id!r} is not in {self._source} (it holds {sorted(self._keys)}): "
                               "restore that key to read what was written with it")  # fmt: skip
        return key

    def wrap(self, key_id: str, data_key: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        return nonce + AESGCM(self._key(key_id)).encrypt(nonce, data_key, _WRAP_AD)

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        try:
            return AESGCM(self._key(key_id)).decrypt(wrapped[:_NONCE], wrapped[_NONCE:], _WRAP_AD)
        except InvalidTag:
            raise KeyringError(f"key id {key_id!r} in {self._source} cannot unwrap this object's data key: "
                               "the key material differs from the one it was written with") from None  # fmt: skip


def keyring_from_spec(spec: str | None = None) -> Keyring:
    """The keyring ``spec`` (default: ``$OFFLOAD_AES_GCM_KEYRING``) names.
    Raises :class:`KeyringError` when none is configured or its scheme has
    no installed keyring."""
    spec = spec if spec is not None else os.environ.get(ENV_KEYRING)
    if not spec:
        raise KeyringError(f"no keyring configured for aes-gcm: set {ENV_KEYRING}=file:/path/keyring.json")
    scheme = spec.split(":", 1)[0] if ":" in spec else "file"
    for entry in metadata.entry_points(group="offload_plugin_aes_gcm.keyrings"):
        if entry.name == scheme:
            keyring: Keyring = entry.load()(spec)
            return keyring
    raise KeyringError(f"no aes-gcm keyring handles {scheme!r} ({spec!r}); install the plugin that provides it")


def _new(path: str) -> None:
    target = Path(path)
    if target.exists():
        raise SystemExit(f"{target} exists; not overwriting a keyring")
    body = {"active": "k1", "keys": {"k1": base64.b64encode(os.urandom(32)).decode()}}
    target.touch(mode=0o600)
    target.write_text(json.dumps(body, indent=2) + "\n")
    print(f"created {target} with active key k1")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "new":
        raise SystemExit("usage: python -m offload_plugin_aes_gcm.keyring new PATH")
    _new(sys.argv[2])
