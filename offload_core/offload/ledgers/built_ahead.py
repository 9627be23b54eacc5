"""Building the next part of an upload while the current one is sent.

An offload alternates two kinds of work: building a block (reading entries
from the hot tier and framing them, which holds the interpreter) and
sending it (a write or an HTTP request, which mostly does not). Done one
after the other, the two add up; with the next block built on a thread
of its own while the caller sends the current one, the slower of the two
sets the pace.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Generic, TypeVar

__all__ = ["BuiltAhead"]

T = TypeVar("T")


class BuiltAhead(Generic[T]):
    """The items of ``source``, built one ahead of the caller.

    ``source`` is iterated on a thread of its own and only there, one step
    at a time: while the caller holds item *n*, the thread builds item
    *n + 1* and then waits until the caller takes it, so at most two items
    exist at once (the one in use and the one ready). What ``source``
    raises comes out of ``next()`` on the caller's thread, with its
    traceback. :meth:`close` (or leaving the ``with`` block) stops the
    thread after the item it is building, closes ``source`` and waits for
    both, so ``source`` (say, a read handle behind it) is never used once
    :meth:`close` has returned.
    """

    def __init__(self, source: Iterator[T], *, name: str) -> None:
        self._source = source
        self._ready: queue.SimpleQueue[tuple[bool, T | None, BaseException | None]] = queue.SimpleQueue()
        self._taken = threading.Semaphore(0)
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(target=self._build, name=name, daemon=True)
        self._thread.start()

    def __iter__(self) -> BuiltAhead[T]:
        return self

    def __next__(self) -> T:
        if self._finished:
            raise StopIteration
        done, item, error = self._ready.get()
        if done:
            self._finished = True
            self._thread.join()
            if error is not None:
                raise error
            raise StopIteration
        self._taken.release()  # the thread may build the next one now
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Stop building, close ``source`` and wait for the thread."""
        if not self._thread.is_alive() and self._finished:
            return
        self._finished = True
        self._stop.set()
        self._taken.release()
        self._thread.join()

    def __enter__(self) -> BuiltAhead[T]:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _build(self) -> None:
        try:
            for item in self._source:
                if self._stop.is_set():
                    return
                self._ready.put((False, item, None))
                del item  # the caller holds it now; do not keep a third alive while building
                self._taken.acquire()
                if self._stop.is_set():
                    return
            self._ready.put((True, None, None))
        except BaseException as exc:  # delivered to the caller, who decides
            self._ready.put((True, None, exc))
        finally:
            close = getattr(self._source, "close", None)
            if close is not None:
                close()
