"""The threads clause of the storage-driver contract (part of
:class:`~offload_core.testing.DriverContract`): one driver's reads and
stats may be sent from several threads at once, as read-ahead and the
small reads of planning and of a remote log's listing send them
(:mod:`offload_core.reads_ahead`), and each gets its own object's answer.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ..storage import StorageDriver

__all__ = ["ThreadsContract"]


class ThreadsContract:
    """Mixed into :class:`~offload_core.testing.DriverContract`."""

    def test_reads_from_several_threads_at_once(self, driver: StorageDriver) -> None:
        """Read-ahead and planning send one driver's reads and stats from
        several threads at once: each must get its own object's bytes."""
        objects = {f"threads/{n:02}": f"{n:02}".encode() * (50 + n) for n in range(16)}
        for key, data in objects.items():
            driver.write(key, data, metadata={"n": key[-2:]})

        keys = list(objects)

        def check(order: int) -> None:
            for key in keys[2 * order :] + keys[: 2 * order]:  # each thread starts elsewhere
                assert driver.read(key) == objects[key]
                assert driver.read(key, 10, 20) == objects[key][10:20]
                assert driver.stat(key).metadata["n"] == key[-2:]

        with ThreadPoolExecutor(max_workers=8) as pool:
            for done in [pool.submit(check, order) for order in range(8)]:
                done.result()
