"""The contract between the store-wide jobs and the kinds of stored
offload: what a kind finds, plans, checks, summarizes, ages and deletes.
Everything here crosses to Spark executors, so it is picklable: records
are frozen dataclasses, kinds are instances of module-level classes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ...storage import StorageDriver
from ..ledgers.verify import Defect

__all__ = [
    "Defect",
    "LocatableKind",
    "Located",
    "OffloadPlan",
    "OffloadReport",
    "ReadableKind",
    "StoredKind",
    "StoredOffload",
]


@dataclass(frozen=True)
class StoredOffload:
    """One offload a store holds: written by one offloader, as one or more
    objects under one uuid, holding entries of ``ledger_ids`` (empty until
    :meth:`StoredKind.describe` has read them, when the keys do not say).

    ``keys`` are the objects present and ``size`` their bytes; ``complete``
    says whether every object the kind needs is there; ``label`` names it
    for people ("ledger 7", "segment 3f25... (ledgers 5, 6)");
    ``created_ms`` is its age as :meth:`StoredKind.describe` found it;
    ``detail`` is the kind's own record of it."""

    kind: str
    uuid: str
    ledger_ids: tuple[int, ...]
    keys: tuple[str, ...]
    size: int
    complete: bool
    label: str
    detail: Any
    created_ms: int | None = None


@dataclass(frozen=True)
class OffloadReport:
    """What verifying one offload found."""

    offload: StoredOffload
    blocks: int
    entries: int
    entry_bytes: int
    defects: tuple[Defect, ...]

    @property
    def ok(self) -> bool:
        return not self.defects


@dataclass(frozen=True)
class OffloadPlan:
    """An offload whose offload-wide checks passed: the checks of its parts
    (``tasks``, each one :meth:`StoredKind.check` call, run anywhere), and
    the kind's own record of what they must add up to."""

    offload: StoredOffload
    tasks: tuple[Any, ...]
    detail: Any


@runtime_checkable
class StoredKind(Protocol):
    """One kind of stored offload. ``name`` is unique among the kinds
    installed. No method raises for what it finds in the store: a missing
    object, a corrupt index or a store error is a defect, an unknown age
    or a deletion error (see each method)."""

    name: str

    def find(self, driver: StorageDriver, prefix: str) -> Sequence[StoredOffload]:
        """Every offload of this kind (complete or not) whose keys start
        with ``prefix``, from a listing alone. May raise storage errors
        when the store cannot be listed."""
        ...

    def describe(self, driver: StorageDriver, offload: StoredOffload) -> StoredOffload:
        """``offload`` with its ``ledger_ids`` and ``created_ms`` read from
        the store (``created_ms`` ``None`` when unknown)."""
        ...

    def plan(self, driver: StorageDriver, offload: StoredOffload) -> OffloadPlan | OffloadReport:
        """The offload-wide checks, then its parts to check; a report
        with the defect when a part cannot be located."""
        ...

    def check(self, driver: StorageDriver, task: Any) -> Any:
        """Check one task of a plan; the outcome, problems included."""
        ...

    def summarize(self, plan: OffloadPlan, outcomes: Sequence[Any]) -> OffloadReport:
        """Combine the outcomes of every task of ``plan`` (in any order)."""
        ...

    def delete(self, driver: StorageDriver, offload: StoredOffload) -> None:
        """Delete every object of ``offload``, so that an interrupted
        deletion is still found by :meth:`find` and finished next time.
        Raises what the store raises."""
        ...


@runtime_checkable
class ReadableKind(StoredKind, Protocol):
    """A kind whose entries Spark's ``pulsar-offload`` source reads through
    it, the small offloads of the kind packed into one partition up to
    ``bytesPerPartition`` (Pulsar's v1 ledgers and v2 segments have
    block-range partitions of their own instead). A kind that is also a
    :class:`LocatableKind` is planned compactly: a partition names its
    offloads by their locators rather than carrying them whole."""

    def entries(self, driver: StorageDriver, offload: StoredOffload, ledger_id: int) -> Iterator[tuple[int, bytes]]:
        """Entry id and payload of every entry of ``ledger_id`` in
        ``offload`` as :meth:`find` gave it (described only when its
        ``ledger_ids`` were empty: planning reads nothing else for it), in
        entry order. Raises
        :class:`~offload_core.errors.FormatError` naming the object and
        offset for what it cannot read, never a wrong entry."""
        ...


class Located(NamedTuple):
    """A complete offload as a read's plan holds it: the locator
    :meth:`LocatableKind.locate` finds it again by, its uuid, its ledgers
    and its stored size (the bytes of its objects)."""

    locator: str
    uuid: str
    ledger_ids: tuple[int, ...]
    size: int


@runtime_checkable
class LocatableKind(ReadableKind, Protocol):
    """A readable kind that finds one offload again by a short name of it,
    without listing the store: Spark's planning then holds and ships each
    offload as that name alone, and the task locates it on its own driver
    (a kind without these two methods is still read, its offloads found by
    :meth:`find` and carried to the tasks whole)."""

    def located(self, driver: StorageDriver, prefix: str) -> Iterable[Located]:
        """Every complete offload of this kind whose keys start with
        ``prefix``, in an order of the kind's own (a read's plan needs
        none; MapFile ledgers come as their directories are listed), from
        a listing alone, with its ``ledger_ids`` (described if the keys do
        not say), each held as little as that: a plan over 100,000 of
        them holds only these.
        May raise storage errors when the store cannot be listed."""
        ...

    def locate(self, driver: StorageDriver, locator: str) -> StoredOffload:
        """The offload ``locator`` (of :meth:`located`) names, as
        :meth:`find` would give it (complete or not, by what is there
        now), from at most a listing of its own objects (never of the
        store). Raises :class:`~offload_core.errors.NotFoundError` naming
        it when none of its objects is there any more, and storage
        errors."""
        ...
