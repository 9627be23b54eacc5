"""The worker side of :mod:`~offload_core.managed_ledger.lifecycle.offload_workers`:
writes the objects of one offload ticket at a time, as the broker asks,
until told to stop; exits at once when the broker is gone. Loads plugins
from their entry points; the events a write emits go back with its result."""

from __future__ import annotations

import contextlib
import os
import threading
from multiprocessing.connection import Connection

from ...hooks import Event, hookimpl
from ...offload.ledger import OffloadResult
from ...plugins import PluginManager
from ..workers.worker_processes import picklable
from .offload_ticket import OffloadTicket, write_offload

__all__ = ["serve_offloads"]


class _Collector:
    def __init__(self) -> None:
        self.events: list[Event] = []

    @hookimpl
    def offload_core_on_event(self, event: Event) -> None:
        self.events.append(event)


def _write(ticket: OffloadTicket) -> tuple[OffloadResult, list[Event]]:
    """The ticket's objects, and the events the write emitted."""
    collector = _Collector()
    plugins = PluginManager()
    plugins.register(collector)
    return write_offload(ticket, plugins), collector.events


def _write_and_answer(conn: Connection, ticket: OffloadTicket) -> None:
    try:
        result, events = _write(ticket)
        answer: tuple[object, ...] = ("written", result, events)
    except BaseException as exc:
        answer = ("failed", picklable(exc))
    with contextlib.suppress(OSError):  # the broker is gone: the receiving thread sees the link end and exits
        conn.send(answer)


def serve_offloads(conn: Connection) -> None:
    """The worker's main loop. Writes run on a thread of their own, so this
    one notices at once when the link ends: the broker is gone (killed,
    say), and the worker exits rather than finish work nobody will
    collect; what it was writing is the next open's to clean up, as after
    any crash of the broker."""
    writing: threading.Thread | None = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(1)
        if message[0] == "stop":
            break
        writing = threading.Thread(target=_write_and_answer, args=(conn, message[1]), name="offload-core-offload")
        writing.start()
    if writing is not None:
        writing.join()
