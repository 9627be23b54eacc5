"""``offload topics produce``: append random entries, or real Pulsar
messages read from a file or standard input."""

from __future__ import annotations

import json
import random
import time
from typing import Any, BinaryIO

import click

from ..hooks import Event, hookimpl
from ..model import Position
from .broker_options import broker_options, opened
from .message_input import FORMATS, message_entry, parse_line

__all__ = ["produce"]


@click.command()
@click.argument("topic")
@click.option("--count", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Random messages to append (without --input).")  # fmt: skip
@click.option(
    "--size", type=click.IntRange(min=0, max=64 << 20), default=256, show_default=True,
    help="Bytes per random message (at most 64 MiB).",
)  # fmt: skip
@click.option("--seed", type=int, default=0, help="Seed for the random message bodies.")
@click.option("--input", "source", type=click.File("rb"), default=None,
              help="Read messages from FILE ('-': standard input), one per line, instead of random bytes.")  # fmt: skip
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="lines",
    show_default=True,
    help="lines: a line's text is a value; jsonl: key, value or value_b64, properties, event_time.",
)
@click.option("--producer-name", default="offload-cli", show_default=True, help="Producer name in each message.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per ledger sealed, then a summary.")
@broker_options
def produce(
    topic: str,
    count: int,
    size: int,
    seed: int,
    source: BinaryIO | None,
    fmt: str,
    producer_name: str,
    as_json: bool,
    data_dir: str,
    config_path: str | None,
) -> None:
    """Append messages to TOPIC: COUNT random entries of SIZE bytes, or,
    with --input, real Pulsar messages read from a file or standard input.

    A malformed input line stops the run with an error naming the line:
    every message before it is appended, none after it."""
    with opened(data_dir, config_path) as broker:
        broker.plugins.register(_SealProgress(as_json))
        ledger = broker.topic(topic)
        if source is not None:
            _produce_input(ledger, source, fmt, producer_name, as_json)
            return
        rng = random.Random(seed)
        first = last = None
        for _ in range(count):
            last = ledger.append(rng.randbytes(size))
            first = first or last
        _report_appended(count, first, last, as_json)


def _report_appended(appended: int, first: Position | None, last: Position | None, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"appended": appended, "first": str(first) if first else None,
                               "last": str(last) if last else None}))  # fmt: skip
    elif appended:
        click.echo(f"appended {appended} messages: {first} .. {last}")
    else:
        click.echo("appended no messages")


class _SealProgress:
    """One line per ledger sealed while producing."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    @hookimpl
    def offload_core_on_event(self, event: Event) -> None:
        if event.kind != "ledger.sealed":
            return
        ledger_id, entries = event.fields["ledger_id"], event.fields["entries"]
        if self.as_json:
            click.echo(json.dumps({"ledger_id": ledger_id, "entries": entries, "sealed": True}))
        else:
            click.echo(f"  sealed ledger {ledger_id} ({entries} entries)", err=True)


def _produce_input(ledger: Any, source: BinaryIO, fmt: str, producer_name: str, as_json: bool) -> None:
    first = last = None
    appended = 0
    try:
        for number, line in enumerate(source, start=1):
            if fmt == "jsonl" and (not line or line.isspace()):
                continue  # blank lines between JSON objects are no messages
            # The line is read in binary and its value is a view of it: the
            # entry (copied once, by its framing) and the line are all a
            # large line costs, and both are let go before the next is read.
            entry = message_entry(parse_line(line, fmt=fmt, number=number), producer_name=producer_name,
                                  sequence_id=appended, publish_time_ms=int(time.time() * 1000))  # fmt: skip
            del line
            last = ledger.append(entry)
            del entry
            first = first or last
            appended += 1
    finally:
        _report_appended(appended, first, last, as_json)
