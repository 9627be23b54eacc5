"""PIP-17 object keys: ``{uuid}-ledger-{ledgerId}`` for the data object,
with ``-index`` for its index, after any prefix (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LedgerKey", "data_key", "index_key", "parse_key"]

_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class LedgerKey:
    """What an object key says: the ``prefix`` before the offload ``uuid``,
    the ``ledger_id``, and which of the two objects it is."""

    prefix: str
    uuid: str
    ledger_id: int
    is_index: bool


def data_key(uuid: str, ledger_id: int) -> str:
    """``{uuid}-ledger-{ledgerId}``, the data object's key."""
    return f"{uuid}-ledger-{ledger_id}"


def index_key(uuid: str, ledger_id: int) -> str:
    """``{uuid}-ledger-{ledgerId}-index``, the index object's key."""
    return f"{data_key(uuid, ledger_id)}-index"


_KEY = re.compile(
    r"(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"-ledger-(?P<ledger>0|[1-9][0-9]{0,18})(?P<index>-index)?$"
)


def parse_key(key: str) -> LedgerKey | None:
    """Parse a v1 object key (with any prefix before the uuid); ``None`` if
    ``key`` does not end like one."""
    match = _KEY.search(key)
    if match is None or int(match["ledger"]) > _INT64_MAX:
        return None
    return LedgerKey(
        prefix=key[: match.start()],
        uuid=match["uuid"],
        ledger_id=int(match["ledger"]),
        is_index=match["index"] is not None,
    )
