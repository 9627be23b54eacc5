"""The embedded managed ledger, in rooms by job:

- :mod:`.hot`: the hot tier (ledger files, their records and offsets);
- :mod:`.lifecycle`: sealing, offloading whole, deletion lag, retention,
  policies and the offload worker processes;
- :mod:`.streaming`: streaming offload (PIP-76), the pump and its segment
  worker process;
- :mod:`.reads`: tiered reads under the four priorities;
- :mod:`.workers`: starting worker processes, whatever they serve.

On top: :mod:`.ledger_core` (the state every part shares), the
:mod:`.metadata_store`, the broker's :mod:`.config` and
:mod:`.background` threads, the composed :class:`ManagedLedger` and the
:class:`Broker` that opens them.
"""

from .broker import Broker
from .config import BrokerConfig, load_config, parse_config
from .hot.ledger_file import FsyncPolicy
from .lifecycle.offload_ticket import OffloadTicket, write_offload
from .lifecycle.policies import OffloadPolicies, PolicyStore, ReadPriority, TopicName
from .managed_ledger import Cursor, LedgerState, ManagedLedger, OffloadStatus, TieredEntry
from .metadata_store import MetadataStore, SqliteMetadataStore, Versioned
from .streaming.segment_records import SegmentState
from .streaming.segment_tickets import SegmentTicket, write_segment

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
