"""Data objects paired with their ``-index`` objects in a listing sorted
by key, as it comes (both Pulsar formats name an object's index after it:
``{data key}-index``). Holds only the data objects still waiting for their
index: in a sorted listing a data object's index comes before any key
that sorts after ``{data key}-index``, so one passed over never completes
and is let go."""

from __future__ import annotations

from ..errors import StateError
from ..model import ObjectInfo

__all__ = ["INDEX_SUFFIX", "ListingPairs"]

INDEX_SUFFIX = "-index"


class ListingPairs:
    """Pairs found in a sorted listing fed one record at a time, each with
    what the caller parsed its key to be (so a key is parsed once, by the
    caller, who may need more of it than its role)."""

    def __init__(self) -> None:
        self._waiting: dict[str, int] = {}  # data key: its size, in listing order
        self._previous = ""

    def feed(self, info: ObjectInfo, is_index: bool | None) -> tuple[str, int] | None:
        """The data key and stored size of the pair ``info`` completes, if it
        completes one; ``is_index`` says what ``info`` is: ``False`` a data
        object, ``True`` an index, ``None`` neither (passed over). Raises
        :class:`StateError` if ``info`` comes before the record fed last (a
        driver breaking its contract), rather than miss a pair."""
        key = info.key
        if key < self._previous:
            raise StateError(
                f"the store listed {key!r} after {self._previous!r}: offloads' objects are paired with their "
                "indexes from a listing sorted by key, which every storage driver must give (StorageDriver.list; "
                "offload_core.testing.DriverContract checks it): fix the driver's list()"
            )
        self._previous = key
        if is_index is None:
            return None
        waiting = self._waiting
        while waiting and (oldest := next(iter(waiting))) + INDEX_SUFFIX < key:
            del waiting[oldest]
        if not is_index:
            waiting[key] = max(info.size, 0)
            return None
        data_key = key[: -len(INDEX_SUFFIX)]
        size = waiting.pop(data_key, None)
        return None if size is None else (data_key, size)
