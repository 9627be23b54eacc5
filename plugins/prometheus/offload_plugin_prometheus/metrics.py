"""Events in, Prometheus metrics out. One :class:`OffloadMetrics` owns its
own registry (never prometheus_client's global one), so tests and embedders
can hold several."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary

from offload_core.hooks import Event

__all__ = ["OffloadMetrics"]

_TOPIC = ("namespace", "topic")
_LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_KAFKA = "kafka_server_brokertopicmetrics_"
_REMEMBERED = 10_000  # offloads in flight whose topic is known (bounded)


def _topic_labels(managed_ledger: str) -> tuple[str, str]:
    """A managed ledger's name (``tenant/ns/persistent/name``, as Pulsar
    names them) -> Pulsar's ``namespace`` and ``topic`` labels
    (``tenant/ns``, ``persistent://tenant/ns/name``)."""
    for domain in ("persistent", "non-persistent"):
        head, sep, name = managed_ledger.partition(f"/{domain}/")
        if sep:
            return head, f"{domain}://{head}/{name}"
    return managed_ledger.rsplit("/", 1)[0] if "/" in managed_ledger else "", managed_ledger


class OffloadMetrics:
    """Counters and histograms fed by :meth:`observe`; never raises."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.offload_bytes = Counter("brk_ledgeroffloader_offload_bytes", "Bytes offloaded", _TOPIC, registry=r)
        self.offload_error = Counter("brk_ledgeroffloader_offload_error", "Failed offloads", _TOPIC, registry=r)
        self.write_storage_error = Counter("brk_ledgeroffloader_write_storage_error", "Failed writes to the store",
                                           ["driver"], registry=r)  # fmt: skip
        self.read_offload_bytes = Counter("brk_ledgeroffloader_read_offload_bytes", "Bytes read from the store",
                                          ["driver"], registry=r)  # fmt: skip
        self.read_offload_error = Counter("brk_ledgeroffloader_read_offload_error", "Failed reads from the store",
                                          ["driver"], registry=r)  # fmt: skip
        self.read_offload_data_latency = Summary("brk_ledgeroffloader_read_offload_data_latency",
                                                 "Seconds per ranged read of offloaded data", ["driver"],
                                                 registry=r)  # fmt: skip
        self.read_ledger_latency = Summary("brk_ledgeroffloader_read_ledger_latency",
                                           "Seconds per read of one ledger, any tier", _TOPIC, registry=r)  # fmt: skip
        self.delete_offload_ops = Counter("brk_ledgeroffloader_delete_offload_ops", "Offloaded ledgers deleted",
                                          registry=r)  # fmt: skip
        self.offload_runs = Counter("offload_core_offload_runs", "Offloads by outcome", ["outcome", "streaming"],
                                    registry=r)  # fmt: skip
        self.offload_seconds = Histogram("offload_core_offload_seconds", "Seconds per offload (started to finished)",
                                         ["streaming"], buckets=_LATENCY_BUCKETS, registry=r)  # fmt: skip
        self.read_entries = Counter("offload_core_read_entries", "Entries served by tier", ["tier"], registry=r)
        self.read_bytes = Counter("offload_core_read_bytes", "Payload bytes served by tier", ["tier"], registry=r)
        self.read_seconds = Histogram("offload_core_read_seconds", "Seconds per read of one ledger by tier", ["tier"],
                                      buckets=_LATENCY_BUCKETS, registry=r)  # fmt: skip
        self.read_fallbacks = Counter("offload_core_read_fallbacks", "Reads served by the other tier",
                                      ["from_tier", "to_tier"], registry=r)  # fmt: skip
        self.storage_requests = Counter("offload_core_storage_requests", "Store requests", ["op", "driver"],
                                        registry=r)  # fmt: skip
        self.storage_errors = Counter("offload_core_storage_request_errors", "Store calls that failed",
                                      ["op", "driver"], registry=r)  # fmt: skip
        self.storage_bytes = Counter("offload_core_storage_bytes", "Bytes moved to or from the store",
                                     ["op", "driver"], registry=r)  # fmt: skip
        tp = ["topic", "partition"]
        self.remote_copy_bytes = Counter(_KAFKA + "remote_copy_bytes", "Bytes of segments copied", tp, registry=r)
        self.remote_copy_requests = Counter(_KAFKA + "remote_copy_requests", "Segment copies", tp, registry=r)
        self.remote_copy_errors = Counter(_KAFKA + "remote_copy_errors", "Failed segment copies", tp, registry=r)
        self.remote_delete_requests = Counter(_KAFKA + "remote_delete_requests", "Segment deletes", tp, registry=r)
        self.remote_fetch_requests = Counter(_KAFKA + "remote_fetch_requests", "Segment fetches", tp, registry=r)
        self.remote_fetch_bytes = Counter(_KAFKA + "remote_fetch_bytes", "Bytes of segments fetched", tp, registry=r)
        self.read_ahead_ranges = Counter("offload_core_read_ahead_ranges", "Read-ahead ranges asked for by outcome "
                                         "(shared: a hit on another reader's download)", ["outcome"],
                                         registry=r)  # fmt: skip
        self.read_ahead_bytes = Gauge("offload_core_read_ahead_charged_bytes", "Bytes held by read-ahead now",
                                      registry=r)  # fmt: skip
        self.streaming_buffer = Gauge("offload_core_streaming_buffered_bytes", "Bytes buffered by an open segment",
                                      _TOPIC, registry=r)  # fmt: skip
        self.streaming_buffer_limit = Gauge("offload_core_streaming_buffer_limit_bytes", "Its buffer bound", _TOPIC,
                                            registry=r)  # fmt: skip
        self._lock = threading.Lock()
        self._offloads: dict[str, tuple[str, float | None]] = {}  # uuid -> (topic, started at)
        self._handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "offload.started": self._started,
            "offload.finished": self._finished,
            "offload.failed": self._failed,
            "offload.deleted": lambda f: self.delete_offload_ops.inc(),
            "read.served": self._read,
            "read.fallback": lambda f: self.read_fallbacks.labels(str(f.get("from")), str(f.get("to"))).inc(),
            "storage.request": self._storage,
            "rsm.segment": self._rsm,
            "read_ahead.range": self._read_ahead,
            "streaming.buffer": self._streaming_buffer,
        }

    def observe(self, event: Event, *, now: float) -> None:
        """Count ``event`` (events of other kinds are ignored). ``now`` is a
        monotonic clock reading, for offload durations."""
        handler = self._handlers.get(event.kind)
        fields = dict(event.fields)
        fields["_now"] = now
        try:
            if "managed_ledger" in fields and "uuid" in fields:
                self._remember_topic(fields)
            if handler is not None:
                handler(fields)
        except (KeyError, TypeError, ValueError):
            pass  # an event without the fields this expects: observability must never break the broker

    def _remember_topic(self, f: dict[str, Any]) -> None:
        # Offloaders do not know their topic; the managed ledger's own
        # events (an offload prepared, a segment assigned) name both.
        uuid = str(f["uuid"])
        with self._lock:
            if uuid in self._offloads:
                return
            if len(self._offloads) >= _REMEMBERED:
                self._offloads.pop(next(iter(self._offloads)))
            self._offloads[uuid] = (str(f["managed_ledger"]), None)

    def _started(self, f: dict[str, Any]) -> None:
        with self._lock:
            topic, _ = self._offloads.get(str(f["uuid"]), ("", None))
            if len(self._offloads) >= _REMEMBERED:
                self._offloads.pop(next(iter(self._offloads)))
            self._offloads[str(f["uuid"])] = (topic, f["_now"])

    def _end(self, f: dict[str, Any], outcome: str) -> str:
        streaming = "true" if f.get("streaming") else "false"
        with self._lock:
            topic, started = self._offloads.pop(str(f["uuid"]), ("", None))
        self.offload_runs.labels(outcome, streaming).inc()
        if started is not None:
            self.offload_seconds.labels(streaming).observe(max(0.0, f["_now"] - started))
        return topic

    def _finished(self, f: dict[str, Any]) -> None:
        topic = self._end(f, "finished")
        self.offload_bytes.labels(*_topic_labels(topic)).inc(int(f.get("bytes", 0)))

    def _failed(self, f: dict[str, Any]) -> None:
        topic = self._end(f, "failed")
        self.offload_error.labels(*_topic_labels(topic)).inc()

    def _read(self, f: dict[str, Any]) -> None:
        tier = str(f["tier"])
        self.read_entries.labels(tier).inc(int(f["entries"]))
        self.read_bytes.labels(tier).inc(int(f["bytes"]))
        self.read_seconds.labels(tier).observe(float(f["seconds"]))
        self.read_ledger_latency.labels(*_topic_labels(str(f["managed_ledger"]))).observe(float(f["seconds"]))

    def _storage(self, f: dict[str, Any]) -> None:
        op, driver, ok = str(f["op"]), str(f.get("driver", "")), bool(f["ok"])
        for name, count in dict(f.get("requests_by_op") or {op: f.get("requests", 1)}).items():
            self.storage_requests.labels(str(name), driver).inc(int(count))
        self.storage_bytes.labels(op, driver).inc(int(f.get("bytes", 0)))
        if not ok:
            self.storage_errors.labels(op, driver).inc()
        if op == "write" and not ok:
            self.write_storage_error.labels(driver).inc()
        if op == "read":
            if ok:
                self.read_offload_bytes.labels(driver).inc(int(f.get("bytes", 0)))
                if "seconds" in f:
                    self.read_offload_data_latency.labels(driver).observe(float(f["seconds"]))
            else:
                self.read_offload_error.labels(driver).inc()

    def _rsm(self, f: dict[str, Any]) -> None:
        topic, _, partition = str(f["topic_partition"]).rpartition("-")
        labels = (topic, partition)
        step = f["step"]
        if step == "copied":
            self.remote_copy_requests.labels(*labels).inc()
            self.remote_copy_bytes.labels(*labels).inc(int(f.get("bytes", 0)))
        elif step == "copy_failed":
            self.remote_copy_requests.labels(*labels).inc()
            self.remote_copy_errors.labels(*labels).inc()
        elif step == "deleted":
            self.remote_delete_requests.labels(*labels).inc()
        elif step == "fetched":
            self.remote_fetch_requests.labels(*labels).inc()
            self.remote_fetch_bytes.labels(*labels).inc(int(f.get("bytes", 0)))

    def _read_ahead(self, f: dict[str, Any]) -> None:
        self.read_ahead_ranges.labels(str(f["outcome"])).inc()
        self.read_ahead_bytes.set(int(f["charged_bytes"]))

    def _streaming_buffer(self, f: dict[str, Any]) -> None:
        labels = _topic_labels(str(f["managed_ledger"]))
        self.streaming_buffer.labels(*labels).set(int(f["buffered_bytes"]))
        self.streaming_buffer_limit.labels(*labels).set(int(f["limit"]))
