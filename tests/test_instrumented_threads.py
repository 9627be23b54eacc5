"""An :class:`InstrumentedDriver` read from several threads at once (a
remote log's listing reads its manifests 8 at a time through the RSM's
one driver): its byte counts add up."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from offload_core.instrument import InstrumentedDriver
from offload_core.memory import MemoryDriver


class _Sized(bytes):
    """An object's bytes whose size, asked a second time (when the
    instrumented read adds it to its count), is told only once another
    read's has been too: two reads then add at the same moment."""

    meet = threading.Barrier(2, timeout=30)
    asked = 0

    def __len__(self) -> int:
        self.asked += 1
        if self.asked == 2:
            self.meet.wait()
        return super().__len__()


class _MeetingReads(MemoryDriver):
    def _read(self, key: str, start: int, end: int | None) -> bytes:
        return _Sized(super()._read(key, start, end))


def test_bytes_read_from_two_threads_at_once_add_up() -> None:
    inner = _MeetingReads()
    inner.write("a", b"x" * 100)
    inner.write("b", b"y" * 50)
    driver = InstrumentedDriver(inner, emit=lambda event: None)
    with ThreadPoolExecutor(max_workers=2) as pool:
        assert [len(data) for data in pool.map(driver.read, ["a", "b"])] == [100, 50]
    assert driver.counts.bytes_read == 150
