"""A reader that stops reading early (``offload ... --json | head -1``)
ends the command quietly, as Python's documentation recommends (the signal
module's note on SIGPIPE): standard output is pointed at the null device,
so that no later flush fails again, and the process exits with the status
of one killed by SIGPIPE (141), nothing on stderr."""

from __future__ import annotations

import os
import select
import signal
import sys
from typing import NoReturn

__all__ = ["SIGPIPE_EXIT_STATUS", "exit_quietly_if_stdout_closed"]

SIGPIPE_EXIT_STATUS = 128 + signal.SIGPIPE


def exit_quietly_if_stdout_closed() -> None:
    """Exit with :data:`SIGPIPE_EXIT_STATUS` if the reader of standard
    output went away; return otherwise (a broken pipe elsewhere, a socket
    say, is an error like any other). Call it on :class:`BrokenPipeError`."""
    if _reader_gone():
        _exit_quietly()


def _reader_gone() -> bool:
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        # A pipe's writing end reports an error once no reader is left.
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):  # no real file behind stdout (io.UnsupportedOperation is both)
        return False


def _exit_quietly() -> NoReturn:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(SIGPIPE_EXIT_STATUS)
