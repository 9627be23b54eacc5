"""`offload topics produce --input`: real Pulsar messages from a file or stdin."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from offload_core.cli.message_input import InputMessage, message_entry, parse_line
from offload_core.errors import ConfigError
from offload_core.formats.pulsar_message import decode_entry
from offload_core.managed_ledger import Broker


def offload(tmp_path: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "offload_core.cli", *args, "--data-dir", str(tmp_path / "data")],
        input=stdin,
        capture_output=True,
    )


def consumed(tmp_path: Path) -> list[dict[str, object]]:
    result = offload(tmp_path, "topics", "consume", "a/b/c", "--count", "100", "--json")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_jsonl_from_stdin_becomes_pulsar_messages(tmp_path: Path) -> None:
    lines = [
        {"key": "order-1", "value": "héllo", "properties": {"source": "shell"}, "event_time": 1_700_000_000_000},
        {"value_b64": base64.b64encode(b"\x00\x01\xff").decode()},
        {"key": "tombstone", "value": None},
    ]
    stdin = "\n".join(json.dumps(line) for line in lines).encode() + b"\n\n"
    result = offload(tmp_path, "topics", "produce", "a/b/c", "--input", "-", "--format", "jsonl", stdin=stdin)
    assert result.returncode == 0, result.stderr
    assert b"appended 3 messages" in result.stdout
    records = consumed(tmp_path)
    assert [r["key"] for r in records] == ["order-1", None, "tombstone"]
    assert [r["value_b64"] for r in records] == [base64.b64encode("héllo".encode()).decode(), "AAH/", None]
    assert records[0]["properties"] == {"source": "shell"} and records[0]["event_time"] == 1_700_000_000_000
    assert [r["sequence_id"] for r in records] == [0, 1, 2]
    assert {r["producer_name"] for r in records} == {"offload-cli"}
    assert all(isinstance(r["publish_time"], int) and r["publish_time"] > 1_700_000_000_000 for r in records)
    assert all(r["size"] == len(base64.b64decode(str(r["payload_b64"]))) for r in records)


def test_lines_from_a_file(tmp_path: Path) -> None:
    source = tmp_path / "messages.txt"
    source.write_bytes(b"first\nsecond line\r\n\nlast")
    result = offload(tmp_path, "topics", "produce", "a/b/c", "--input", str(source))
    assert result.returncode == 0, result.stderr
    values = [base64.b64decode(str(r["value_b64"])) for r in consumed(tmp_path)]
    assert values == [b"first", b"second line", b"", b"last"]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b"{not json", "not JSON"),
        (b'["a list"]', "not a JSON object"),
        (b'{"value": "v", "value_b64": "AA=="}', "both"),
        (b'{"key": "k"}', "no 'value'"),
        (b'{"value_b64": "***"}', "not valid base64"),
        (b'{"value": 5}', "'value' must be text"),
        (b'{"value": "v", "properties": {"a": 1}}', "'properties' must be"),
        (b'{"value": "v", "event_time": -3}', "'event_time' must be"),
        (b'{"value": "v", "colour": "red"}', "unknown field"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_malformed_line_is_named_and_nothing_after_it_is_written(tmp_path: Path, bad: bytes, problem: str) -> None:
    stdin = b'{"value": "one"}\n{"value": "two"}\n' + bad + b'\n{"value": "never"}\n'
    result = offload(tmp_path, "topics", "produce", "a/b/c", "--input", "-", "--format", "jsonl", stdin=stdin)
    assert result.returncode != 0
    assert b"Traceback" not in result.stderr
    assert b"input line 3: " in result.stderr and problem.encode() in result.stderr
    assert b"appended 2 messages" in result.stdout
    assert [base64.b64decode(str(r["value_b64"])) for r in consumed(tmp_path)] == [b"one", b"two"]


def test_entries_are_what_the_spark_source_decodes(tmp_path: Path) -> None:
    message = parse_line(b'{"key": "k", "value": "v", "properties": {"p": "q"}}', fmt="jsonl", number=1)
    entry = message_entry(message, producer_name="me", sequence_id=7, publish_time_ms=1234)
    (decoded,) = decode_entry(entry)
    assert (decoded.key, decoded.payload, decoded.properties) == ("k", b"v", (("p", "q"),))
    assert (decoded.producer_name, decoded.sequence_id, decoded.publish_time) == ("me", 7, 1234)
    null = message_entry(InputMessage(value=None), producer_name="me", sequence_id=8, publish_time_ms=1)
    assert decode_entry(null)[0].payload is None
    with pytest.raises(ConfigError, match="input format 'xml'"):
        parse_line(b"x", fmt="xml", number=1)


def test_random_entries_still_consume_as_raw_payloads(tmp_path: Path) -> None:
    with Broker(tmp_path / "data") as broker:
        broker.topic("a/b/c").append(b"\x07not a pulsar message")
    (record,) = consumed(tmp_path)
    assert "key" not in record and record["size"] == 21


def test_utf8_is_checked_across_chunks_and_a_bad_byte_is_placed_exactly() -> None:
    chunk = 1 << 20
    straddling = b"a" * (chunk - 1) + "€".encode() + b"z"  # a 3-byte character cut by the chunk boundary
    assert bytes(parse_line(straddling + b"\r\n", fmt="lines", number=1).value or b"") == straddling
    with pytest.raises(ConfigError, match=f"input line 4: not UTF-8 text \\(byte {chunk + 5}\\)"):
        parse_line(b"a" * (chunk + 5) + b"\xff" + b"b" * 10, fmt="lines", number=4)
    with pytest.raises(ConfigError, match=f"byte {chunk - 1}"):
        parse_line(b"a" * (chunk - 1) + b"\xe2\x82" + b"b", fmt="lines", number=1)  # cut short, then not continued


# Runs the command and prints the peak resident size of its process (KiB):
# the children of this wrapper are that process alone.
PEAK_RSS = textwrap.dedent(
    """
    import resource, subprocess, sys
    subprocess.run([sys.executable, "-m", "offload_core.cli", *sys.argv[1:]], check=True, stdout=subprocess.DEVNULL)
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    """
)


def test_a_100_mb_line_costs_at_most_two_and_a_half_times_its_size(tmp_path: Path) -> None:
    line_size = 100 << 20
    (tmp_path / "big.txt").write_bytes(b"x" * line_size + b"\n")
    (tmp_path / "small.txt").write_bytes(b"x\n")

    def peak_kib(name: str) -> int:
        result = subprocess.run(
            [sys.executable, "-c", PEAK_RSS, "topics", "produce", f"a/b/{name}",
             "--input", str(tmp_path / f"{name}.txt"), "--data-dir", str(tmp_path / "data")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return int(result.stdout)

    baseline, big = peak_kib("small"), peak_kib("big")
    assert (big - baseline) * 1024 <= 2.5 * line_size, f"peak {big} KiB, interpreter baseline {baseline} KiB"
    with Broker(tmp_path / "data") as broker:
        [state] = broker.topic("a/b/big").ledgers()
    assert state.entries == 1 and line_size < state.size < line_size + 100  # the line, framed as a message


def test_stdout_closed_early_ends_quietly_with_the_sigpipe_status(tmp_path: Path) -> None:
    with Broker(tmp_path / "data") as broker:
        ledger = broker.topic("a/b/c")
        for number in range(3000):  # some 700 KB of JSON lines, well over what a pipe holds
            ledger.append(b"%d " % number * 20)
    reader = subprocess.Popen(
        [sys.executable, "-m", "offload_core.cli", "topics", "consume", "a/b/c", "--from", "1:0", "--count", "3000",
         "--json", "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert reader.stdout is not None and reader.stderr is not None
    assert json.loads(reader.stdout.readline())["entry_id"] == 0
    reader.stdout.close()  # as `head -1` does after its line
    assert reader.wait() == 128 + signal.SIGPIPE  # as a process SIGPIPE killed
    assert reader.stderr.read() == b""
    reader.stderr.close()
