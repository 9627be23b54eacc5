"""Room in a streamed segment's buffer, told to the one offering to it.

An offer refused for a full buffer stops the offering side until the
upload sends a part. The upload sends a part every block, full or not;
telling the offering side of each would start a pump (the ledger's lock,
a look for entries to offer) a block, whether or not anything waits for
room, and at moments nothing else in the broker knows of. So room is told
once after each refusal, and never missed when the part leaves while the
refused offer runs."""

from __future__ import annotations

import threading
from collections.abc import Callable

from .streaming_offload import OfferResult

__all__ = ["RoomNotices"]


class RoomNotices:
    """Calls ``notify`` once a part has left a segment's buffer after an
    offer made through :meth:`offer` was refused for a full buffer; never
    otherwise. ``notify`` must not block: it runs on the upload thread, or
    on the offering thread when room came while the refused offer ran."""

    def __init__(self, notify: Callable[[], None]) -> None:
        self._notify = notify
        self._lock = threading.Lock()
        self._parts_sent = 0
        self._waiting = False

    @property
    def waiting(self) -> bool:
        """Whether a refused offer waits for the next part to leave."""
        with self._lock:
            return self._waiting

    def part_sent(self) -> None:
        """On the upload thread: a part left the buffer (the handle's
        ``on_room``)."""
        with self._lock:
            self._parts_sent += 1
            waiting, self._waiting = self._waiting, False
        if waiting:
            self._notify()

    def offer(self, offer: Callable[[], tuple[int, OfferResult]]) -> tuple[int, OfferResult]:
        """Make ``offer`` (a handle's ``offer_run``), and return what it
        returns; if it was refused for a full buffer, room is told when the
        next part leaves, or at once if one left while it ran."""
        with self._lock:
            sent_before = self._parts_sent
        taken, result = offer()
        if result is OfferResult.FAIL_BUFFER_FULL:
            with self._lock:
                room_since = self._parts_sent != sent_before
                self._waiting = not room_since
            if room_since:
                self._notify()
        return taken, result
