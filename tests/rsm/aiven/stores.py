"""Stores holding the plugin's objects of the shared runs, under their own
keys or as other copies of the same segment (a retry, a new leader's copy,
a recreated topic), with the metadata in each manifest to match."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from offload_core.rsm.aiven.keys import ObjectKey, require_key
from offload_core.rsm.aiven.manifest import decode_manifest, encode_manifest
from offload_core.storage import StorageDriver
from tests.aiven_vectors import AivenRun

TOPIC_ID = "ChssPU5fSmuMna4PGis8TQ"
SEGMENT_ID = "XpoAAAAAQACAAAAAAAAAAQ"


def put_run(driver: StorageDriver, run: AivenRun, prefix: str = "", **changes: Any) -> ObjectKey:
    """Write ``run``'s three objects under ``prefix``; ``changes``
    (``topic``, ``topic_id``, ``segment_id``, ``event_ms``, ``epochs``,
    ``skip``: the suffixes to leave out) make it another copy (``topic``:
    of another topic). Returns its manifest key."""
    original = require_key(run.object_key("rsm-manifest"), run.prefix)
    key = replace(original, prefix=prefix, topic=changes.get("topic", original.topic),
                  topic_id=changes.get("topic_id", TOPIC_ID),
                  segment_id=changes.get("segment_id", SEGMENT_ID))  # fmt: skip
    manifest = decode_manifest(run.object_bytes("rsm-manifest"), original.key)
    metadata = copy.deepcopy(manifest.remote_log_segment_metadata)
    metadata["remoteLogSegmentId"]["id"] = key.segment_id
    metadata["remoteLogSegmentId"]["topicIdPartition"]["topicId"] = key.topic_id
    metadata["remoteLogSegmentId"]["topicIdPartition"]["topicPartition"]["topic"] = key.topic
    metadata["eventTimestampMs"] = changes.get("event_ms", metadata["eventTimestampMs"])
    metadata["segmentLeaderEpochs"] = changes.get("epochs", metadata["segmentLeaderEpochs"])
    objects = {
        "log": run.object_bytes("log"),
        "indexes": run.object_bytes("indexes"),
        "rsm-manifest": encode_manifest(replace(manifest, remote_log_segment_metadata=metadata)),
    }
    for suffix, data in objects.items():
        if suffix not in changes.get("skip", ()):
            driver.write(key.with_suffix(suffix).key, [data], metadata={})  # type: ignore[arg-type]
    return key
