"""Entries to the ``pulsar-offload`` rows: decoded Pulsar messages or raw entries.

Rows are plain tuples in schema order with times in epoch milliseconds;
:func:`spark_tuple` and :func:`arrow_batch` turn them into what Spark takes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import FormatError
from ..formats.pulsar_message import decode_entry
from .read_options import Decode

__all__ = ["COLUMNS", "MessageRow", "arrow_batch", "entry_rows", "spark_tuple"]

COLUMNS = (
    "ledger_id",
    "entry_id",
    "batch_index",
    "payload",
    "publish_time",
    "event_time",
    "key",
    "properties",
    "producer_name",
    "sequence_id",
)

# ledger_id, entry_id, batch_index, payload, publish_time ms, event_time ms, key, properties, producer, sequence id
MessageRow = tuple[
    int,
    int,
    int | None,
    bytes | None,
    int | None,
    int | None,
    str | None,
    dict[str, str] | None,
    str | None,
    int | None,
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def entry_rows(ledger_id: int, entry_id: int, entry: bytes, decode: Decode) -> Iterator[MessageRow]:
    """The rows of one entry. Raises :class:`FormatError` naming the entry
    when ``decode`` is PULSAR and the entry is not a Pulsar message."""
    if decode is not Decode.NONE:
        try:
            messages = decode_entry(entry)
        except FormatError as exc:
            if decode is Decode.PULSAR:
                raise FormatError(f"ledger {ledger_id} entry {entry_id} is not a Pulsar message: {exc}") from None
        else:
            for message in messages:
                yield (
                    ledger_id, entry_id, message.batch_index, message.payload, message.publish_time,
                    message.event_time, message.key, dict(message.properties), message.producer_name,
                    message.sequence_id,
                )  # fmt: skip
            return
    yield (ledger_id, entry_id, None, entry, None, None, None, None, None, None)


def _timestamp(milliseconds: int | None) -> datetime | None:
    return None if milliseconds is None else _EPOCH + timedelta(milliseconds=milliseconds)


def spark_tuple(row: MessageRow) -> tuple[Any, ...]:
    """``row`` with its times as aware datetimes, as Spark's TimestampType takes them."""
    return (*row[:4], _timestamp(row[4]), _timestamp(row[5]), *row[6:])


def arrow_batch(rows: Sequence[MessageRow], schema: Any) -> Any:
    """``rows`` as one ``pyarrow.RecordBatch`` of the Arrow ``schema`` Spark
    expects (any subset of the source's columns, by name; times in
    microseconds, UTC). Only the columns ``schema`` names are built."""
    import pyarrow as pa

    columns: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [()] * len(COLUMNS)
    arrays = []
    for field in schema:
        values = columns[COLUMNS.index(field.name)]
        if field.name in ("publish_time", "event_time"):
            values = [None if ms is None else ms * 1000 for ms in values]
        elif field.name == "properties":
            values = [None if props is None else list(props.items()) for props in values]
        arrays.append(pa.array(values, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
