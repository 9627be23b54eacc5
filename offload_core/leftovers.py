"""The sweep of leftovers: the temporary and sidecar files that killed
writers leave in a store.

Every writer that streams to a directory store (an offload, a streaming
segment in its worker process, ``offload kafka copy``, ``offload keys
rotate``) keeps its files outside the object namespace until it commits;
killed, it leaves them there. One rule decides which go, for every caller
(``offload ledgers sweep``, the broker's maintenance and its start, and the
re-runs of ``kafka copy`` and ``keys rotate``): a file no live writer holds
is removed once the run that made it has provably ended, or once it is
older than the grace period (:data:`DEFAULT_GRACE_SECONDS`; the broker's
``managedLedgerOffloadLeftoverGraceSeconds``). A write that reached its
commit point is finished instead, and committed objects and their metadata
are never touched. Each source lists and removes its own files (the
storage driver, then whatever plugins add through
``offload_core_leftover_sources``); a sweep killed at any point leaves
nothing half done that the next one does not finish.
"""

from __future__ import annotations

from collections.abc import Iterable

from .hooks import LeftoverSource
from .model import Temporary
from .plugins import PluginManager
from .storage import StorageDriver

__all__ = ["DEFAULT_GRACE_SECONDS", "is_leftover", "sweep_leftovers"]

DEFAULT_GRACE_SECONDS = 3600.0
"""How old a temporary file of a run that cannot be proven dead must be
before the sweep removes it."""


def is_leftover(temporary: Temporary, *, now: float, grace: float) -> bool:
    """Whether the sweep removes ``temporary`` at ``now`` (seconds since the
    epoch): no live writer holds it, and its run has provably ended or it
    has not changed for ``grace`` seconds."""
    return not temporary.held and (temporary.owner_dead or now - temporary.modified >= grace)


def sweep_leftovers(
    driver: StorageDriver,
    *,
    now: float,
    grace: float = DEFAULT_GRACE_SECONDS,
    dry_run: bool = False,
    plugins: PluginManager | None = None,
) -> tuple[Temporary, ...]:
    """Remove the leftovers (see :func:`is_leftover`) in ``driver``'s store,
    and those of the sources ``plugins`` add for it; return what was removed
    (with ``dry_run``, what would be, removing nothing). Raises what a
    source raises for a store it cannot reach."""
    sources: Iterable[LeftoverSource] = plugins.leftover_sources(driver) if plugins is not None else (driver,)
    removed: list[Temporary] = []
    for source in sources:
        due = [t for t in source.list_temporaries() if is_leftover(t, now=now, grace=grace)]
        if due:
            removed.extend(source.remove_temporaries(due, dry_run=dry_run))
    return tuple(removed)
