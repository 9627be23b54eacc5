"""AES-256-GCM envelope encryption of stored chunks (see README.md).

The names below are imported on first use (PEP 562): importing the package
alone imports none of its modules, so ``python -m
offload_plugin_aes_gcm.keyring`` runs that module once, without runpy's
warning that it was imported before it ran."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .keyring import FileKeyring, Keyring, KeyringError, keyring_from_spec
    from .transform import AesGcmTransform

__all__ = ["AesGcmTransform", "FileKeyring", "Keyring", "KeyringError", "keyring_from_spec"]

_HOMES = {
    "AesGcmTransform": ".transform",
    "FileKeyring": ".keyring",
    "Keyring": ".keyring",
    "KeyringError": ".keyring",
    "keyring_from_spec": ".keyring",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
