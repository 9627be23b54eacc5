"""The ``aes-gcm`` chunk transform: a fresh data key per object, AES-256-GCM
per chunk with a random nonce and the object's id and the chunk's position
as associated data (version 1 chunks, written before objects had ids: the
position alone)."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from offload_core.errors import FormatError

from .keyring import Keyring, KeyringError, keyring_from_spec

__all__ = ["AesGcmTransform"]

_NONCE = 12


class _Codec:
    def __init__(self, data_key: bytes, binding: bytes) -> None:
        self._aead = AESGCM(data_key)
        self._binding = binding

    def encode(self, chunk: bytes, index: int) -> bytes:
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, chunk, self._binding + index.to_bytes(8, "big"))

    def decode(self, stored: bytes, index: int) -> bytes:
        try:
            return self._aead.decrypt(stored[:_NONCE], stored[_NONCE:], self._binding + index.to_bytes(8, "big"))
        except InvalidTag:
            raise FormatError(f"chunk {index} fails AES-GCM authentication: it was altered or moved") from None


class AesGcmTransform:
    """Envelope encryption under the keyring ``keyring()`` returns (looked
    up when first needed, so merely installing the plugin asks for no
    keyring)."""

    name = "aes-gcm"
    version = 2
    distribution = "offload-plugin-aes-gcm"

    def __init__(self, keyring: Callable[[], Keyring] = keyring_from_spec) -> None:
        self._keyring_factory = keyring
        self._keyring: Keyring | None = None

    def keyring(self) -> Keyring:
        if self._keyring is None:
            self._keyring = self._keyring_factory()
        return self._keyring

    def _keyring_for(self, key_id: str) -> Keyring:
        """The keyring, to use key ``key_id``; a keyring that cannot be had
        (none configured, its file gone) is a :class:`KeyringError` naming
        the key the object needs, so the user knows what to restore."""
        try:
            return self.keyring()
        except KeyringError as exc:
            raise KeyringError(f"this object's data key is wrapped under key id {key_id!r}, and the keyring "
                               f"holding it cannot be opened: {exc}") from None  # fmt: skip

    def for_writing(self, *, object_id: bytes) -> tuple[_Codec, Mapping[str, str]]:
        keyring = self.keyring()
        key_id = keyring.active_key_id()
        data_key = AESGCM.generate_key(bit_length=256)
        wrapped = keyring.wrap(key_id, data_key)
        return _Codec(data_key, object_id), {"key_id": key_id, "wrapped_key": base64.b64encode(wrapped).decode("ascii")}

    def rewrap(self, params: Mapping[str, str]) -> Mapping[str, str] | None:
        """New parameters wrapping the same data key under the keyring's
        active key, or ``None`` if it already is (``offload keys rotate``)."""
        key_id = params.get("key_id", "")
        keyring = self._keyring_for(key_id)
        active = keyring.active_key_id()
        if key_id == active:
            return None
        data_key = keyring.unwrap(key_id, base64.b64decode(params["wrapped_key"], validate=True))
        return {"key_id": active, "wrapped_key": base64.b64encode(keyring.wrap(active, data_key)).decode("ascii")}

    def wrapping_key_id(self, params: Mapping[str, str]) -> str | None:
        """The id of the key that wraps the data key of an object written
        with ``params`` (``offload keys retire`` refuses a key objects still
        need)."""
        return params.get("key_id")

    def for_reading(self, params: Mapping[str, str], *, version: int, object_id: bytes | None) -> _Codec:
        """A codec for an object written with ``version`` (1: chunks bound
        to their position only). Raises :class:`FormatError` for parameters
        without a wrapped key or a version 2 object without an id, and
        :class:`KeyringError` for a key the keyring lacks or cannot use."""
        if version < 2:
            binding = b""
        elif object_id is None:
            raise FormatError("its aes-gcm chunks are bound to an object id, which its chunk table lacks: damaged")
        else:
            binding = object_id
        key_id = params.get("key_id", "")
        try:
            wrapped = base64.b64decode(params["wrapped_key"], validate=True)
        except (KeyError, ValueError):
            raise FormatError(f"aes-gcm parameters of the object lack a wrapped data key (key id {key_id!r})") from None
        try:
            return _Codec(self._keyring_for(key_id).unwrap(key_id, wrapped), binding)
        except KeyringError:
            raise
        except ValueError as exc:
            raise KeyringError(f"key id {key_id!r}: the unwrapped data key is unusable ({exc})") from None
