"""Fault injection: a driver wrapper that fails chosen calls.

Works with any backend, so all-or-nothing writes and retries can be proven
on each real store::

    faulty = FaultyDriver(s3_driver, [Fault("part", nth=3)])            # 3rd part of a write
    faulty = FaultyDriver(driver, [Fault("read", times=2)])             # two transient read errors
    faulty = FaultyDriver(driver, [Fault("write", key="-index", permanent=True)])
    faulty = FaultyDriver(driver, [Fault("read", short=True, times=None)])  # every read comes back cut short
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..errors import OffloadError, TransientStorageError
from ..model import ObjectInfo
from ..storage import STALE_UPLOAD_AGE, BytesLike, StorageDriver

__all__ = ["Fault", "FaultyDriver", "InjectedFault"]

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


class FaultyDriver(StorageDriver):
    """Wraps ``inner`` and raises at the calls the ``faults`` choose."""

    counts_requests = True  # what the wrapped store sends is what counts

    def __init__(self, inner: StorageDriver, faults: Sequence[Fault]) -> None:
        self.inner = inner
        self.faults = list(faults)
        self.name = inner.name  # type: ignore[misc]
        self.min_part_size = inner.min_part_size

    def __repr__(self) -> str:
        return f"FaultyDriver({self.inner!r})"

    @property
    def request_counts(self) -> Counter[str]:
        return self.inner.request_counts

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

    def sweep_stale_uploads(
        self, older_than: float = STALE_UPLOAD_AGE, *, dry_run: bool = False
    ) -> tuple[ObjectInfo, ...]:
        return self.inner.sweep_stale_uploads(older_than, dry_run=dry_run)

    def close(self) -> None:
        self.inner.close()

    @property
    def fired_count(self) -> int:
        """How many injected failures have been raised so far."""
        return sum(fault.fired for fault in self.faults)
