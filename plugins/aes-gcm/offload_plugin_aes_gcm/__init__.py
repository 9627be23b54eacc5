"""AES-256-GCM envelope encryption of stored chunks (see README.md)."""

from .keyring import FileKeyring, Keyring, KeyringError, keyring_from_spec
from .transform import AesGcmTransform

__all__ = ["AesGcmTransform", "FileKeyring", "Keyring", "KeyringError", "keyring_from_spec"]
