"""Offloaded read handles shared by concurrent readers of a managed ledger.

Readers take a handle out of the cache under the ledger's lock, read
outside it (remote I/O must never hold the ledger up), and put it back. A
handle evicted or retired (its ledger trimmed, the ledger closed) while a
read uses it is closed by the last reader to put it back, never under a
reader. Reads of one handle are serialized by its own lock (a handle keeps
a read buffer), so readers of different ledgers, appends and hot reads all
proceed in parallel with them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ...offload.reading.offloaded_read_handle import OffloadedReadHandle
from ...offload.reading.read_handle import ReadHandle
from ...offload.segments.segmented_read_handle import SegmentedReadHandle

__all__ = ["READERS_PER_HANDLE", "SharedHandle", "SharedHandleCache"]


# Subscriptions catching up on one ledger share its handle: each keeps its
# own read-ahead stream as long as no more than this many read it at once.
READERS_PER_HANDLE = 8


class SharedHandle:
    """One open read handle, its users, and its read lock."""

    def __init__(self, handle: ReadHandle) -> None:
        if isinstance(handle, OffloadedReadHandle | SegmentedReadHandle):
            handle.readers = READERS_PER_HANDLE
        self.handle = handle
        self.read_lock = threading.Lock()
        self.users = 0
        self.retired = False


class SharedHandleCache:
    """At most ``size`` open handles by ledger id, least recently used
    evicted. Every method must be called under the owner's lock."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._handles: OrderedDict[int, SharedHandle] = OrderedDict()

    def take(self, ledger_id: int) -> SharedHandle | None:
        """The cached handle of ``ledger_id`` with one more user, or ``None``
        (open one outside the lock, then :meth:`add` it); give it back with
        :meth:`give_back`."""
        shared = self._handles.get(ledger_id)
        if shared is not None:
            self._handles.move_to_end(ledger_id)
            shared.users += 1
        return shared

    def add(self, ledger_id: int, handle: ReadHandle) -> SharedHandle:
        """Cache a handle opened for ``ledger_id`` and take it. If another
        reader cached one meanwhile, that one is taken and ``handle`` closed."""
        existing = self.take(ledger_id)
        if existing is not None:
            handle.close()
            return existing
        shared = SharedHandle(handle)
        shared.users = 1
        self._handles[ledger_id] = shared
        while len(self._handles) > self._size:
            _, evicted = self._handles.popitem(last=False)
            self._retire(evicted)
        return shared

    def give_back(self, shared: SharedHandle, *, broken: bool = False) -> None:
        """One user fewer; a ``broken`` handle (its read failed) leaves the
        cache so the next read opens a fresh one."""
        shared.users -= 1
        if broken:
            self.forget_handle(shared)
        if shared.retired and shared.users == 0:
            shared.handle.close()

    def forget(self, ledger_id: int) -> None:
        """Retire ``ledger_id``'s handle (its ledger is gone)."""
        shared = self._handles.pop(ledger_id, None)
        if shared is not None:
            self._retire(shared)

    def forget_handle(self, shared: SharedHandle) -> None:
        for ledger_id, cached in list(self._handles.items()):
            if cached is shared:
                del self._handles[ledger_id]
                self._retire(shared)

    def close(self) -> None:
        """Retire every handle (closed now, or by their last reader)."""
        for ledger_id in list(self._handles):
            self.forget(ledger_id)

    def _retire(self, shared: SharedHandle) -> None:
        if not shared.retired:
            shared.retired = True
            if shared.users == 0:
                shared.handle.close()
