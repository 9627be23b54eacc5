"""Prometheus metrics for offload-core (see README.md)."""

from .metrics import OffloadMetrics

__all__ = ["OffloadMetrics"]
