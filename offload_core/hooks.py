"""The extension contract: pluggy hook specifications.

A plugin is a module (named by an entry point in the group
``offload_core.drivers`` or ``offload_core.plugins``) holding functions
marked with :data:`hookimpl` whose names are the hooks below. Every hook
argument is keyword-only; an implementation may accept any subset.

pluggy is for discovery and extension only: hooks run when a registry is
built or an event is emitted, never once per log entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from .model import Temporary
    from .storage import StorageDriver

__all__ = [
    "DriverRegistrar",
    "ChunkCodec",
    "Event",
    "LeftoverSource",
    "MetricsServer",
    "OffloaderRegistrar",
    "Transform",
    "TransformRegistrar",
    "hookimpl",
    "hookspec",
]

PROJECT = "offload_core"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class DriverRegistrar(Protocol):
    """What ``offload_core_register_drivers`` receives as ``register``.

    ``driver`` is a :class:`StorageDriver` subclass or its import path,
    ``"package.module:Class"``: a path is imported only when the driver is
    first used, so registering a driver whose SDK is slow to import costs
    commands that never open that store nothing."""

    def __call__(
        self,
        driver: type[StorageDriver] | str,
        *,
        name: str,
        aliases: Sequence[str] = (),
        schemes: Sequence[str] = (),
    ) -> None: ...


class OffloaderRegistrar(Protocol):
    """What ``offload_core_register_offloaders`` receives as ``register``.

    ``factory(driver, emit=..., **options)`` returns a ``LedgerOffloader``
    (:class:`offload_core.offload.LedgerOffloader`) over the opened storage
    ``driver``; ``options`` are the offloader settings its signature names
    (``max_block_size``, ``read_buffer_size``, ``prefix`` ...), and only
    those are passed. ``drivers`` lists the storage-driver names (or
    aliases) this offloader serves, as Pulsar's offloader factories declare
    ``isDriverSupported``; ``"*"`` serves any driver no other offloader
    claims (the core's blob-store offloader does that). ``stored`` lists
    the kinds of stored offload it writes
    (:class:`offload_core.offload.stored.kinds.StoredKind`, picklable
    instances): the store-wide jobs (``offload spark verify`` and
    ``retention``) find, verify, age and delete its offloads through them."""

    def __call__(
        self,
        factory: Callable[..., Any],
        *,
        name: str,
        aliases: Sequence[str] = (),
        drivers: Sequence[str] = (),
        stored: Sequence[Any] = (),
    ) -> None: ...


class ChunkCodec(Protocol):
    """One object's transform, applied chunk by chunk. ``index`` is the
    chunk's position in the object (for associated data or nonces).
    ``decode`` raises :class:`~offload_core.errors.FormatError` for a
    stored chunk it cannot prove intact, never returns altered bytes."""

    def encode(self, chunk: bytes, index: int) -> bytes: ...

    def decode(self, stored: bytes, index: int) -> bytes: ...


class Transform(Protocol):
    """A reversible chunk transform (compression, encryption, checksums).

    ``name`` and ``version`` are recorded with every object written with
    it, with the ``params`` :meth:`for_writing` returns (levels, key ids,
    wrapped keys: never a secret in the clear) and the ``distribution`` to
    install to read it back, so a reader picks the decoder from the object
    alone.

    ``object_id`` is the object's own random id (16 bytes, recorded in its
    chunk table): a transform that checks chunks (a checksum, an AEAD)
    covers it along with the index, so a chunk copied from another object
    fails to decode. ``for_reading`` gets the ``version`` the object was
    written with, so a transform that changed its chunk format still reads
    the old one, and ``object_id=None`` for an object written before
    objects had ids (raise :class:`~offload_core.errors.FormatError` if that
    version needs one). Example::

        def for_writing(self, *, object_id):
            return ChecksumCodec(binding=object_id), {}

        def for_reading(self, params, *, version, object_id):
            return ChecksumCodec(binding=b"" if version < 2 else object_id)
    """

    name: str
    version: int
    distribution: str

    def for_writing(self, *, object_id: bytes) -> tuple[ChunkCodec, Mapping[str, str]]: ...

    def for_reading(self, params: Mapping[str, str], *, version: int, object_id: bytes | None) -> ChunkCodec: ...


class TransformRegistrar(Protocol):
    """What ``offload_core_register_transforms`` receives as ``register``."""

    def __call__(self, transform: Transform) -> None: ...


class MetricsServer(Protocol):
    """What ``offload_core_serve_metrics`` returns: where the metrics are
    served, and how to stop serving them."""

    url: str

    def close(self) -> None: ...


class LeftoverSource(Protocol):
    """Files a writer keeps outside a store's object namespace and may
    leave behind when it is killed. Every storage driver is one (see
    :meth:`~offload_core.storage.StorageDriver.list_temporaries` for the
    contract); a plugin whose writer keeps files of its own adds one
    through ``offload_core_leftover_sources``."""

    def list_temporaries(self) -> Iterable[Temporary]: ...

    def remove_temporaries(self, temporaries: Iterable[Temporary], *, dry_run: bool = False) -> Sequence[Temporary]: ...


@dataclass(frozen=True)
class Event:
    """Something observable happened: ``kind`` says what (for example
    ``"storage.request"``, ``"offload.finished"``), ``fields`` the numbers
    and names that go with it (``op``, ``key``, ``bytes`` ...)."""

    kind: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@hookspec
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    """Register :class:`~offload_core.storage.StorageDriver` classes.

    ``name`` is the canonical name, ``aliases`` other names it answers to
    (Pulsar's driver names, matched case-insensitively), ``schemes`` the URL
    schemes it opens (``open_driver("s3://bucket/prefix")``). A name, alias
    or scheme taken by two plugins is an error naming both.

    Example::

        @hookimpl
        def offload_core_register_drivers(register):
            register(S3Driver, name="s3", aliases=("aws-s3", "S3"), schemes=("s3",))
    """


@hookspec
def offload_core_register_offloaders(register: OffloaderRegistrar) -> None:
    """Register ``LedgerOffloader`` factories under a name, with the
    storage-driver names they serve. A broker whose
    ``managedLedgerOffloadDriver`` is one of those names offloads through
    that offloader; a name two plugins claim is an error naming both.

    Example::

        @hookimpl
        def offload_core_register_offloaders(register):
            register(PackedLedgerOffloader, name="packed", drivers=("sqlite",), stored=(PACKED_LEDGERS,))
    """


@hookspec
def offload_core_register_transforms(register: TransformRegistrar) -> None:
    """Register block transforms; readers find them by the name recorded in
    object metadata.

    Example::

        @hookimpl
        def offload_core_register_transforms(register):
            register(ZstdTransform(level=3))
    """


@hookspec
def offload_core_leftover_sources(driver: StorageDriver) -> Sequence[LeftoverSource] | None:
    """Sources of the temporary files your plugin's own writers leave in
    ``driver``'s store beside the driver's own (those of a Hadoop MapFile
    writer, say), so that ``offload ledgers sweep``, the broker's
    maintenance and the re-runs of killed commands sweep them by the same
    rule (:mod:`offload_core.leftovers`). List each file with ``held``
    (a live writer has it) and ``owner_dead`` (its run has provably ended)
    as your writer knows them; remove only what is still a leftover. Return
    nothing for a store your writers do not use.

    Example::

        @hookimpl
        def offload_core_leftover_sources(driver):
            if driver.name == "hdfs":
                return [MapFileTemporaries(driver)]
    """


@hookspec
def offload_core_on_event(event: Event) -> None:
    """Observe an :class:`Event` (offload started/finished, storage requests,
    bytes moved). Called synchronously: keep it cheap and never raise.

    Example::

        @hookimpl
        def offload_core_on_event(event):
            if event.kind == "storage.request":
                REQUESTS.labels(event.fields["op"]).inc()
    """


@hookspec(firstresult=True)
def offload_core_serve_metrics(host: str, port: int) -> MetricsServer | None:
    """Serve this process's metrics over HTTP on ``host:port`` (port 0: any
    free port) and return the running server; the first plugin that does
    wins. Raise :class:`~offload_core.errors.ConfigError` when the port
    cannot be bound.

    Example::

        @hookimpl
        def offload_core_serve_metrics(host, port):
            return start_server(REGISTRY, host, port)
    """
