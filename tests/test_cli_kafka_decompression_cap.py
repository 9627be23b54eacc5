"""The decompression cap holds for magic 0/1 compressed wrappers too,
whose header is read by decompressing their inner messages: every
command that decodes one takes --max-decompressed-bytes, and raising it
reads what the default refuses."""

from __future__ import annotations

import json
from pathlib import Path

from offload_core.formats import kafka
from tests.legacy_message_sets import message_set
from tests.rsm.segments import SegmentSpec, write_partition
from tests.test_cli_kafka import offload

MIB = 2**20
T0 = 1_500_000_000_000
SMALL, RAISED = str(MIB), str(4 * MIB)


def wrapper_then_batch(root: Path) -> Path:
    """A magic 1 gzip wrapper whose two records expand to 2 MiB (offsets
    0-1), then a small v2 batch (offset 2) it has to be walked past."""
    records = [kafka.Record(o, T0 + o, None, bytes(MIB)) for o in range(2)]
    wrapper = message_set(1, kafka.Compression.GZIP, records)
    after = kafka.encode_batch([kafka.Record(2, T0 + 2, b"k", b"v")], base_offset=2)
    return write_partition(root, "old-0", [SegmentSpec([wrapper, after])])


def test_a_wrapper_past_the_cap_is_refused_and_read_with_the_cap_raised(tmp_path: Path) -> None:
    directory = wrapper_then_batch(tmp_path)
    url = f"file://{tmp_path / 'store'}"
    refused = offload("copy", str(directory), url, "--all", "--max-decompressed-bytes", SMALL)
    assert refused.returncode == 1, refused.stderr
    assert "decompression cap of 1048576 bytes" in refused.stderr
    assert "--max-decompressed-bytes of `offload kafka copy`" in refused.stderr
    copied = offload("copy", str(directory), url, "--all", "--max-decompressed-bytes", RAISED)
    assert copied.returncode == 0 and "copied 1 segment(s)" in copied.stdout, copied.stderr

    for offset in ("0", "2"):
        capped = offload("read", url, "old-0", "--offset", offset, "--json", "--max-decompressed-bytes", SMALL)
        assert capped.returncode == 1 and "decompression cap of 1048576 bytes" in capped.stderr, capped.stderr
    read = offload("read", url, "old-0", "--offset", "0", "--json", "--max-decompressed-bytes", RAISED)
    assert read.returncode == 0, read.stderr
    assert [json.loads(line)["offset"] for line in read.stdout.splitlines()] == [0, 1, 2]  # the wrapper's too

    timestamp = str(T0 + 2)
    capped = offload("offsets", url, "old-0", "--timestamp", timestamp, "--max-decompressed-bytes", SMALL)
    assert capped.returncode == 1 and "decompression cap of 1048576 bytes" in capped.stderr, capped.stderr
    found = offload("offsets", url, "old-0", "--timestamp", timestamp, "--max-decompressed-bytes", RAISED)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["offset"] == 2
