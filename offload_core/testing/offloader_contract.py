"""The ledger-offloader contract as a pytest test class.

An offloader (ours or a third party's) proves it keeps the contract of
:class:`offload_core.offload.LedgerOffloader` by subclassing
:class:`OffloaderContract` and overriding two fixtures::

    from offload_core.testing import OffloaderContract

    class TestMyOffloader(OffloaderContract):
        @pytest.fixture
        def store(self):
            return MemoryDriver()            # an empty store

        @pytest.fixture
        def make_offloader(self):
            return lambda driver: MyOffloader(driver)

``make_offloader`` is called with the store, or with the store wrapped in a
fault injector, so the kit can fail every storage call in turn.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable

import pytest

from ..errors import InvalidRangeError, NotFoundError, OffloadError, StateError
from ..formats.pulsar_v1 import closed_ledger_metadata
from ..offload.ledger import LedgerOffloader
from ..offload.reading.read_handle import InMemoryReadHandle
from ..proto import LedgerMetadataFormat
from ..storage import StorageDriver
from .faults import Fault, FaultyDriver

__all__ = ["OffloaderContract"]

MakeOffloader = Callable[[StorageDriver], LedgerOffloader]
U1 = uuid.UUID("6f1c1e9a-3b7d-4c2e-9a51-0d2b8c7e4f10")
U2 = uuid.UUID("0b9e2f44-58aa-4c71-8d3e-7f6a1c2d9e33")


def ledger_entries(seed: int, count: int, largest: int = 3000) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.choice([0, 1, rng.randrange(largest)])) for _ in range(count)]


class OffloaderContract:
    """Subclass, override ``store`` and ``make_offloader``; every test below
    states one clause of the offloader contract."""

    #: Entries in the larger ledgers the kit offloads.
    entries_per_ledger: int = 400

    @pytest.fixture
    def store(self) -> StorageDriver:
        raise NotImplementedError("override the store fixture to return an empty storage driver")

    @pytest.fixture
    def make_offloader(self) -> MakeOffloader:
        raise NotImplementedError("override make_offloader to build your offloader over a given driver")

    # -- round trips ---------------------------------------------------------

    @pytest.mark.parametrize("count", [1, 2, 37])
    def test_small_ledgers_round_trip(self, store: StorageDriver, make_offloader: MakeOffloader, count: int) -> None:
        entries = ledger_entries(count, count)
        offloader = make_offloader(store)
        offloader.offload(InMemoryReadHandle(7, entries), U1)
        handle = offloader.read_offloaded(7, U1, offloader.driver_metadata())
        assert [entry.data for entry in handle.read(0, count - 1)] == entries
        assert [entry.entry_id for entry in handle.read(0, count - 1)] == list(range(count))
        assert {entry.ledger_id for entry in handle.read(0, count - 1)} == {7}

    def test_a_larger_ledger_reads_back_in_any_range(self, store: StorageDriver, make_offloader: MakeOffloader) -> None:
        entries = ledger_entries(3, self.entries_per_ledger)
        offloader = make_offloader(store)
        offloader.offload(InMemoryReadHandle(2**33, entries), U1)
        handle = offloader.read_offloaded(2**33, U1, offloader.driver_metadata())
        assert (handle.ledger_id, handle.last_entry_id, handle.length) == (2**33, len(entries) - 1,
                                                                          sum(map(len, entries)))  # fmt: skip
        rng = random.Random(5)
        for _ in range(30):
            first = rng.randrange(len(entries))
            last = rng.randrange(first, min(len(entries), first + 60))
            assert [entry.data for entry in handle.read(first, last)] == entries[first : last + 1]
        handle.close()

    def test_metadata_of_the_offloaded_ledger(self, store: StorageDriver, make_offloader: MakeOffloader) -> None:
        entries = ledger_entries(4, 20)
        offloader = make_offloader(store)
        offloader.offload(InMemoryReadHandle(9, entries), U1)
        metadata: LedgerMetadataFormat = offloader.read_offloaded(9, U1, offloader.driver_metadata()).metadata
        assert metadata.state == LedgerMetadataFormat.CLOSED
        assert (metadata.lastEntryId, metadata.length) == (19, sum(map(len, entries)))
        assert not metadata.HasField("password")

    @pytest.mark.parametrize(("first", "last"), [(-1, 0), (3, 2), (0, 20), (20, 20)])
    def test_ranges_outside_the_ledger_raise(
        self, store: StorageDriver, make_offloader: MakeOffloader, first: int, last: int
    ) -> None:
        offloader = make_offloader(store)
        offloader.offload(InMemoryReadHandle(9, ledger_entries(4, 20)), U1)
        with pytest.raises(InvalidRangeError):
            offloader.read_offloaded(9, U1, offloader.driver_metadata()).read(first, last)

    # -- state -----------------------------------------------------------------

    def test_open_and_empty_ledgers_are_refused_and_leave_nothing(
        self, store: StorageDriver, make_offloader: MakeOffloader
    ) -> None:
        offloader = make_offloader(store)
        open_metadata = closed_ledger_metadata(length=1, last_entry_id=0)
        open_metadata.state = LedgerMetadataFormat.OPEN
        with pytest.raises(StateError):
            offloader.offload(InMemoryReadHandle(1, [b"x"], metadata=open_metadata), U1)
        with pytest.raises(StateError):
            offloader.offload(InMemoryReadHandle(1, []), U1)
        assert list(store.list("")) == []

    def test_a_closed_read_handle_refuses_reads(self, store: StorageDriver, make_offloader: MakeOffloader) -> None:
        offloader = make_offloader(store)
        offloader.offload(InMemoryReadHandle(1, [b"a", b"b"]), U1)
        handle = offloader.read_offloaded(1, U1, offloader.driver_metadata())
        handle.close()
        with pytest.raises(StateError):
            handle.read(0, 0)

    # -- identity and deletion ---------------------------------------------------

    def test_ledgers_and_uuids_are_independent(self, store: StorageDriver, make_offloader: MakeOffloader) -> None:
        offloader = make_offloader(store)
        metadata = offloader.driver_metadata()
        offloader.offload(InMemoryReadHandle(1, [b"first"]), U1)
        offloader.offload(InMemoryReadHandle(1, [b"second"]), U2)
        offloader.offload(InMemoryReadHandle(2, [b"other"]), U1)
        assert offloader.read_offloaded(1, U1, metadata).read(0, 0)[0].data == b"first"
        assert offloader.read_offloaded(1, U2, metadata).read(0, 0)[0].data == b"second"
        offloader.delete_offloaded(1, U1, metadata)
        assert offloader.read_offloaded(1, U2, metadata).read(0, 0)[0].data == b"second"
        assert offloader.read_offloaded(2, U1, metadata).read(0, 0)[0].data == b"other"

    def test_delete_is_idempotent_and_leaves_nothing(self, store: StorageDriver, make_offloader: MakeOffloader) -> None:
        offloader = make_offloader(store)
        metadata = offloader.driver_metadata()
        offloader.offload(InMemoryReadHandle(3, ledger_entries(8, 50)), U1)
        offloader.delete_offloaded(3, U1, metadata)
        offloader.delete_offloaded(3, U1, metadata)
        assert list(store.list("")) == []
        with pytest.raises(NotFoundError):
            offloader.read_offloaded(3, U1, metadata)

    def test_a_ledger_never_offloaded_is_not_found(self, store: StorageDriver, make_offloader: MakeOffloader) -> None:
        offloader = make_offloader(store)
        with pytest.raises(NotFoundError):
            offloader.read_offloaded(12345, U1, offloader.driver_metadata())
        offloader.delete_offloaded(12345, U1, offloader.driver_metadata())

    # -- failures ------------------------------------------------------------------

    def test_a_failure_at_every_storage_write_leaves_nothing(
        self, store: StorageDriver, make_offloader: MakeOffloader
    ) -> None:
        entries = ledger_entries(6, self.entries_per_ledger)
        counting = FaultyDriver(store, [])
        writes: list[str] = []
        real_write = counting._write

        def counted(key, parts, metadata, if_absent):  # type: ignore[no-untyped-def]
            writes.append(key)
            return real_write(key, parts, metadata, if_absent)

        counting._write = counted  # type: ignore[method-assign]
        probe = make_offloader(counting)
        probe.offload(InMemoryReadHandle(4, entries), U1)
        probe.delete_offloaded(4, U1, probe.driver_metadata())
        assert list(store.list("")) == [], "delete_offloaded left objects behind"
        faults = [Fault("write", nth=n, permanent=True) for n in range(1, len(writes) + 1)]
        faults += [Fault("part", nth=n, permanent=True) for n in (1, 2, 3)]
        faults += [Fault("complete", nth=n, permanent=True) for n in range(1, len(writes) + 1)]
        for fault in faults:
            offloader = make_offloader(FaultyDriver(store, [fault]))
            try:
                offloader.offload(InMemoryReadHandle(4, entries), U1)
            except OffloadError:
                pass
            else:
                assert fault.fired == 0, f"{fault} fired but the offload reported success"
            left = [info.key for info in store.list("")]
            assert left == [] or fault.fired == 0, f"{fault} left {left}"
            if left:
                make_offloader(store).delete_offloaded(4, U1, offloader.driver_metadata())
