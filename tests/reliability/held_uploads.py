"""A fault-injecting store for killing a broker at a moment the test
chooses: while a streamed segment's upload is open.

It is a directory store (``held-file:///path``, the filesystem driver at
``/path``) installed as a plugin through an entry point the test writes
(the broker opens its worker processes' stores from entry points only).
In a process whose environment names :data:`HOLD_UPLOAD` (``n``), the
``n``-th segment data object the process writes is held open once its
first part is in the store's temporary file: the store says so on
standard output (:data:`HELD`, a line of its own: the worker shares its
broker's output) and waits until the broker, its parent, is gone. The
test kills the broker when it reads that line, so the kill lands with the
upload open, however slow the machine. Elsewhere the store passes
everything through.
"""

from __future__ import annotations

import itertools
import os
import select
from collections.abc import Iterator, Sequence

from offload_driver_filesystem import FilesystemDriver

from offload_core import hookimpl
from offload_core.formats import pulsar_v2 as v2
from offload_core.model import ObjectInfo
from offload_core.storage import BytesLike
from offload_core.wrapping_driver import WrappingDriver

__all__ = ["HELD", "HOLD_UPLOAD", "SCHEME", "HeldUploadsDriver", "offload_core_register_drivers"]

SCHEME = "held-file"
HOLD_UPLOAD = "OFFLOAD_TEST_HOLD_UPLOAD"
HELD = "a segment upload is held open until the broker is gone"


class HeldUploadsDriver(WrappingDriver):
    """The filesystem driver, holding one segment upload open (see the module)."""

    def __init__(self, inner: FilesystemDriver) -> None:
        super().__init__(inner)
        hold = os.environ.get(HOLD_UPLOAD)
        self._hold_at = int(hold) if hold else None
        self._data_writes = itertools.count(1)

    @classmethod
    def from_url(cls, url: str) -> HeldUploadsDriver:
        """``held-file:///abs/path``: the filesystem driver at ``/abs/path``."""
        return cls(FilesystemDriver.from_url("file" + url.removeprefix(SCHEME)))

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        segment = v2.parse_segment_key(key)
        data = segment is not None and not segment.is_index and not segment.is_entry_offsets
        if self._hold_at is not None and data and next(self._data_writes) == self._hold_at:
            parts = _held_after_the_first(parts)
        return self.inner.write(key, parts, metadata=metadata, if_absent=if_absent)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        return self.inner.read(key, start, end)

    def _stat(self, key: str) -> ObjectInfo:
        return self.inner.stat(key)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def _delete(self, keys: Sequence[str]) -> None:
        self.inner.delete(keys)


def _held_after_the_first(parts: Iterator[BytesLike]) -> Iterator[BytesLike]:
    # The store asks for the second part once the first is in its
    # temporary file: from here until the broker dies, the upload is open.
    yield next(parts)
    broker = os.pidfd_open(os.getppid())  # opened before saying so: the broker cannot be gone yet
    try:
        os.write(1, f"{HELD}\n".encode())
        select.select([broker], [], [])  # readable once the broker has exited
    finally:
        os.close(broker)
    yield from parts


@hookimpl
def offload_core_register_drivers(register) -> None:  # type: ignore[no-untyped-def]
    register(HeldUploadsDriver, name=SCHEME, schemes=(SCHEME,))
