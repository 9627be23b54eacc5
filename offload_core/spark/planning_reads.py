"""Fetching many small objects (indexes) while planning a read: a few
threads, each with its own storage driver, since against a remote store
planning waits on requests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..plugins import open_driver
from ..storage import StorageDriver
from .read_options import ReadOptions

__all__ = ["read_objects"]

T = TypeVar("T")
_PLANNING_THREADS = 8


def read_objects(options: ReadOptions, keys: Sequence[str], decode: Callable[[bytes], T]) -> list[T]:
    """``decode(object)`` for each of ``keys`` in the store ``options``
    names, in order. Raises what a read or ``decode`` raised."""
    local = threading.local()
    driver_options: dict[str, Any] = dict(options.driver_options)
    opened: list[StorageDriver] = []
    lock = threading.Lock()

    def read(key: str) -> T:
        driver = getattr(local, "driver", None)
        if driver is None:
            driver = local.driver = open_driver(options.url, **driver_options)
            with lock:
                opened.append(driver)
        return decode(driver.read(key))

    try:
        with ThreadPoolExecutor(max_workers=max(1, min(_PLANNING_THREADS, len(keys)))) as pool:
            return list(pool.map(read, keys))
    finally:
        for driver in opened:
            driver.close()
