"""``offload topics ...`` and ``offload namespaces ...``: the embedded broker,
pulsar-admin style. Every verb takes ``--data-dir`` and ``--config``."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict
from typing import Any

import click

from ..errors import ConfigError, FormatError, mask_secret_text, mask_secrets
from ..formats.pulsar_message import PulsarMessage, decode_entry
from ..hooks import Event, hookimpl
from ..model import Entry, Position
from .broker_options import broker_options, opened, parse_position
from .options import READ_PRIORITIES, dry_run_footer, execute_option, metrics_port_option
from .produce_command import produce


@click.group()
def topics() -> None:
    """Topics of the embedded broker (one managed ledger each)."""


topics.add_command(produce)


@topics.command("list")
@click.option("--json", "as_json", is_flag=True, help='One {"topic": NAME} object per line.')
@broker_options
def list_topics(as_json: bool, data_dir: str, config_path: str | None) -> None:
    """Every topic in the data directory."""
    with opened(data_dir, config_path) as broker:
        names = [str(name) for name in sorted(broker.topics())]
    for name in names:
        click.echo(json.dumps({"topic": name}) if as_json else name)


@topics.command()
@click.argument("topic")
@click.option("--from", "start", default=None, help="First position L:E (default: the first entry).")
@click.option("--count", type=click.IntRange(min=0), default=10, show_default=True)
@click.option(
    "--priority",
    default=None,
    metavar="PRIORITY",
    help=f"Tiered read priority for this read, one of: {READ_PRIORITIES} "
    "(default: the topic's policy; tiered-storage-first unless one is set).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry.")
@broker_options
def consume(
    topic: str,
    start: str | None,
    count: int,
    priority: str | None,
    as_json: bool,
    data_dir: str,
    config_path: str | None,
) -> None:
    """Read COUNT entries of TOPIC from a position, showing the tier that
    served each. With --json, one object per entry: ledger_id, entry_id,
    tier, size, payload_b64, and for an entry that is a Pulsar message its
    key, properties, publish_time, event_time, producer_name, sequence_id
    and value_b64 (null for a null value); a batch gives them per message
    under "messages"."""
    with opened(data_dir, config_path) as broker:
        ledger = broker.topic(topic)
        states = ledger.ledgers()
        if not states:
            return
        position = parse_position(start) or Position(states[0].ledger_id, 0)
        for tiered in ledger.read_tiered(position, count, priority=priority):
            entry = tiered.entry
            if as_json:
                click.echo(json.dumps(_entry_record(entry, tiered.tier)))
            else:
                click.echo(f"{entry.ledger_id}:{entry.entry_id}\t{tiered.tier}\t{len(entry.data)} bytes")


def _entry_record(entry: Entry, tier: str) -> dict[str, Any]:
    record: dict[str, Any] = {
        "ledger_id": entry.ledger_id,
        "entry_id": entry.entry_id,
        "tier": tier,
        "size": len(entry.data),
        "payload_b64": base64.b64encode(entry.data).decode("ascii"),
    }
    try:
        messages = decode_entry(entry.data)
    except (FormatError, ConfigError):
        return record  # not a Pulsar message (or a codec not installed): the raw payload says it all
    fields = [_message_fields(message) for message in messages]
    if len(messages) == 1 and messages[0].batch_index is None:
        record.update(fields[0])
    elif messages:
        record["messages"] = [{"batch_index": m.batch_index, **f} for m, f in zip(messages, fields, strict=True)]
    return record


def _message_fields(message: PulsarMessage) -> dict[str, Any]:
    return {
        "key": message.key,
        "properties": dict(message.properties),
        "publish_time": message.publish_time,
        "event_time": message.event_time,
        "producer_name": message.producer_name,
        "sequence_id": message.sequence_id,
        "value_b64": None if message.payload is None else base64.b64encode(message.payload).decode("ascii"),
    }


class _OffloadProgress:
    """One line per ledger as its offload completes (JSON on stdout with
    --json, text on stderr otherwise)."""

    def __init__(self, due: dict[int, Any], as_json: bool) -> None:
        self.due = due
        self.as_json = as_json
        self.done = 0

    @hookimpl
    def offload_core_on_event(self, event: Event) -> None:
        if event.kind != "offload.lifecycle" or event.fields["step"] != "completed":
            return
        self.done += 1
        ledger_id = int(event.fields["ledger_id"])
        state = self.due.get(ledger_id)
        entries, size = (state.entries, state.size) if state is not None else (None, None)
        if self.as_json:
            click.echo(json.dumps({"ledger_id": ledger_id, "uuid": event.fields.get("uuid"), "entries": entries,
                                   "size": size, "offloaded": True}))  # fmt: skip
        else:
            done = f"[{self.done}/{len(self.due)}]"
            click.echo(f"  {done} offloaded ledger {ledger_id} ({entries} entries, {size} bytes)", err=True)


@topics.command("offload")
@click.argument("topic")
@click.option("--position", default=None, help="Offload sealed ledgers before this L:E (default: all sealed).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per ledger offloaded, then the status.")
@broker_options
@metrics_port_option
def offload_topic(topic: str, position: str | None, as_json: bool, data_dir: str, config_path: str | None) -> None:
    """Offload TOPIC's sealed ledgers before a position (the manual
    trigger), reporting each ledger as it completes."""
    until = parse_position(position)
    with opened(data_dir, config_path) as broker:
        ledger = broker.topic(topic)
        due = [
            s
            for s in ledger.ledgers()
            if s.sealed and s.tier in ("hot", "offloading") and (until is None or s.ledger_id < until.ledger_id)
        ]
        click.echo(f"offloading {len(due)} ledger(s) of {topic}", err=True)
        broker.plugins.register(_OffloadProgress({s.ledger_id: s for s in due}, as_json))
        status = ledger.offload_prefix(until)
        _print_status(status, as_json=as_json)
        if status.status == "error":
            raise SystemExit(1)


def _masked(error: str | None) -> str | None:
    """An error fit to print: it may quote a store's URL with its credentials."""
    return None if error is None else mask_secret_text(error)


def _status_values(status: Any) -> dict[str, Any]:
    values = asdict(status)
    values["first_unoffloaded"] = str(status.first_unoffloaded) if status.first_unoffloaded else None
    values["error"] = _masked(status.error)
    return values


def _print_status(status: Any, *, as_json: bool) -> None:
    values = _status_values(status)
    if as_json:
        click.echo(json.dumps(values))
        return
    click.echo(f"status: {values['status']}")
    click.echo(f"offloaded ledgers: {values['offloaded_ledgers']}")
    click.echo(f"first unoffloaded position: {values['first_unoffloaded'] or '-'}")
    if values["error"]:
        click.echo(f"error: {values['error']}")


@topics.command("offload-status")
@click.argument("topic")
@click.option("--json", "as_json", is_flag=True)
@broker_options
def offload_status(topic: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
    """The outcome of TOPIC's last offload run (``interrupted`` if the
    process running it died), and any unfinished offload left behind."""
    with opened(data_dir, config_path) as broker:
        ledger = broker.topic(topic)
        status = ledger.offload_status()
        unfinished = ledger.unfinished_offloads()
        shown = [
            asdict(u) | {"settings": mask_secrets(u.settings), "cleanup_error": _masked(u.cleanup_error)}
            for u in unfinished
        ]
        if as_json:
            click.echo(json.dumps(_status_values(status) | {"unfinished": shown}))
            return
        _print_status(status, as_json=False)
        for row in shown:
            click.echo(
                f"unfinished offload: ledger {row['ledger_id']}, uuid {row['uuid']}, "
                f"driver {row['settings'].get('driver', '?')}"
                + (f"; its cleanup failed: {row['cleanup_error']}" if row["cleanup_error"] else "")
            )
        if unfinished:
            click.echo(
                f"(cleaned up by the next offload or run-maintenance; or now: offload topics clear-offload {topic} "
                "--execute)"
            )


@topics.command("clear-offload")
@click.argument("topic")
@click.option("--ledger", "ledger_ids", type=int, multiple=True, help="Only this ledger (repeatable).")
@click.option(
    "--force",
    is_flag=True,
    help="Clear the record even if the objects cannot be deleted (the store is gone); prints the keys left behind.",
)
@execute_option()
@broker_options
def clear_offload(
    topic: str, ledger_ids: tuple[int, ...], force: bool, execute: bool, data_dir: str, config_path: str | None
) -> None:
    """Clean up TOPIC's unfinished offloads now with --execute: delete their
    objects, then clear their record, so the ledgers offload afresh (their
    entries stay on the hot tier: an unfinished offload was never read).
    Without --execute, a dry run that names them."""
    with opened(data_dir, config_path) as broker:
        ledger = broker.topic(topic)
        targets = [u for u in ledger.unfinished_offloads() if not ledger_ids or u.ledger_id in ledger_ids]
        if not targets:
            click.echo("no unfinished offload to clear")
            return
        if not execute:
            for target in targets:
                click.echo(
                    f"would delete the objects of ledger {target.ledger_id}'s unfinished offload (uuid {target.uuid}, "
                    f"driver {target.settings.get('driver', '?')}), then clear its record"
                )
            click.echo(dry_run_footer(f"these {len(targets)} unfinished offload(s)"), err=True)
            return
        for target in targets:
            left = ledger.clear_unfinished_offload(target.ledger_id, force=force)
            note = f"; objects maybe left behind: {', '.join(left)}" if left else ""
            click.echo(f"ledger {target.ledger_id}: cleared{note}")


@topics.command()
@click.argument("topic")
@click.option("--json", "as_json", is_flag=True)
@broker_options
def stats(topic: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
    """Each ledger of TOPIC: entries, size and tier state; and each
    streaming-offload segment: size, the entries of each ledger it holds,
    state (assigned, complete or failed, as `segments ls` says)."""
    with opened(data_dir, config_path) as broker:
        ledger = broker.topic(topic)
        states = ledger.ledgers()
        segments = ledger.segments(sizes=True)
        unclaimed = broker.unclaimed_hot_files()
        if as_json:
            for s in states:
                click.echo(json.dumps({"topic": str(ledger.topic), **asdict(s)}))
            for segment in segments:
                fields = {k: v for k, v in asdict(segment).items() if k != "settings"}
                fields["error"] = _masked(segment.error)
                click.echo(json.dumps({"topic": str(ledger.topic), "segment": fields}))
            if unclaimed:
                click.echo(f"warning: hot-tier files of ledgers {unclaimed} hold entries no topic claims", err=True)
            return
        click.echo(f"{'LEDGER':>12}  {'ENTRIES':>9}  {'BYTES':>12}  {'SEALED':>6}  TIER")
        for s in states:
            click.echo(f"{s.ledger_id:>12}  {s.entries:>9}  {s.size:>12}  {'yes' if s.sealed else 'no':>6}  {s.tier}")
        if segments:
            click.echo(f"{'SEGMENT':<36}  {'BYTES':>12}  {'LEDGER:ENTRIES':<30}  STATE")
        for segment in segments:
            held = ", ".join(f"{lid}:{first}..{'' if end is None else end}" for lid, first, end in segment.ledgers)
            size = "-" if segment.bytes is None else str(segment.bytes)
            click.echo(f"{segment.uuid:<36}  {size:>12}  {held:<30}  {segment.status}")
        if unclaimed:
            click.echo(
                f"warning: hot-tier files of ledgers {unclaimed} hold entries no topic claims (damaged metadata?)",
                err=True,
            )


@topics.command("run-maintenance")
@click.argument("topic")
@broker_options
@metrics_port_option
def run_maintenance(topic: str, data_dir: str, config_path: str | None) -> None:
    """Do TOPIC's periodic work now: age rollover, streaming offload, threshold offload, hot-copy
    deletion after the lag, retention."""
    with opened(data_dir, config_path) as broker:
        done = broker.topic(topic).run_maintenance()
        offload = done["offload"]
        click.echo(f"rolled over: {'yes' if done['rolled_over'] else 'no'}")
        click.echo(f"streamed into segments: {done['streamed']} entries")
        click.echo(f"offloaded by threshold: {getattr(offload, 'offloaded_ledgers', 0)} ledger(s)")
        click.echo(f"hot copies deleted: {done['hot_deleted'] or 'none'}")
        click.echo(f"trimmed by retention: {done['trimmed'] or 'none'}")


@click.group()
def namespaces() -> None:
    """Namespace policies of the embedded broker."""
