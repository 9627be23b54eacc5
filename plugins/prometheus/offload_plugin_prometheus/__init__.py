"""Prometheus metrics for offload-core (see README.md).

``OffloadMetrics`` is imported on first use (PEP 562), so loading the
plugin does not import prometheus_client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .metrics import OffloadMetrics

__all__ = ["OffloadMetrics"]


def __getattr__(name: str) -> Any:
    if name == "OffloadMetrics":
        from .metrics import OffloadMetrics

        return OffloadMetrics
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
