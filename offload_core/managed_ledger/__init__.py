"""The embedded managed ledger: hot tier, offload lifecycle, policies, tiered reads."""

from .broker import Broker
from .config import BrokerConfig, load_config, parse_config
from .ledger_file import FsyncPolicy
from .managed_ledger import Cursor, LedgerState, ManagedLedger, OffloadStatus, TieredEntry
from .metadata_store import MetadataStore, SqliteMetadataStore, Versioned
from .offload_ticket import OffloadTicket, write_offload
from .policies import OffloadPolicies, PolicyStore, ReadPriority, TopicName
from .segment_records import SegmentState
from .segment_tickets import SegmentTicket, write_segment

__all__ = [
    "Broker",
    "BrokerConfig",
    "Cursor",
    "FsyncPolicy",
    "LedgerState",
    "ManagedLedger",
    "MetadataStore",
    "OffloadPolicies",
    "OffloadStatus",
    "OffloadTicket",
    "PolicyStore",
    "ReadPriority",
    "SegmentState",
    "SegmentTicket",
    "SqliteMetadataStore",
    "TieredEntry",
    "TopicName",
    "Versioned",
    "load_config",
    "parse_config",
    "write_offload",
    "write_segment",
]
