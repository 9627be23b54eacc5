"""Kafka's isolation levels for reading a partition: what a fetch of
``read_committed`` leaves out is :mod:`.log_reader`'s to decide. A module
of its own so that ``offload kafka read`` offers the levels without
loading the reader."""

from __future__ import annotations

import enum

__all__ = ["Isolation"]


class Isolation(enum.Enum):
    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"
