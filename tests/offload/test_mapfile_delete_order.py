"""Every way of deleting a MapFile ledger (the broker's trim, retention's
kind, the cleanup verbs, `offload ledgers rm`) deletes `index`, the
offload's commit point, first: a store whose batch delete is cut short
before `index` never leaves an `index` beside files that are gone."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

import pytest
from click.testing import CliRunner

from offload_core import InMemoryReadHandle
from offload_core.cli import main
from offload_core.cli.ledger_layouts import delete_ledger
from offload_core.errors import TransientStorageError
from offload_core.memory import MemoryDriver
from offload_core.offload.mapfile.mapfile_inventory import find_mapfile_ledgers
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from offload_core.offload.mapfile.mapfile_stored import MAPFILE_LEDGERS

ML = "public/default/persistent/orders"
UID = uuid.UUID("3f25a1c2-0000-4000-8000-000000000005")
METADATA = {"ManagedLedgerName": ML}


class CutShortDeletes(MemoryDriver):
    """A store whose delete of several keys, `index` among them, removes
    the others and fails before `index` (a batch delete has no order)."""

    def _delete(self, keys: Sequence[str]) -> None:
        index = [key for key in keys if key.endswith("/index")]
        if len(keys) > 1 and index:
            super()._delete([key for key in keys if key not in index])
            raise TransientStorageError("delete cut short")
        super()._delete(keys)


def by_offloader(driver: MemoryDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    MapFileLedgerOffloader(driver).delete_offloaded(5, UID, METADATA)


def by_stored_kind(driver: MemoryDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    (offload,) = MAPFILE_LEDGERS.find(driver, "")
    MAPFILE_LEDGERS.delete(driver, offload)


def by_cleanup_verbs(driver: MemoryDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    (ledger,) = find_mapfile_ledgers(driver)
    error = delete_ledger(driver, ledger)
    if error is not None:
        raise TransientStorageError(error)


def by_rm(driver: MemoryDriver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("offload_core.cli.ledger_commands._open", lambda url, options: driver)
    result = CliRunner().invoke(main, ["ledgers", "rm", "memory://", "5", "--execute"])
    if result.exception is not None:
        raise result.exception


@pytest.mark.parametrize("delete", [by_offloader, by_stored_kind, by_cleanup_verbs, by_rm])
def test_a_mapfile_ledger_loses_its_index_first(
    delete: Callable[[MemoryDriver, pytest.MonkeyPatch], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = CutShortDeletes()
    MapFileLedgerOffloader(driver, block_size=3000, index_interval=8).offload(
        InMemoryReadHandle(5, [bytes([n]) * 300 for n in range(40)]), UID, METADATA
    )
    (written,) = find_mapfile_ledgers(driver)
    assert written.complete
    delete(driver, monkeypatch)
    assert [info.key for info in driver.list("")] == []
