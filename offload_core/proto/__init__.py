"""Protobuf messages shared with Pulsar and BookKeeper.

Generated from the ``.proto`` files beside this module by ``make proto``;
the generated ``*_pb2.py``/``*_pb2.pyi`` are committed, and a test checks
they match the sources.
"""

from . import LedgerMetadataFormat_pb2, MLDataFormats_pb2, PulsarApi_pb2
from .LedgerMetadataFormat_pb2 import LedgerMetadataFormat
from .MLDataFormats_pb2 import (
    KeyValue,
    ManagedLedgerInfo,
    NestedPositionInfo,
    OffloadContext,
    OffloadDriverMetadata,
    OffloadSegment,
)
from .PulsarApi_pb2 import BrokerEntryMetadata, MessageMetadata, SingleMessageMetadata

LedgerInfo = ManagedLedgerInfo.LedgerInfo

__all__ = [
    "BrokerEntryMetadata",
    "KeyValue",
    "LedgerInfo",
    "LedgerMetadataFormat",
    "LedgerMetadataFormat_pb2",
    "MLDataFormats_pb2",
    "ManagedLedgerInfo",
    "MessageMetadata",
    "NestedPositionInfo",
    "OffloadContext",
    "OffloadDriverMetadata",
    "OffloadSegment",
    "PulsarApi_pb2",
    "SingleMessageMetadata",
]
