"""What both of our ledger offloaders report of an offload that fails,
and what they leave of it, through the attempt they share."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from offload_core import Event, InMemoryReadHandle, StorageDriver
from offload_core.errors import StateError
from offload_core.formats.pulsar_v1 import closed_ledger_metadata
from offload_core.memory import MemoryDriver
from offload_core.offload import BlobStoreLedgerOffloader
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from offload_core.offload.offloader_base import OffloaderBase
from offload_core.proto import LedgerMetadataFormat
from offload_core.testing.faults import Fault, FaultyDriver, InjectedFault

Factory = Callable[..., OffloaderBase]
OFFLOADERS = pytest.mark.parametrize("factory", [BlobStoreLedgerOffloader, MapFileLedgerOffloader],
                                     ids=["blobstore", "mapfile"])  # fmt: skip


def _offload_kinds(events: list[Event]) -> list[str]:
    return [event.kind for event in events if event.kind.startswith("offload.")]


@OFFLOADERS
def test_a_failed_offload_removes_what_it_wrote_and_reports_the_failure(factory: Factory) -> None:
    store, events = MemoryDriver(), []
    offloader = factory(FaultyDriver(store, [Fault("write", key="index", permanent=True)]), emit=events.append)
    with pytest.raises(InjectedFault):
        offloader.offload(InMemoryReadHandle(5, [b"a", b"b"]), uuid.uuid4(), {"ManagedLedgerName": "t/n/p/x"})
    assert list(store.list("")) == []
    assert _offload_kinds(events) == ["offload.started", "offload.failed"]
    assert (events[-1].fields["ledger_id"], events[-1].fields["error"]) == (5, "InjectedFault")
    offloader.close()


@OFFLOADERS
def test_a_cleanup_that_fails_too_is_noted_on_the_offload_error(factory: Factory) -> None:
    faults = [Fault("write", key="index", permanent=True), Fault("delete", permanent=True)]
    offloader = factory(FaultyDriver(MemoryDriver(), faults))
    with pytest.raises(InjectedFault) as caught:
        offloader.offload(InMemoryReadHandle(5, [b"a"]), uuid.uuid4())
    assert "write of" in str(caught.value)
    (note,) = caught.value.__notes__
    assert note.startswith("cleanup after the failed offload of ledger 5 also failed (injected permanent failure")
    assert note.endswith("by hand or with `offload ledgers rm`")
    offloader.close()


def _open_ledger() -> LedgerMetadataFormat:
    metadata = closed_ledger_metadata(length=1, last_entry_id=0)
    metadata.state = LedgerMetadataFormat.OPEN
    return metadata


@OFFLOADERS
@pytest.mark.parametrize(
    ("metadata", "entries", "message"),
    [(_open_ledger(), [b"a"], "not closed"), (closed_ledger_metadata(length=0, last_entry_id=-1), [], "is empty")],
    ids=["open", "empty"],
)
def test_an_open_or_empty_ledger_is_refused_before_anything_is_reported(
    factory: Factory, metadata: LedgerMetadataFormat, entries: list[bytes], message: str
) -> None:
    store: StorageDriver = MemoryDriver()
    events: list[Event] = []
    offloader = factory(store, emit=events.append)
    with pytest.raises(StateError, match=message):
        offloader.offload(InMemoryReadHandle(5, entries, metadata=metadata), uuid.uuid4())
    assert events == [] and list(store.list("")) == []
    offloader.close()
