"""The temporaries clauses of the storage-driver contract (part of
:class:`~offload_core.testing.DriverContract`): what
:meth:`~offload_core.storage.StorageDriver.list_temporaries` lists is never
a committed object or its metadata, and
:meth:`~offload_core.storage.StorageDriver.remove_temporaries` never removes
what a live writer holds, nor anything it did not list.

A store without temporaries passes with the defaults; a store with them
proves here that sweeping everything it lists, at any moment, loses
nothing. That its killed writers' files are found needs a killed writer,
which the driver's own tests provide.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from ..errors import InvalidKeyError
from ..leftovers import sweep_leftovers
from ..model import Temporary
from ..storage import StorageDriver

__all__ = ["TemporariesContract"]


class _Broke(Exception):
    pass


class TemporariesContract:
    """Mixed into :class:`~offload_core.testing.DriverContract`."""

    #: True for a store that tells a live writer's temporary files apart
    #: (the filesystem driver, with locks): they must then list as held.
    tells_live_writers: bool = False

    def _store_with_history(self, driver: StorageDriver) -> dict[str, bytes]:
        """Objects written, overwritten and deleted, and writes that failed."""
        objects = {"t/a": b"a" * 3000, "t/b": b"bb", "t/c/d": b""}
        for key, data in objects.items():
            driver.write(key, [data[:1000], data[1000:]], metadata={"k": key})
        driver.write("t/b", b"bb2", metadata={"gen": "2"})
        objects["t/b"] = b"bb2"
        driver.write("gone", b"x")
        driver.delete("gone")

        def broken() -> Iterator[bytes]:
            yield b"partial"
            raise _Broke("the part source broke")

        for key in ("t/a", "t/new"):
            with pytest.raises(_Broke):
                driver.write(key, broken(), metadata={"k": "broken"})
        return objects

    def test_temporaries_are_never_committed_objects(self, driver: StorageDriver) -> None:
        objects = self._store_with_history(driver)
        listed = list(driver.list_temporaries())
        assert all(isinstance(t, Temporary) for t in listed)
        assert not {t.path for t in listed} & {info.key for info in driver.list("")}
        # A failed write cleans up after itself: nothing unheld is left.
        assert [t for t in listed if not t.held] == []
        removed = driver.remove_temporaries(listed)
        assert [t for t in removed if t.held] == []
        for key, data in objects.items():
            assert driver.read(key) == data
        assert driver.stat("t/b").metadata == {"gen": "2"}

    def test_removing_everything_listed_loses_nothing_and_writes_go_on(self, driver: StorageDriver) -> None:
        objects = self._store_with_history(driver)
        for _ in range(2):
            driver.remove_temporaries(driver.list_temporaries())
        driver.write("t/after", [b"x" * 100, b"y"], metadata={"k": "v"})
        assert driver.read("t/after") == b"x" * 100 + b"y"
        assert driver.stat("t/after").metadata == {"k": "v"}
        assert {info.key for info in driver.list("")} == {*objects, "t/after"}
        assert driver.remove_temporaries(driver.list_temporaries(), dry_run=True) == ()

    def test_a_live_writers_temporaries_are_never_removed(self, driver: StorageDriver) -> None:
        def parts() -> Iterator[bytes]:
            yield b"first part " * 100
            listed = list(driver.list_temporaries())
            assert not [t for t in listed if t.owner_dead], "a live writer's file listed as a dead run's"
            if self.tells_live_writers:
                assert listed and all(t.held for t in listed), listed
                assert driver.remove_temporaries(listed) == ()
            assert sweep_leftovers(driver, now=time.time()) == ()  # the sweep's own rule: too young to go
            yield b"second part"

        driver.write("live", parts(), metadata={"k": "v"})
        assert driver.read("live") == b"first part " * 100 + b"second part"
        assert driver.stat("live").metadata == {"k": "v"}

    def test_only_listed_paths_are_removed(self, driver: StorageDriver) -> None:
        driver.write("obj", b"kept", metadata={"k": "v"})
        for path in ("obj", ".offload-meta/obj.json", "../outside", ".offload-tmp/../obj"):
            with pytest.raises(InvalidKeyError):
                driver.remove_temporaries([Temporary(path, 4, 0.0)])
        assert driver.read("obj") == b"kept"
        assert driver.stat("obj").metadata == {"k": "v"}
