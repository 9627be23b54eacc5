"""Which whole-ledger (PIP-17) objects the Pulsar sources read: one
complete copy of each wanted ledger. A store may hold two (an abandoned
offload left its copy, and the broker offloaded the ledger again); reading
both would yield every entry twice, and nothing in the objects says which
one the managed ledger names, so the reader is told to choose."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import groupby
from operator import attrgetter

from ..errors import ConfigError
from ..offload.ledgers.inventory import LedgerCopy
from .read_options import ReadOptions

__all__ = ["ledger_copies_to_read"]


def ledger_copies_to_read(found: Iterable[LedgerCopy], options: ReadOptions) -> list[LedgerCopy]:
    """The complete copies ``found`` (in ledger id order, as
    :func:`.inventory.find_complete_ledgers` gives them) that ``options`` want read:
    those ``ledgerUuids`` names when it is given, else every complete copy
    of a wanted ledger, in ``found``'s order.

    Raises :class:`ConfigError` naming the ledger and its uuids when
    ``ledgerUuids`` is not given and a wanted ledger has several complete
    copies."""
    chosen = [
        ledger
        for ledger in found
        if (options.ledger_uuids is None or (ledger.ledger_id, ledger.uuid) in options.ledger_uuids)
        and options.selection.wants_ledger(ledger.ledger_id)
    ]
    if options.ledger_uuids is None:
        # A ledger's copies are neighbours: no table of every ledger's uuids is needed to find two.
        for ledger_id, group in groupby(chosen, key=attrgetter("ledger_id")):
            uuids = [copy.uuid for copy in group]
            if len(uuids) > 1:
                raise ConfigError(
                    f"pulsar-offload: the store holds {len(uuids)} complete copies of ledger {ledger_id} "
                    f"(uuids {', '.join(uuids)}), one of them an abandoned offload's; reading both would yield "
                    f"its entries twice. Name the one the managed ledger records with the ledgerUuids option "
                    f'(.option("ledgerUuids", "{ledger_id}:UUID")), or remove the abandoned copy with '
                    f"`offload ledgers orphans URL DATA_DIR --delete`"
                )
    return chosen
