"""The hook implementation, loaded from the ``offload_core.plugins`` entry point."""

from __future__ import annotations

from offload_core import hookimpl

from .transform import AesGcmTransform


@hookimpl
def offload_core_register_transforms(register) -> None:  # type: ignore[no-untyped-def]
    register(AesGcmTransform())
