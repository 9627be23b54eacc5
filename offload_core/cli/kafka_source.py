"""What the ``offload kafka`` verbs share: their options, and the store of
remote segments they name, in either object layout: ours (what ``offload
kafka copy`` writes) or Aiven's tiered-storage plugin's (what a broker
running it tiered), from a URL or from the broker's own properties file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..errors import ConfigError
from ..formats.kafka_codecs import DEFAULT_DECOMPRESSED_LIMIT
from ..plugins import default_plugin_manager, open_driver
from ..read_transforms import with_read_transforms
from .options import driver_options, parse_driver_options

# The stores, their layouts and their crypto load when a verb opens one
# (open_store), not to parse its arguments or print its help.
if TYPE_CHECKING:
    from ..rsm.aiven.storage import AivenRemoteStorage
    from ..rsm.storage_manager import RemoteStorageManager
    from ..rsm.types import TopicIdPartition, TopicPartition

F = TypeVar("F", bound=Callable[..., Any])

AIVEN = "aiven"
OURS = "ours"

prefix_option = click.option(
    "--prefix",
    default=None,
    help="Key prefix the segments live under in the store (default: the config's key.prefix, else none).",
)
decompressed_option = click.option(
    "--max-decompressed-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_DECOMPRESSED_LIMIT,
    show_default=True,
    help="Refuse a batch whose records decompress to more than this (a guard against damaged or hostile batches).",
)
topic_id_option = click.option(
    "--topic-id",
    default=None,
    help="Topic id (Kafka Uuid, or 'unknown' for segments copied before topic ids were kept): needed when the "
    "name has several in the store, a topic deleted and recreated.",
)
metadata_option = click.option(
    "--metadata",
    "metadata_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="SQLite file of a remote log metadata manager to record segment states in.",
)


def store_options(command: F) -> F:
    """``--layout``, ``--config``, ``--prefix`` and ``-o``: which store, and
    in which object layout, the verb reads."""
    command = click.option(
        "--layout",
        type=click.Choice([OURS, AIVEN]),
        default=OURS,
        show_default=True,
        help="Object layout: ours (written by `offload kafka copy`) or aiven (Aiven's tiered-storage plugin).",
    )(command)
    command = click.option(
        "--config",
        "config_path",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="The broker's properties file (server.properties): its rsm.config.* keys give the store, key prefix "
        "and (aiven) the encryption key pairs; then URL may be omitted.",
    )(command)
    return driver_options(prefix_option(command))


def topic_partition_of(text: str) -> TopicPartition:
    from ..rsm.types import TopicPartition

    try:
        return TopicPartition.parse(text)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="TOPIC-PARTITION") from None


def shift_url(config_path: Path | None, url: str | None, *rest: str | None) -> tuple[str | None, ...]:
    """The positional arguments as (URL, the rest...): with ``--config``
    the URL may be left out, and then what was read as URL is the next
    argument (a URL is told by its ``://``)."""
    if url is not None and "://" not in url and config_path is not None:
        return (None, url, *rest[:-1]) if rest else (None,)
    return (url, *rest)


@dataclass
class KafkaStore:
    """The store a verb reads: its segments (our layout's
    :class:`RemoteStorageManager` or an :class:`AivenRemoteStorage`), the
    key prefix, and where it is, for messages."""

    layout: str
    segments: RemoteStorageManager | AivenRemoteStorage
    prefix: str
    where: str

    def resolve(self, text: str, topic_id: str | None) -> TopicIdPartition:
        """The partition TOPIC-PARTITION (and --topic-id) name in the store."""
        from ..rsm.aiven.storage import AivenRemoteStorage
        from ..rsm.remote_log import resolve_partition

        topic_partition = topic_partition_of(text)
        if isinstance(self.segments, AivenRemoteStorage):
            return self.segments.resolve(topic_partition, topic_id, option="--topic-id")
        return resolve_partition(self.segments.driver, self.prefix, topic_partition, topic_id, option="--topic-id")


def open_store(url: str | None, config_path: Path | None, layout: str, prefix: str | None,
               options: tuple[str, ...], *, metadata_path: Path | None = None,
               emit_events: bool = False) -> KafkaStore:  # fmt: skip
    """The store the verb's arguments name; in our layout with the metadata
    manager in ``metadata_path`` if given, and (``emit_events``) every
    request and segment deleted an event for metrics plugins. Raises
    :class:`ConfigError` when neither URL nor --config gives a store, or as
    the config's reader does. A URL given with --config replaces the
    config's store."""
    from ..rsm.aiven.config import load_config, read_properties, rsm_properties
    from ..rsm.aiven.storage import AivenRemoteStorage
    from ..rsm.metadata_manager import RemoteLogMetadataManager
    from ..rsm.settings import parse_settings
    from ..rsm.storage_manager import RemoteStorageManager

    driver_settings = parse_driver_options(options)
    if layout == AIVEN:
        if metadata_path is not None:
            raise ConfigError("--metadata is for our layout: the aiven layout has no metadata manager of ours")
        config = load_config(config_path) if config_path is not None else None
        if url is None and config is None:
            raise ConfigError("give the store's URL, or the broker's properties file with --config")
        keys = config.private_keys if config is not None else {}
        if url is None and config is not None:
            url, driver_settings = config.url, {**config.driver_options, **driver_settings}
        prefix = prefix if prefix is not None else config.key_prefix if config is not None else ""
        assert url is not None
        driver = _driver(url, driver_settings)
        return KafkaStore(layout, AivenRemoteStorage(driver, prefix=prefix, private_keys=keys), prefix, url)
    if config_path is not None:
        settings = parse_settings(rsm_properties(read_properties(config_path)))
        if url is None:
            url, driver_settings = settings.url, {**settings.driver_options, **driver_settings}
        prefix = settings.prefix if prefix is None else prefix
    if url is None:
        raise ConfigError("give the store's URL, or the broker's properties file with --config")
    prefix = prefix or ""
    # Objects written through chunk transforms read as they were written (a
    # stat per object, once); -o transforms=... chooses otherwise (none: the bare driver).
    driver = _driver(url, with_read_transforms(driver_settings))
    rlmm = RemoteLogMetadataManager(metadata_path) if metadata_path is not None else None
    emit = default_plugin_manager().emit if emit_events else None
    rsm = RemoteStorageManager(driver, prefix=prefix, metadata_manager=rlmm, emit=emit)
    return KafkaStore(layout, rsm, prefix, url)


def _driver(url: str, options: dict[str, Any]) -> Any:
    # These verbs only read (or delete what is there): a local root that does not exist is an error, never created.
    if url.lower().startswith("file://"):
        options.setdefault("create", False)
    return open_driver(url, **options)
