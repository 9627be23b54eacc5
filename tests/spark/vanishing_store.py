"""A store whose objects vanish when a test says, in whichever process reads
them first: Spark's streaming planner too, a Python process no test code
runs in.

``vanishing-file:///path`` is the filesystem driver at ``/path``, opened
with the option ``doomed`` (a directory; a read gives it as
``driver.doomed``): an object whose key (quoted, see :func:`doom`) names a
file there is deleted just before its first read, so it was listed and
is gone, as when a retention run races the read. The first reader takes
the file by removing it, so one process, one thread, deletes. It is
installed as a plugin through an entry point (:func:`install`): Spark's
Python workers open stores through the plugins they find installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from offload_driver_filesystem import FilesystemDriver

from offload_core import hookimpl
from offload_core.model import ObjectInfo
from offload_core.storage import BytesLike
from offload_core.wrapping_driver import WrappingDriver

__all__ = ["SCHEME", "VanishingDriver", "doom", "install", "offload_core_register_drivers"]

SCHEME = "vanishing-file"


class VanishingDriver(WrappingDriver):
    """The filesystem driver, deleting each doomed object as its first read starts (see the module)."""

    def __init__(self, inner: FilesystemDriver, doomed: str) -> None:
        super().__init__(inner)
        self._doomed = doomed

    @classmethod
    def from_url(cls, url: str, doomed: str) -> VanishingDriver:
        """``vanishing-file:///abs/path``: the filesystem driver at ``/abs/path``."""
        return cls(FilesystemDriver.from_url("file" + url.removeprefix(SCHEME)), doomed)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        try:
            os.unlink(os.path.join(self._doomed, quote(key, safe="")))
        except FileNotFoundError:
            pass  # not doomed, or deleted already
        else:
            self.inner.delete([key])
        return self.inner.read(key, start, end)

    def _stat(self, key: str) -> ObjectInfo:
        return self.inner.stat(key)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        return self.inner.write(key, parts, metadata=metadata, if_absent=if_absent)

    def _delete(self, keys: Sequence[str]) -> None:
        self.inner.delete(keys)


def doom(doomed: Path, key: str) -> None:
    """Have object ``key`` deleted just before its first read through a store opened with ``doomed``."""
    (doomed / quote(key, safe="")).touch()


def install(site: Path) -> None:
    """Install this module under ``site`` as a distribution whose entry point
    a process with ``site`` on its path loads (the module itself is found
    through the repository, on the path of the tests' Spark workers)."""
    info = site / "offload_test_vanishing_store-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: offload-test-vanishing-store\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[offload_core.drivers]\n{SCHEME} = {__name__}\n")


@hookimpl
def offload_core_register_drivers(register) -> None:  # type: ignore[no-untyped-def]
    register(VanishingDriver, name=SCHEME, schemes=(SCHEME,))
