"""Offload policies at three levels: broker default -> namespace -> topic.

The most specific level that sets a field wins. Namespace and topic
policies live in the metadata store, updated with compare-and-set.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError, OffloadError
from ...formats import pulsar_v1 as v1
from ...hooks import Transform
from ...memory import MemoryDriver
from ...transforming_driver import with_transforms
from ..metadata_store import MetadataStore
from .filesystem_offload import check_offload_driver

__all__ = ["MIN_BLOCK_SIZE", "OffloadPolicies", "PolicyStore", "ReadPriority", "TopicName", "validate_policies"]

#: The smallest max block size an offload can write with: one block header
#: and one entry header (what the offloaders and the block grouper refuse below).
MIN_BLOCK_SIZE = v1.BLOCK_HEADER_LENGTH + v1.ENTRY_HEADER_LENGTH


class ReadPriority(enum.Enum):
    """Which tier serves a ledger that is in both (BOOKKEEPER is the hot tier).

    ``*_FIRST`` falls back to the other tier on any failure; ``*_ONLY``
    never reads the other tier, and raises instead."""

    BOOKKEEPER_ONLY = "bookkeeper-only"
    BOOKKEEPER_FIRST = "bookkeeper-first"
    OFFLOADED_ONLY = "offloaded-only"
    OFFLOADED_FIRST = "offloaded-first"

    @classmethod
    def parse(cls, value: str | ReadPriority) -> ReadPriority:
        """Accepts the enum names (any case, ``-`` or ``_``) and Pulsar's
        ``bookkeeper-first`` / ``tiered-storage-first``."""
        if isinstance(value, ReadPriority):
            return value
        text = str(value).strip().lower().replace("_", "-")
        aliases = {"tiered-storage-first": cls.OFFLOADED_FIRST, "tiered-storage-only": cls.OFFLOADED_ONLY}
        if text in aliases:
            return aliases[text]
        try:
            return cls(text)
        except ValueError:
            choices = ", ".join(p.name for p in cls) + ", bookkeeper-first, tiered-storage-first"
            raise ConfigError(f"read priority {value!r} is not one of: {choices}") from None


@dataclass(frozen=True)
class OffloadPolicies:
    """Offload settings; ``None`` means "not set at this level"."""

    read_priority: ReadPriority | None = None
    offload_threshold_bytes: int | None = None
    offload_threshold_seconds: int | None = None
    deletion_lag_ms: int | None = None
    driver: str | None = None
    bucket: str | None = None
    endpoint: str | None = None
    region: str | None = None
    max_block_size: int | None = None
    read_buffer_size: int | None = None
    retention_time_minutes: int | None = None
    retention_size_mb: int | None = None
    streaming_enabled: bool | None = None
    segment_max_size_mb: int | None = None
    segment_rollover_minutes: int | None = None
    streaming_buffer_bytes: int | None = None
    transforms: str | None = None  # comma-separated chunk transforms, in order ("" for none)
    transform_chunk_size: int | None = None
    file_system_uri: str | None = None  # fileSystemURI, for the "filesystem" (Hadoop MapFile) offloader
    file_system_profile_path: str | None = None  # fileSystemProfilePath: its Hadoop XML profile(s)

    def over(self, base: OffloadPolicies) -> OffloadPolicies:
        """These policies, falling back to ``base`` for fields not set here."""
        return OffloadPolicies(
            **{
                f.name: getattr(base, f.name) if getattr(self, f.name) is None else getattr(self, f.name)
                for f in dataclasses.fields(self)
            }
        )

    def replace(self, **changes: Any) -> OffloadPolicies:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> bytes:
        values = {
            f.name: (value.value if isinstance(value, ReadPriority) else value)
            for f in dataclasses.fields(self)
            if (value := getattr(self, f.name)) is not None
        }
        return json.dumps(values, sort_keys=True).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> OffloadPolicies:
        """Policies as stored; :class:`ConfigError` for a damaged record."""
        try:
            values = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"a stored policy record is not JSON ({exc}): the metadata store is damaged; remove the policy "
                "with the remove-* verbs and set it again, or restore metadata.db from a backup"
            ) from None
        if not isinstance(values, dict):
            raise ConfigError("a stored policy record is not a JSON object: the metadata store is damaged")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ConfigError(f"stored policies have unknown fields {sorted(unknown)}; written by a newer version?")
        if "read_priority" in values:
            values["read_priority"] = ReadPriority.parse(values["read_priority"])
        return cls(**values)


def validate_policies(policies: OffloadPolicies, *, transform: Callable[..., Transform] | None = None) -> None:
    """Raise :class:`ConfigError` if data would be deleted by retention
    before the offload thresholds would offload it, or a value is out of
    range (a max block size below :data:`MIN_BLOCK_SIZE` included).

    The one check of policies, for the config file and the policy verbs
    alike. With ``transform`` (:meth:`PluginManager.transform`), the chain
    of chunk transforms is resolved as an offload would resolve it, so an
    unknown transform name or option is refused here and not at the first
    offload; without it the chain is not checked."""
    for name in ("max_block_size", "read_buffer_size", "segment_max_size_mb", "segment_rollover_minutes",
                 "streaming_buffer_bytes", "transform_chunk_size"):  # fmt: skip
        value = getattr(policies, name)
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be positive, got {value}")
    if policies.max_block_size is not None and policies.max_block_size < MIN_BLOCK_SIZE:
        raise ConfigError(
            f"managedLedgerOffloadMaxBlockSizeInBytes (max block size) is {policies.max_block_size} bytes, too small "
            f"for a block header and one entry: at least {MIN_BLOCK_SIZE}; raise it (Pulsar's default is 64 MiB)"
        )
    _validate_streaming(policies)
    check_offload_driver(policies.driver, bucket=policies.bucket, uri=policies.file_system_uri,
                         profile=policies.file_system_profile_path, streaming=policies.streaming_enabled)  # fmt: skip
    if transform is not None and policies.transforms:
        _validate_transforms(policies.transforms, policies.transform_chunk_size, transform)
    if policies.deletion_lag_ms is not None and policies.deletion_lag_ms < 0:
        raise ConfigError(f"managedLedgerOffloadDeletionLagMs must not be negative, got {policies.deletion_lag_ms}")
    size, retention_mb = policies.offload_threshold_bytes, policies.retention_size_mb
    if size is not None and size >= 0 and retention_mb is not None and retention_mb >= 0 and size >= retention_mb << 20:
        raise ConfigError(
            f"managedLedgerOffloadThresholdInBytes ({size}) must be below the retention size "
            f"({retention_mb} MB): data would be deleted before it is offloaded; lower the threshold or raise "
            "defaultRetentionSizeInMB (-1 keeps data forever)"
        )
    seconds, retention_min = policies.offload_threshold_seconds, policies.retention_time_minutes
    if (
        seconds is not None
        and seconds >= 0
        and retention_min is not None
        and retention_min >= 0
        and seconds >= retention_min * 60
    ):
        raise ConfigError(
            f"managedLedgerOffloadThresholdInSeconds ({seconds}) must be below the retention time "
            f"({retention_min} min): data would be deleted before it is offloaded; lower the threshold or raise "
            "defaultRetentionTimeInMinutes (-1 keeps data forever)"
        )


def _validate_transforms(chain: str, chunk_size: int | None, transform: Callable[..., Transform]) -> None:
    """The chain resolved by the code an offload opens its store with (on
    a throwaway in-memory store), so that the names and options accepted
    here are exactly those an offload accepts."""
    try:
        with_transforms(MemoryDriver(), chain, chunk_size, transform)
    except OffloadError as exc:
        raise ConfigError(f"managedLedgerOffloadTransforms = {chain!r}: {exc}") from None


def _validate_streaming(policies: OffloadPolicies) -> None:
    """A segment must hold a block, and the streaming buffer two."""
    block = policies.max_block_size
    if block is None:
        return
    if policies.segment_max_size_mb is not None and policies.segment_max_size_mb << 20 < block:
        raise ConfigError(
            f"maxSizePerOffloadSegmentMbytes ({policies.segment_max_size_mb}) is below one block "
            f"(managedLedgerOffloadMaxBlockSizeInBytes = {block}); raise it"
        )
    if policies.streaming_buffer_bytes is not None and policies.streaming_buffer_bytes < 2 * block:
        raise ConfigError(
            f"managedLedgerOffloadStreamingBufferSizeInBytes ({policies.streaming_buffer_bytes}) must hold two "
            f"blocks (2 x managedLedgerOffloadMaxBlockSizeInBytes = {2 * block}); raise it"
        )


@dataclass(frozen=True, order=True)
class TopicName:
    """``tenant/namespace/topic`` (``persistent://`` accepted in front)."""

    tenant: str
    namespace_part: str
    local: str

    @classmethod
    def parse(cls, text: str) -> TopicName:
        """Parse ``tenant/namespace/topic``. Each part is Pulsar's ASCII
        ``[-=:.\\w]`` (letters, digits, ``_ - = : .``; not ``.`` or ``..``)
        and the whole is at most :data:`MAX_NAME_LENGTH` characters; raises
        :class:`ConfigError` naming the rule otherwise."""
        body = _check_length("topic", text.removeprefix("persistent://"))
        parts = body.split("/")
        if len(parts) != 3 or not all(_valid_name(part) for part in parts):
            raise ConfigError(
                f"topic {text!r} is not tenant/namespace/topic, each part of ASCII letters, digits, "
                "'-', '_', '.', '=' and ':'"
            )
        return cls(*parts)

    @property
    def namespace(self) -> str:
        return f"{self.tenant}/{self.namespace_part}"

    @property
    def managed_ledger_name(self) -> str:
        """Pulsar's name for the topic's managed ledger."""
        return f"{self.tenant}/{self.namespace_part}/persistent/{self.local}"

    def __str__(self) -> str:
        return f"{self.tenant}/{self.namespace_part}/{self.local}"


def parse_namespace(text: str) -> str:
    """``tenant/namespace``, with :meth:`TopicName.parse`'s rules for each
    part; :class:`ConfigError` otherwise."""
    parts = _check_length("namespace", text).split("/")
    if len(parts) != 2 or not all(_valid_name(part) for part in parts):
        raise ConfigError(
            f"namespace {text!r} is not tenant/namespace, each part of ASCII letters, digits, "
            "'-', '_', '.', '=' and ':'"
        )
    return text


MAX_NAME_LENGTH = 200
"""Longest ``tenant/namespace/topic`` (or namespace) name, in characters
(names are ASCII, so also bytes). A topic's name becomes file names under
the data directory (its lock file), which file systems cap at 255 bytes."""

_NAME_PART = re.compile(r"[-=:.\w]+", re.ASCII)


def _check_length(what: str, text: str) -> str:
    if len(text) > MAX_NAME_LENGTH:
        raise ConfigError(
            f"{what} name {text[:40]!r}... is {len(text)} characters; the limit is {MAX_NAME_LENGTH}: "
            "use a shorter name"
        )
    return text


def _valid_name(part: str) -> bool:
    return part not in (".", "..") and _NAME_PART.fullmatch(part) is not None


_AREA = "policies"  # the first component of every policy record's path


class PolicyStore:
    """Namespace and topic policies in the metadata store. ``transform``
    (:meth:`PluginManager.transform`) resolves the chunk transforms an
    update names; without it they are not checked."""

    def __init__(
        self,
        store: MetadataStore,
        broker_defaults: OffloadPolicies,
        *,
        transform: Callable[..., Transform] | None = None,
    ) -> None:
        self._store = store
        self.broker_defaults = broker_defaults
        self._transform = transform  # resolves chunk transforms for validate_policies
        # Effective policies by topic, valid while the store's change marker
        # is unchanged (a store without one is read every time).
        self._effective: dict[TopicName, tuple[object, OffloadPolicies]] = {}

    @staticmethod
    def _path(level: str, name: str) -> str:
        """The record of ``name`` at ``level``, under one spelling of the
        name (a topic's without ``persistent://``, as :meth:`effective` and
        :meth:`sources` read it), so that either spelling finds the policies
        set with the other."""
        key = str(TopicName.parse(name)) if level == "topic" else parse_namespace(name)
        return f"{_AREA}/{level}/{key}"

    def get(self, level: str, name: str) -> OffloadPolicies:
        """The policies set at ``level`` (``namespace`` or ``topic``) for
        ``name`` (a topic with or without ``persistent://``); raises
        :class:`ConfigError` for a name :meth:`TopicName.parse` or
        :func:`parse_namespace` refuses."""
        return self._read(self._path(level, name))

    def _read(self, path: str) -> OffloadPolicies:
        record = self._store.get(path)
        return OffloadPolicies() if record is None else OffloadPolicies.from_json(record.value)

    def update(self, level: str, name: str, **changes: Any) -> OffloadPolicies:
        """Set (or, with ``None``, unset) fields at one level; compare-and-set.

        ``name`` is read as :meth:`get` reads it. Raises
        :class:`ConflictError` if another writer changed the record in
        between, :class:`ConfigError` if the name or the result would be
        invalid."""
        path = self._path(level, name)
        record = self._store.get(path)
        current = OffloadPolicies() if record is None else OffloadPolicies.from_json(record.value)
        updated = current.replace(**changes)
        if level == "topic":
            topic = TopicName.parse(name)
            merged = updated.over(self.get("namespace", topic.namespace)).over(self.broker_defaults)
        else:
            merged = updated.over(self.broker_defaults)
        validate_policies(merged, transform=self._transform)
        if record is None:
            self._store.create(path, updated.to_json())
        else:
            self._store.set(path, updated.to_json(), record.version)
        return updated

    def sources(self, level: str, name: str) -> dict[str, tuple[Any, str]]:
        """Every field's effective value for the topic or namespace ``name``
        and the level it comes from (``topic``, ``namespace`` or
        ``broker``)."""
        levels: list[tuple[str, OffloadPolicies]] = []
        if level == "topic":
            topic = TopicName.parse(name)
            levels += [("topic", self.get("topic", str(topic))), ("namespace", self.get("namespace", topic.namespace))]
        else:
            levels.append(("namespace", self.get("namespace", parse_namespace(name))))
        levels.append(("broker", self.broker_defaults))
        found: dict[str, tuple[Any, str]] = {}
        for field in dataclasses.fields(OffloadPolicies):
            found[field.name] = next(
                ((getattr(policies, field.name), where) for where, policies in levels
                 if getattr(policies, field.name) is not None),
                (None, "broker"),
            )  # fmt: skip
        return found

    def effective(self, topic: TopicName) -> OffloadPolicies:
        """Topic over namespace over broker defaults. Cached until a policy
        record may have changed (set in this process, or any record written
        by another one), so a read does not query the store each time, nor
        does the next after a ledger's own metadata update."""
        marker_of = getattr(self._store, "change_marker", None)
        marker = marker_of(_AREA) if marker_of is not None else None
        cached = self._effective.get(topic)
        if marker is not None and cached is not None and cached[0] == marker:
            return cached[1]
        # Read under the name as given, not parsed again: a topic named before names had to be ASCII and at
        # most MAX_NAME_LENGTH long (Broker.topics() returns those) still gets its namespace's and the broker's.
        policies = (self._read(f"{_AREA}/topic/{topic}").over(self._read(f"{_AREA}/namespace/{topic.namespace}"))
                    .over(self.broker_defaults))  # fmt: skip
        if marker is not None:
            self._effective[topic] = (marker, policies)
        return policies
