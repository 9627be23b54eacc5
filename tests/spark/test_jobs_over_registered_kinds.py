"""A further offloader's objects are verified and retained by registering
its kind of stored offload (``stored=`` of
``offload_core_register_offloaders``), with no change to the jobs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offload_core import open_driver
from offload_core.hooks import hookimpl
from offload_core.offload.ledgers.verify import Defect
from offload_core.offload.stored.kinds import OffloadPlan, OffloadReport, ReadableKind, StoredKind, StoredOffload
from offload_core.plugins import PluginManager
from offload_core.spark.retention_job import retention
from offload_core.spark.verify_job import verify_store
from offload_core.storage import StorageDriver

pytestmark = pytest.mark.spark

CUTOFF = datetime(2026, 6, 1, tzinfo=UTC)
OLD_MS = int(datetime(2026, 1, 15, tzinfo=UTC).timestamp() * 1000)


class Notes:
    """A toy kind: one object ``notes/{uuid}-{ledger id}`` per offload, its
    entries one a line, damaged when a line says so, its age in its
    metadata."""

    name = "notes"

    def find(self, driver: StorageDriver, prefix: str) -> Sequence[StoredOffload]:
        found = []
        for info in driver.list(prefix + "notes/"):
            uid, ledger = info.key.rsplit("/", 1)[1].rsplit("-", 1)
            found.append(StoredOffload(self.name, uid, (int(ledger),), (info.key,), info.size, True,
                                       f"note {ledger}", info.key))  # fmt: skip
        return found

    def describe(self, driver: StorageDriver, offload: StoredOffload) -> StoredOffload:
        return replace(offload, created_ms=int(driver.stat(offload.detail).metadata["created-ms"]))

    def plan(self, driver: StorageDriver, offload: StoredOffload) -> OffloadPlan | OffloadReport:
        return OffloadPlan(offload, (offload.detail,), None)

    def check(self, driver: StorageDriver, task: str) -> str | None:
        return "not ok" if b"damaged" in driver.read(task).split(b"\n") else None

    def summarize(self, plan: OffloadPlan, outcomes: Sequence[str | None]) -> OffloadReport:
        offload = plan.offload
        defects = tuple(Defect(offload.ledger_ids[0], offload.uuid, offload.detail, 0, problem)
                        for problem in outcomes if problem is not None)  # fmt: skip
        return OffloadReport(offload, 1, 1, offload.size, defects)

    def delete(self, driver: StorageDriver, offload: StoredOffload) -> None:
        driver.delete([offload.detail])

    def entries(self, driver: StorageDriver, offload: StoredOffload, ledger_id: int) -> Iterator[tuple[int, bytes]]:
        yield from enumerate(driver.read(offload.detail).split(b"\n"))


class NotesPlugin:
    @hookimpl
    def offload_core_register_offloaders(self, register):  # type: ignore[no-untyped-def]
        register(object, name="notes", drivers=("notes",), stored=(Notes(),))


def test_a_registered_kind_is_listed_and_a_second_claim_of_its_name_is_refused() -> None:
    from offload_core.errors import PluginLoadError

    manager = PluginManager()
    manager.register(NotesPlugin())
    assert [kind.name for kind in manager.stored_kinds()] == [
        "notes",
        "pulsar-ledger",
        "pulsar-mapfile",
        "pulsar-segment",
    ]
    assert all(isinstance(kind, StoredKind) for kind in manager.stored_kinds())
    assert [kind.name for kind in manager.stored_kinds() if isinstance(kind, ReadableKind)] == [
        "notes",
        "pulsar-mapfile",
    ]

    class Again:
        @hookimpl
        def offload_core_register_offloaders(self, register):  # type: ignore[no-untyped-def]
            register(object, name="other", stored=(Notes(),))

    manager.register(Again())
    with pytest.raises(PluginLoadError, match="kind of stored offload 'notes' is registered by both"):
        manager.stored_kinds()


def test_the_jobs_serve_a_kind_an_offloader_registers(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    driver = open_driver(url)
    good, bad = str(uuid.uuid4()), str(uuid.uuid4())
    driver.write(f"notes/{good}-3", b"ok", metadata={"created-ms": str(OLD_MS)})
    driver.write(f"notes/{bad}-4", b"ok\ndamaged", metadata={"created-ms": str(OLD_MS)})
    manager = PluginManager()
    manager.register(NotesPlugin())
    rows = verify_store(spark, url, plugin_manager=manager).defects.collect()
    assert [(r.ledger_id, r.uuid, r.problem) for r in rows] == [(4, bad, "not ok")]
    assert verify_store(spark, url).ok  # without the plugin, its objects are no offload
    done = retention(spark, url, cutoff=CUTOFF, dry_run=False, plugin_manager=manager)
    assert sorted((d.offload.kind, d.action) for d in done.decisions) == [("notes", "deleted")] * 2
    assert list(driver.list("")) == []


def test_the_source_reads_a_kind_an_offloader_registers_beside_pulsars_objects(tmp_path: Path) -> None:
    from offload_core import InMemoryReadHandle, open_offloader
    from offload_core.spark.kind_partitions import OffloadPartition
    from offload_core.spark.pulsar_offload import PulsarOffloadReader, plan_partitions
    from tests.spark.planned_blocks import planned_ledger_ids

    url = f"file://{tmp_path / 'bucket'}"
    notes = [b"first", b"", b"third"]
    open_driver(url).write(f"notes/{uuid.uuid4()}-3", b"\n".join(notes), metadata={"created-ms": str(OLD_MS)})
    open_offloader(url, max_block_size=1024).offload(InMemoryReadHandle(1, [b"v1 entry"]), uuid.uuid4())
    manager = PluginManager()
    manager.register(NotesPlugin())
    options = {"path": url, "decode": "none", "entries": "1:0,3:1-"}
    plan = plan_partitions(options, plugin_manager=manager)
    assert [type(p).__name__ for p in plan] == ["LedgerGroupPartition", "OffloadPartition"]
    assert planned_ledger_ids(plan) == [1, 3]
    assert [len(p.offloads) for p in plan if isinstance(p, OffloadPartition)] == [1]  # no locator: carried whole
    assert not [p for p in plan_partitions({"path": url}) if isinstance(p, OffloadPartition)]  # not installed
    reader = PulsarOffloadReader(options)
    rows = [row for partition in plan for batch in reader.read(partition) for row in batch.to_pylist()]
    assert [(r["ledger_id"], r["entry_id"], r["payload"]) for r in rows] == [(1, 0, b"v1 entry"), (3, 1, b""),
                                                                            (3, 2, b"third")]  # fmt: skip
