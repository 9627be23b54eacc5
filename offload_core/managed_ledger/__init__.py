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

import importlib
from typing import TYPE_CHECKING, Any

# The broker and its rooms load on first use (PEP 562 ``__getattr__``): a verb
# that needs only the metadata store or the config starts without them.
if TYPE_CHECKING:
    from .broker import Broker
    from .config import BrokerConfig, load_config, parse_config
    from .hot.ledger_file import FsyncPolicy
    from .lifecycle.offload_ticket import OffloadTicket, write_offload
    from .lifecycle.policies import OffloadPolicies, PolicyStore, ReadPriority, TopicName
    from .managed_ledger import Cursor, LedgerState, ManagedLedger, OffloadStatus, TieredEntry
    from .metadata_store import MetadataStore, SqliteMetadataStore, Versioned
    from .streaming.segment_records import SegmentState
    from .streaming.segment_tickets import SegmentTicket, write_segment

# Each lazily imported public name and the submodule that defines it.
_LAZY_NAMES = {
    "Broker": "broker",
    "BrokerConfig": "config",
    "load_config": "config",
    "parse_config": "config",
    "FsyncPolicy": "hot.ledger_file",
    "OffloadTicket": "lifecycle.offload_ticket",
    "write_offload": "lifecycle.offload_ticket",
    "OffloadPolicies": "lifecycle.policies",
    "PolicyStore": "lifecycle.policies",
    "ReadPriority": "lifecycle.policies",
    "TopicName": "lifecycle.policies",
    "Cursor": "managed_ledger",
    "LedgerState": "managed_ledger",
    "ManagedLedger": "managed_ledger",
    "OffloadStatus": "managed_ledger",
    "TieredEntry": "managed_ledger",
    "MetadataStore": "metadata_store",
    "SqliteMetadataStore": "metadata_store",
    "Versioned": "metadata_store",
    "SegmentState": "streaming.segment_records",
    "SegmentTicket": "streaming.segment_tickets",
    "write_segment": "streaming.segment_tickets",
}


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


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it; raises
    :class:`AttributeError` for a name the package does not have."""
    if name not in _LAZY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
    globals()[name] = value
    return value
