"""The Prometheus plugin: events become Pulsar's and Kafka's metric names,
served over HTTP by the broker and by long-running commands, and scraped
from the real endpoint with prometheus_client's own parser."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from offload_plugin_prometheus import OffloadMetrics
from offload_plugin_prometheus.plugin import METRICS
from prometheus_client.parser import text_string_to_metric_families

from offload_core.cli import main
from offload_core.errors import ConfigError
from offload_core.hooks import Event
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.model import Position
from offload_core.plugins import ENV_DISABLE_AUTOLOAD, PluginManager
from tests.rsm.segments import numbered_segments, write_partition


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}  # fmt: skip


def value(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)  # type: ignore[no-any-return]


def test_events_become_pulsars_and_kafkas_metrics() -> None:
    metrics = OffloadMetrics()
    topic = "public/default/persistent/orders"
    events = [
        Event("offload.lifecycle", {"step": "prepared", "managed_ledger": topic, "ledger_id": 3, "uuid": "u1"}),
        Event("offload.started", {"ledger_id": 3, "uuid": "u1"}),
        Event("offload.finished", {"ledger_id": 3, "uuid": "u1", "bytes": 1000}),
        Event("offload.started", {"ledger_id": 4, "uuid": "u2"}),
        Event("offload.failed", {"ledger_id": 4, "uuid": "u2", "error": "InjectedFault"}),
        Event(
            "read.served",
            {"managed_ledger": topic, "ledger_id": 3, "tier": "offloaded", "entries": 7, "bytes": 700, "seconds": 0.02},
        ),  # fmt: skip
        Event(
            "storage.request",
            {
                "op": "read",
                "key": "k",
                "bytes": 700,
                "ok": True,
                "requests": 1,
                "requests_by_op": {"read": 1},
                "driver": "s3",
                "seconds": 0.01,
            },
        ),  # fmt: skip
        Event(
            "storage.request",
            {
                "op": "write",
                "key": "k",
                "bytes": 0,
                "ok": False,
                "requests": 3,
                "requests_by_op": {"write": 3},
                "driver": "s3",
                "seconds": 0.5,
            },
        ),  # fmt: skip
        Event(
            "rsm.segment",
            {
                "step": "copied",
                "topic_partition": "my-topic-2",
                "segment_id": "x",
                "bytes": 50,
                "base_offset": 0,
                "seconds": 1.0,
            },
        ),  # fmt: skip
        Event(
            "rsm.segment",
            {"step": "deleted", "topic_partition": "my-topic-2", "segment_id": "x", "base_offset": 0, "seconds": 0.1},
        ),  # fmt: skip
        Event(
            "rsm.segment",
            {
                "step": "fetched",
                "topic_partition": "my-topic-2",
                "segment_id": "x",
                "bytes": 40,
                "base_offset": 0,
                "seconds": 0.1,
            },
        ),  # fmt: skip
        Event("read_ahead.range", {"outcome": "fetched", "bytes": 16, "charged_bytes": 16, "needed": True}),
        Event("read_ahead.range", {"outcome": "shared", "bytes": 16, "charged_bytes": 16, "needed": True}),
        Event("offload.segment", {"step": "assigned", "managed_ledger": topic, "uuid": "s1"}),
        Event("streaming.buffer", {"managed_ledger": topic, "uuid": "s1", "buffered_bytes": 5, "limit": 64}),
        Event("storage.request", {"op": "read"}),  # malformed: ignored, never raised
        Event("something.else", {}),
    ]
    for n, event in enumerate(events):
        metrics.observe(event, now=float(n))
    get = metrics.registry.get_sample_value
    labels = {"namespace": "public/default", "topic": "persistent://public/default/orders"}
    assert get("brk_ledgeroffloader_offload_bytes_total", labels) == 1000
    assert get("brk_ledgeroffloader_offload_error_total", {"namespace": "", "topic": ""}) == 1
    assert get("offload_core_offload_runs_total", {"outcome": "finished", "streaming": "false"}) == 1
    assert get("offload_core_offload_seconds_count", {"streaming": "false"}) == 2
    assert get("offload_core_read_entries_total", {"tier": "offloaded"}) == 7
    assert get("brk_ledgeroffloader_read_ledger_latency_count", labels) == 1
    assert get("brk_ledgeroffloader_read_offload_bytes_total", {"driver": "s3"}) == 700
    assert get("offload_core_storage_requests_total", {"op": "write", "driver": "s3"}) == 3
    assert get("brk_ledgeroffloader_write_storage_error_total", {"driver": "s3"}) == 1
    assert get("kafka_server_brokertopicmetrics_remote_copy_bytes_total", {"topic": "my-topic", "partition": "2"}) == 50
    assert get("kafka_server_brokertopicmetrics_remote_delete_requests_total",
               {"topic": "my-topic", "partition": "2"}) == 1  # fmt: skip
    assert (
        get("kafka_server_brokertopicmetrics_remote_fetch_bytes_total", {"topic": "my-topic", "partition": "2"}) == 40
    )
    assert get("offload_core_read_ahead_ranges_total", {"outcome": "shared"}) == 1
    assert get("offload_core_read_ahead_charged_bytes") == 16
    assert get("offload_core_streaming_buffered_bytes", labels) == 5
    assert get("offload_core_streaming_buffer_limit_bytes", labels) == 64


def test_the_broker_serves_metrics_a_scrape_parses(tmp_path: Path) -> None:
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 50, "managedLedgerOffloadMetricsPort": 0,
                           "retentionCheckIntervalInSeconds": 0, "managedLedgerOffloadWorkerProcesses": 0})  # fmt: skip
    with Broker(tmp_path / "data", config) as broker:
        assert broker.metrics_server is not None
        ledger = broker.topic("acme/orders/events")
        for n in range(120):
            ledger.append(b"event-%d" % n)
        assert ledger.offload_prefix().status == "success"
        first = ledger.ledgers()[0].ledger_id
        ledger.read_tiered(Position(first, 0), 120, priority=ReadPriority.OFFLOADED_FIRST)
        broker.policies.update("topic", "acme/orders/stream", streaming_enabled=True)
        streamed = broker.topic("acme/orders/stream")
        for n in range(30):
            streamed.append(b"streamed-%d" % n)
        streamed.run_maintenance()
        broker.drain()
        samples = scrape(broker.metrics_server.url)
        url = broker.metrics_server.url
    labels = {"namespace": "acme/orders", "topic": "persistent://acme/orders/events"}
    assert value(samples, "brk_ledgeroffloader_offload_bytes_total", **labels) > 0
    assert value(samples, "offload_core_read_entries_total", tier="offloaded") >= 100
    assert value(samples, "offload_core_storage_requests_total", driver="filesystem", op="write") > 0
    stream_labels = {"namespace": "acme/orders", "topic": "persistent://acme/orders/stream"}
    assert value(samples, "offload_core_streaming_buffer_limit_bytes", **stream_labels) > 0
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)  # closed with the broker


def test_a_long_running_command_serves_metrics_while_it_runs(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(2))
    before = METRICS.registry.get_sample_value("kafka_server_brokertopicmetrics_remote_copy_requests_total",
                                               {"topic": "orders", "partition": "0"}) or 0  # fmt: skip
    result = CliRunner().invoke(main, ["kafka", "copy", str(directory), f"file://{tmp_path / 'store'}",
                                       "--metrics-port", "0"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "metrics: http://127.0.0.1:" in result.stderr
    after = METRICS.registry.get_sample_value("kafka_server_brokertopicmetrics_remote_copy_requests_total",
                                              {"topic": "orders", "partition": "0"})  # fmt: skip
    assert after == before + 1  # the rolled segment (the active one is left)


def test_without_the_plugin_serving_metrics_names_what_to_install() -> None:
    manager = PluginManager(environ={ENV_DISABLE_AUTOLOAD: "1"})
    with pytest.raises(ConfigError, match="offload-plugin-prometheus"):
        manager.serve_metrics(0)


def test_a_port_in_use_is_a_clear_error() -> None:
    server = PluginManager().serve_metrics(0)
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    try:
        with pytest.raises(ConfigError, match="cannot be served"):
            PluginManager().serve_metrics(port)
    finally:
        server.close()
