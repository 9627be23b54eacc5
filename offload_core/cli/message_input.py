"""Messages typed or piped into ``offload topics produce --input``. Pure.

Two formats, one message per line:

``lines``
    the line's text (UTF-8, without its line ending) is the value.
``jsonl``
    a JSON object with ``value`` (text, or ``null`` for a null value) or
    ``value_b64`` (bytes, base64), and optionally ``key`` (text),
    ``properties`` (an object of text to text) and ``event_time``
    (milliseconds since the epoch).

Each becomes a Pulsar message entry (``MessageMetadata`` with producer
name, sequence id, publish time, key, properties, event time), exactly
what the Spark source and ``consume --json`` decode.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
from dataclasses import dataclass

from ..errors import ConfigError
from ..formats.pulsar_message import encode_entry
from ..proto import MessageMetadata

__all__ = ["FORMATS", "InputMessage", "message_entry", "parse_line"]

FORMATS = ("lines", "jsonl")
_JSONL_FIELDS = {"key", "value", "value_b64", "properties", "event_time"}
# UTF-8 is checked this many bytes at a time, so that a line of any size is
# never decoded whole (its text would be as large again, or up to 4 times).
_CHECK_CHUNK = 1 << 20


@dataclass(frozen=True)
class InputMessage:
    """One message to produce: ``value`` is ``None`` for a null value; a
    ``lines`` value is a view of its input line (no copy)."""

    value: bytes | memoryview | None
    key: str | None = None
    properties: tuple[tuple[str, str], ...] = ()
    event_time: int | None = None


def parse_line(line: bytes, *, fmt: str, number: int) -> InputMessage:
    """The message on input line ``number`` (1-based, for the message).
    A ``lines`` value is a view of ``line`` without its line ending: no
    copy of the line is made. Raises :class:`ConfigError` naming the line
    and what is wrong."""
    if fmt not in FORMATS:
        raise ConfigError(f"input format {fmt!r} is not one of {', '.join(FORMATS)}")
    _check_utf8(line, number)
    if fmt == "lines":
        end = len(line)
        while end and line[end - 1] in b"\r\n":
            end -= 1
        return InputMessage(value=memoryview(line)[:end])

    def bad(problem: str) -> ConfigError:
        return ConfigError(f"input line {number}: {problem}")

    try:
        record = json.loads(line.decode("utf-8"))  # the line ending is JSON whitespace
    except ValueError as exc:
        raise bad(f"not JSON ({exc.args[0] if exc.args else exc})") from None
    if not isinstance(record, dict):
        raise bad('not a JSON object; write one object per line, e.g. {"key": "k", "value": "v"}')
    unknown = sorted(set(record) - _JSONL_FIELDS)
    if unknown:
        raise bad(f"unknown field(s) {unknown}; the fields are {sorted(_JSONL_FIELDS)}")
    if "value" in record and "value_b64" in record:
        raise bad("has both 'value' and 'value_b64'; give one")
    if "value_b64" in record:
        if not isinstance(record["value_b64"], str):
            raise bad("'value_b64' must be base64 text")
        try:
            value: bytes | None = base64.b64decode(record["value_b64"], validate=True)
        except (binascii.Error, ValueError):
            raise bad("'value_b64' is not valid base64") from None
    elif "value" in record:
        raw = record["value"]
        if raw is not None and not isinstance(raw, str):
            raise bad("'value' must be text or null (use 'value_b64' for bytes)")
        value = None if raw is None else raw.encode("utf-8")
    else:
        raise bad("has no 'value' or 'value_b64'")
    key = record.get("key")
    if key is not None and not isinstance(key, str):
        raise bad("'key' must be text")
    properties = record.get("properties", {})
    if not isinstance(properties, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in properties.items()):  # fmt: skip
        raise bad("'properties' must be an object of text to text")
    event_time = record.get("event_time")
    if event_time is not None and (not isinstance(event_time, int) or isinstance(event_time, bool)
                                   or not 0 < event_time < 2**63):  # fmt: skip
        raise bad("'event_time' must be a positive integer of milliseconds since the epoch")
    return InputMessage(value=value, key=key, properties=tuple(sorted(properties.items())), event_time=event_time)


def _check_utf8(line: bytes, number: int) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(line)
    for start in range(0, max(len(view), 1), _CHECK_CHUNK):
        held = len(decoder.getstate()[0])  # bytes of a character cut by the previous chunk
        try:
            decoder.decode(view[start : start + _CHECK_CHUNK], final=start + _CHECK_CHUNK >= len(view))
        except UnicodeDecodeError as exc:
            raise ConfigError(f"input line {number}: not UTF-8 text (byte {start - held + exc.start})") from None


def message_entry(message: InputMessage, *, producer_name: str, sequence_id: int, publish_time_ms: int) -> bytes:
    """The ledger entry a Pulsar broker stores for ``message``."""
    metadata = MessageMetadata(producer_name=producer_name, sequence_id=sequence_id, publish_time=publish_time_ms)
    for name, value in message.properties:
        metadata.properties.add(key=name, value=value)
    if message.key is not None:
        metadata.partition_key = message.key
    if message.event_time is not None:
        metadata.event_time = message.event_time
    if message.value is None:
        metadata.null_value = True
    return encode_entry(metadata, message.value or b"")
