"""Which whole-ledger (PIP-17) objects the Pulsar sources read: one
complete copy of each wanted ledger. A store may hold two (an abandoned
offload left its copy, and the broker offloaded the ledger again); reading
both would yield every entry twice, and nothing in the objects says which
one the managed ledger names, so the reader is told to choose."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ConfigError
from ..offload.ledgers.inventory import LedgerCopy
from .read_options import ReadOptions

__all__ = ["ledger_copies_to_read", "refuse_second_copies", "wanted_copies"]


def wanted_copies(found: Iterable[LedgerCopy], options: ReadOptions) -> Iterator[LedgerCopy]:
    """The copies of ``found``, in its order, that ``options`` want read:
    those ``ledgerUuids`` names when it is given, else every complete copy
    of a wanted ledger (see :func:`refuse_second_copies`)."""
    for ledger in found:
        if (
            options.ledger_uuids is None or (ledger.ledger_id, ledger.uuid) in options.ledger_uuids
        ) and options.selection.wants_ledger(ledger.ledger_id):
            yield ledger


def ledger_copies_to_read(found: Iterable[LedgerCopy], options: ReadOptions) -> list[LedgerCopy]:
    """:func:`wanted_copies` of ``found`` (in ledger id order, as
    :func:`.inventory.sorted_copies` gives them).

    Raises :class:`ConfigError` naming the ledger and its uuids when
    ``ledgerUuids`` is not given and a wanted ledger has several complete
    copies."""
    chosen = list(wanted_copies(found, options))
    ids = array("q", (copy.ledger_id for copy in chosen))
    refuse_second_copies(ids, options, lambda ledger_id: [c.uuid for c in chosen if c.ledger_id == ledger_id])
    return chosen


def refuse_second_copies(
    ledger_ids: array[int], options: ReadOptions, uuids_of: Callable[[int], Iterable[str]]
) -> None:
    """Check the ids of the complete copies planned to be read (int64s, 8
    bytes each) name each ledger once, unless ``ledgerUuids`` chose the
    copies; ``uuids_of(ledger)`` finds a ledger's copies' uuids again for
    the error.

    Raises :class:`ConfigError` naming the first ledger with several
    complete copies and their uuids."""
    if options.ledger_uuids is not None or len(ledger_ids) < 2:
        return
    # Counted by Arrow over the ids' own buffer: no Python int a ledger.
    ids = pa.Array.from_buffers(pa.int64(), len(ledger_ids), [None, pa.py_buffer(ledger_ids)])
    counts = pc.value_counts(ids)
    twice = pc.greater(counts.field("counts"), 1)
    if pc.any(twice).as_py():
        found = sorted(zip(pc.filter(counts.field("values"), twice).to_pylist(),
                           pc.filter(counts.field("counts"), twice).to_pylist(), strict=True))  # fmt: skip
        ledger_id, count = found[0]
        raise _second_copy(ledger_id, sorted(uuids_of(ledger_id)), count)


def _second_copy(ledger_id: int, uuids: list[str], count: int) -> ConfigError:
    return ConfigError(
        f"pulsar-offload: the store holds {count} complete copies of ledger {ledger_id} "
        f"(uuids {', '.join(uuids)}), one of them an abandoned offload's; reading both would yield "
        f"its entries twice. Name the one the managed ledger records with the ledgerUuids option "
        f'(.option("ledgerUuids", "{ledger_id}:UUID")), or remove the abandoned copy with '
        f"`offload ledgers orphans URL DATA_DIR --execute` (PIP-17 objects and MapFile directories alike)"
    )
