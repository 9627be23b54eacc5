"""Fault and latency injection: driver wrappers that fail chosen calls, or
make every request as slow as a real object store's.

Both work with any backend (and with each other), so all-or-nothing writes
and retries can be proven on each real store, and a reader's behaviour at
real-world latency measured on a local one::

    faulty = FaultyDriver(s3_driver, [Fault("part", nth=3)])            # 3rd part of a write
    faulty = FaultyDriver(driver, [Fault("read", times=2)])             # two transient read errors
    faulty = FaultyDriver(driver, [Fault("write", key="-index", permanent=True)])
    faulty = FaultyDriver(driver, [Fault("read", short=True, times=None)])  # every read comes back cut short
    slow = SlowDriver(driver, Latency(0.1), bandwidth=80e6)             # 100 ms to first byte, 80 MB/s per request
    slow = SlowDriver(driver, Latency(0.05, jitter=0.15, seed=1))       # 50-200 ms, drawn uniformly
    slow_and_faulty = SlowDriver(FaultyDriver(driver, [Fault("read")]), Latency(0.1))
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..errors import ConfigError, OffloadError, TransientStorageError
from ..model import ObjectInfo
from ..storage import BytesLike, StorageDriver
from ..wrapping_driver import WrappingDriver

__all__ = ["Fault", "FaultyDriver", "InjectedFault", "Latency", "SlowDriver"]

Op = Literal["write", "part", "complete", "read", "stat", "list", "delete"]


class InjectedFault(OffloadError):
    """A permanent failure injected by :class:`FaultyDriver`."""


@dataclass
class Fault:
    """Fail matching calls of ``op``.

    ``op`` is a driver method, or ``"part"`` (the ``nth`` part of a write:
    the write fails after ``nth - 1`` parts went through) or ``"complete"``
    (a write fails after its last part, before it completes). For the
    other ops, ``nth`` is which matching call fails first. Only calls whose
    key (or prefix) contains ``key`` match. ``times`` matching calls fail
    (``None``: all of them). The error is a :class:`TransientStorageError`
    unless ``permanent``. With ``short`` (reads only) nothing is raised:
    the read returns only the first half of what the store sent, as a
    misbehaving backend or proxy might, so readers' length checks can be
    proven.
    """

    op: Op
    nth: int = 1
    key: str | None = None
    times: int | None = 1
    permanent: bool = False
    short: bool = False
    seen: int = field(default=0, init=False)
    fired: int = field(default=0, init=False)

    def matches(self, key: str) -> bool:
        return self.key is None or self.key in key

    def exhausted(self) -> bool:
        return self.times is not None and self.fired >= self.times

    def error(self, what: str) -> OffloadError:
        self.fired += 1
        if self.permanent:
            return InjectedFault(f"injected permanent failure: {what}")
        return TransientStorageError(f"injected transient failure: {what}")


class FaultyDriver(WrappingDriver):
    """Wraps ``inner`` and raises at the calls the ``faults`` choose."""

    def __init__(self, inner: StorageDriver, faults: Sequence[Fault]) -> None:
        super().__init__(inner)
        self.faults = list(faults)

    def __repr__(self) -> str:
        return f"FaultyDriver({self.inner!r})"

    def _check(self, op: Op, key: str) -> bool:
        """Raise the first due fault for this call; True if a due fault
        asks for a short read instead."""
        for fault in self.faults:
            if fault.op != op or not fault.matches(key) or fault.exhausted():
                continue
            fault.seen += 1
            if fault.seen >= fault.nth:
                if fault.short:
                    fault.fired += 1
                    return True
                raise fault.error(f"{op} of {key!r}")
        return False

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        self._check("write", key)
        part_faults = [f for f in self.faults if f.op == "part" and f.matches(key) and not f.exhausted()]
        complete_faults = [f for f in self.faults if f.op == "complete" and f.matches(key) and not f.exhausted()]

        def guarded() -> Iterator[BytesLike]:
            for number, part in enumerate(parts, start=1):
                for fault in part_faults:
                    if number == fault.nth and not fault.exhausted():
                        raise fault.error(f"part {number} of {key!r}")
                yield part
            for fault in complete_faults:
                fault.seen += 1
                if fault.seen >= fault.nth and not fault.exhausted():
                    raise fault.error(f"completing {key!r}")

        return self.inner.write(key, guarded(), metadata=metadata, if_absent=if_absent)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        short = self._check("read", key)
        data = self.inner.read(key, start, end)
        return data[: len(data) // 2] if short else data

    def _stat(self, key: str) -> ObjectInfo:
        self._check("stat", key)
        return self.inner.stat(key)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        self._check("list", prefix)
        return self.inner.list(prefix)

    def _delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._check("delete", key)
        self.inner.delete(keys)

    @property
    def fired_count(self) -> int:
        """How many injected failures have been raised so far."""
        return sum(fault.fired for fault in self.faults)


@dataclass(frozen=True)
class Latency:
    """Time to first byte of each request: ``seconds``, plus up to
    ``jitter`` seconds more, drawn uniformly from a generator seeded with
    ``seed`` (so a benchmark run can be repeated)."""

    seconds: float = 0.1
    jitter: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not (self.seconds >= 0 and self.jitter >= 0):
            raise ConfigError(f"latency {self.seconds}s and jitter {self.jitter}s must not be negative")


class SlowDriver(WrappingDriver):
    """Wraps ``inner`` so that each request takes what it would on a remote
    object store: the first-byte ``latency``, then its bytes at
    ``bandwidth`` bytes per second (a cap per request, as S3 gives each
    connection its own, not a budget shared between requests). A read,
    stat, listing or delete is one request; a write is one per part (a
    multipart upload's). A request waits its latency before it is sent
    (one that fails costs its round trip too), and its transfer time once
    its size is known. Requests running at once wait at once: nothing is
    held while one waits, so parallel GETs overlap as they would on S3.
    ``sleep`` is for tests (it gets each wait, in seconds).
    Raises :class:`ConfigError` for a negative latency or a bandwidth that
    is not positive."""

    def __init__(
        self,
        inner: StorageDriver,
        latency: Latency | float = 0.1,
        *,
        bandwidth: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if bandwidth is not None and not bandwidth > 0:
            raise ConfigError(f"bandwidth must be positive bytes per second, got {bandwidth}")
        super().__init__(inner)
        self.latency = latency if isinstance(latency, Latency) else Latency(float(latency))
        self.bandwidth = bandwidth
        self._sleep = sleep
        self._random = random.Random(self.latency.seed)
        self._random_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SlowDriver({self.inner!r}, {self.latency}, bandwidth={self.bandwidth})"

    def _first_byte(self) -> None:
        jitter = 0.0
        if self.latency.jitter:
            with self._random_lock:
                jitter = self._random.uniform(0, self.latency.jitter)
        self._sleep(self.latency.seconds + jitter)

    def _transfer(self, size: int) -> None:
        if self.bandwidth and size:
            self._sleep(size / self.bandwidth)

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        def slowed() -> Iterator[BytesLike]:
            for part in parts:
                self._first_byte()
                self._transfer(len(part))
                yield part

        return self.inner.write(key, slowed(), metadata=metadata, if_absent=if_absent)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        self._first_byte()  # a request that fails costs its round trip too
        data = self.inner.read(key, start, end)
        self._transfer(len(data))
        return data

    def _stat(self, key: str) -> ObjectInfo:
        self._first_byte()
        return self.inner.stat(key)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        self._first_byte()
        return self.inner.list(prefix)

    def _delete(self, keys: Sequence[str]) -> None:
        self._first_byte()
        self.inner.delete(keys)
