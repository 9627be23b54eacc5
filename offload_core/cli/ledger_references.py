"""Which topic of a broker's data directory still reads an offloaded
ledger: what the verbs that delete ledgers by id check before they do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import ConfigError
from ..offload.ledgers.inventory import OffloadedLedger

__all__ = ["even_if_referenced_option", "refuse_if_referenced", "references_data_dir_option"]

F = TypeVar("F", bound=Callable[..., Any])


def references_data_dir_option(command: F) -> F:
    """``--data-dir``, defaulting as the broker verbs' does: the broker
    whose topics' metadata says which ledgers are still read."""
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False),
        default="./offload-data",
        show_default=True,
        help="The broker's data directory: a ledger a topic there still refers to is not deleted.",
    )(command)


even_if_referenced_option = click.option(
    "--even-if-referenced",
    is_flag=True,
    help="Delete even a ledger a topic in --data-dir still refers to (its entries become unreadable).",
)


def refuse_if_referenced(ledger: OffloadedLedger, data_dir: str, *, even_if_referenced: bool) -> str | None:
    """Raise :class:`ConfigError` naming the ledger, the topic and what to
    do when a managed ledger in ``data_dir``'s metadata records
    ``ledger``'s offload (complete or in progress) and
    ``even_if_referenced`` is false. Returns a note for the user when the
    references could not be checked (no metadata store in ``data_dir``),
    else ``None``."""
    database = Path(data_dir) / "metadata.db"
    if not database.is_file():
        return (
            f"note: no broker metadata at {database}: whether a topic still refers to ledger {ledger.ledger_id} "
            f"could not be checked (pass the broker's --data-dir)"
        )
    # The broker's side loads only for this check: the other ledger verbs start without it.
    from ..managed_ledger.lifecycle.references import offload_references
    from ..managed_ledger.metadata_store import SqliteMetadataStore

    store = SqliteMetadataStore(database)
    try:
        topic = offload_references(store).get(ledger.uuid)
    finally:
        store.close()
    if topic is not None and not even_if_referenced:
        name = topic.replace("/persistent/", "/", 1)  # the managed ledger's name, as the topic is spelled
        raise ConfigError(
            f"ledger {ledger.ledger_id} ({ledger.uuid}) is still read by topic {name} (its metadata in {data_dir} "
            f"lists it as offloaded): deleting it loses those entries; let the topic's retention drop it, or pass "
            f"--even-if-referenced to delete it anyway"
        )
    return None
