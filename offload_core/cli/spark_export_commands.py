"""``offload spark export ...``: offloaded topics appended to Iceberg tables
(``pip install -e '.[iceberg]'`` in a clone)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import ConfigError
from .kafka_source import AIVEN, shift_url
from .options import driver_options, parse_driver_options
from .spark_session import master_option, spark_session

__all__ = ["export"]

F = TypeVar("F", bound=Callable[..., Any])


def _export_options(command: F) -> F:
    for option in reversed([
        click.option("--table", required=True, help="The Iceberg table, NAMESPACE.TABLE (created if missing)."),
        click.option("--catalog", "catalog_pairs", multiple=True, metavar="KEY=VALUE",
                     help="pyiceberg catalog property (repeatable), e.g. --catalog type=rest --catalog "
                          "uri=http://catalog:8181; default: a SQL catalog on SQLite at DIR/iceberg/catalog.db, "
                          "its warehouse at DIR/iceberg/warehouse."),
        click.option("--stale-after", type=click.FloatRange(min=0), default=3600.0, show_default=True,
                     help="Seconds after which a run that never finished counts as killed: its files are removed."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON summary object."),
        master_option,
    ]):  # fmt: skip
        command = option(command)
    return command


def _catalog(pairs: tuple[str, ...]) -> dict[str, str] | None:
    if not pairs:
        return None
    properties = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--catalog")
        properties[key] = value
    return properties


def _jobs() -> Any:
    try:
        from ..spark import export as jobs
    except ImportError as exc:
        raise ConfigError(
            f"offload spark export needs pyiceberg ({exc}): pip install -e '.[iceberg]' in a clone of offload-core"
        ) from None
    return jobs


def _report(result: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.as_json()))
        return
    for run_id in result.swept_runs:
        click.echo(f"removed the files of export run {run_id}, which never finished", err=True)
    if result.snapshot_id is None:
        click.echo(f"{result.table}: nothing tiered since the last export; no snapshot committed")
        return
    click.echo(f"{result.table}: {result.rows_added} row(s) in {result.data_files} data file(s), "
               f"snapshot {result.snapshot_id}")  # fmt: skip
    for (topic, partition), position in sorted(result.watermarks.items()):
        click.echo(f"  {topic} partition {partition}: exported to {':'.join(map(str, position))}")
    for topic, ids in sorted(result.replaced_topic_ids.items()):
        click.echo(f"  {topic}: the table also holds rows of earlier incarnations of the topic (deleted and "
                   f"recreated), topic id(s) {', '.join(ids)}")  # fmt: skip


@click.group()
def export() -> None:
    """Append offloaded topics to Iceberg tables, from where the last export stopped."""


@export.command()
@click.argument("topic")
@click.option("--data-dir", type=click.Path(file_okay=False), default="./offload-data", show_default=True,
              help="The broker's data directory (its metadata says what is offloaded, and where).")  # fmt: skip
@_export_options
def pulsar(topic: str, data_dir: str, table: str, catalog_pairs: tuple[str, ...], stale_after: float, as_json: bool,
           master: str | None) -> None:  # fmt: skip
    """Append TOPIC's offloaded ledgers and segments (each -partition-N of a
    partitioned topic) to an Iceberg table: one row per Pulsar message,
    batches split, partitioned by day of publish time and by partition.

    Only what was tiered since the table's last export is read; the rows
    are committed in one snapshot, or not at all."""
    jobs = _jobs()
    result = jobs.export_pulsar(spark_session(master), data_dir, topic, table, catalog=_catalog(catalog_pairs),
                                stale_after=stale_after)  # fmt: skip
    _report(result, as_json)


@export.command()
@click.argument("url", required=False)
@click.argument("topic", required=False)
@click.option(
    "--prefix",
    default=None,
    help="Key prefix the segments live under in the store (default: the config's key.prefix, else none).",
)
@click.option("--topic-id", default=None, help="Topic id, when the name has several in the store.")
@click.option("--layout", default=None, help="The store's layout, as the other Kafka verbs take it (e.g. aiven).")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="With --layout aiven: the broker's properties file, whose rsm.config.* keys give the store, key "
                   "prefix and key pairs; then URL may be omitted.")  # fmt: skip
@click.option("--data-dir", type=click.Path(file_okay=False), default="./offload-data", show_default=True,
              help="Where the default catalog lives.")  # fmt: skip
@driver_options
@_export_options
def kafka(url: str | None, topic: str | None, prefix: str | None, topic_id: str | None, layout: str | None,
          config_path: str | None, data_dir: str, options: tuple[str, ...], table: str, catalog_pairs: tuple[str, ...],
          stale_after: float, as_json: bool, master: str | None) -> None:  # fmt: skip
    """Append the records of Kafka topic TOPIC tiered under URL to an
    Iceberg table, in Spark's Kafka source schema, partitioned by day of
    the record's timestamp and by partition. With --layout aiven and
    --config, URL may be left out: the config names the store.

    Only what was tiered since the table's last export is read; the rows
    are committed in one snapshot, or not at all."""
    url, topic = shift_url(Path(config_path) if config_path else None, url, topic)
    if topic is None:
        raise click.UsageError("Missing argument 'TOPIC'.")
    if url is None and (layout != AIVEN or config_path is None):
        raise click.UsageError("give the store's URL (only --layout aiven takes it from --config)")
    source = {f"driver.{k}": str(v) for k, v in parse_driver_options(options).items()}
    for name, value in (("prefix", prefix), ("topicId", topic_id), ("layout", layout), ("config", config_path)):
        if value is not None:
            source[name] = str(Path(value).resolve()) if name == "config" else value
    jobs = _jobs()
    result = jobs.export_kafka(spark_session(master), url, topic, table, options=source,
                               catalog=_catalog(catalog_pairs), data_dir=data_dir, stale_after=stale_after)  # fmt: skip
    _report(result, as_json)
