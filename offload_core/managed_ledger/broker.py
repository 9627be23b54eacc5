"""The embedded broker: one data directory, its metadata, its topics."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..offload.reading.read_ahead import ReadAheadPool
from ..plugins import PluginManager
from .background import BackgroundWork
from .config import BrokerConfig
from .lifecycle.offload_workers import OffloadWorkers
from .lifecycle.offloaders import OffloaderProvider, check_driver_options
from .lifecycle.policies import PolicyStore, TopicName
from .managed_ledger import ManagedLedger, unclaimed_hot_files
from .metadata_store import MetadataStore, SqliteMetadataStore
from .streaming.segment_workers import SegmentWorkers
from .workers.worker_processes import WorkerLauncher, WorkersUnavailable

__all__ = ["Broker"]


class Broker:
    """Opens managed ledgers (topics) in ``data_dir``.

    Layout: ``metadata.db`` (SQLite metadata store), ``ledgers/`` (hot-tier
    files), ``bucket/`` (the default offload target, a local directory),
    ``locks/``. ``store`` replaces the SQLite store (a ZooKeeper or etcd
    one, say); ``clock`` is for tests. Threshold offloads, streaming,
    retention and hot-copy deletion run on the broker's :attr:`background`
    threads, never on a producer's: :meth:`drain` waits for them,
    :meth:`close` finishes them first. Every
    ``retentionCheckIntervalInSeconds`` (120; 0: never) each open topic's
    :meth:`~ManagedLedger.run_maintenance` is queued there too, so age
    rollover, time thresholds, the deletion lag and retention apply without
    anyone calling it.

    ``driver_options`` go to the offload store's driver (credentials such
    as ``access_key_id`` / ``secret_access_key`` instead of the SDK's
    default chain); they are never recorded with a ledger nor printed, and
    never sent to worker processes: a broker given them offloads on its own
    threads. Raises :class:`ConfigError` if they name what the config sets
    (bucket, endpoint, region, transforms).
    """

    def __init__(
        self,
        data_dir: str | Path,
        config: BrokerConfig | None = None,
        *,
        plugin_manager: PluginManager | None = None,
        store: MetadataStore | None = None,
        clock: Callable[[], float] = time.time,
        driver_options: Mapping[str, Any] | None = None,
    ) -> None:
        check_driver_options(driver_options or {})  # before anything needs closing
        self.data_dir = Path(data_dir).resolve()
        if self.data_dir.exists() and not self.data_dir.is_dir():
            raise ConfigError(f"data directory {self.data_dir} is not a directory; choose another --data-dir")
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"data directory {self.data_dir} cannot be created ({exc.strerror or exc})") from None
        self.config = config if config is not None else BrokerConfig()
        self.plugins = plugin_manager if plugin_manager is not None else PluginManager()
        # First, before anything needs closing: a port that cannot be bound fails the start cleanly.
        self.metrics_server = (
            self.plugins.serve_metrics(self.config.metrics_port) if self.config.metrics_port is not None else None
        )
        self.store = store if store is not None else SqliteMetadataStore(self.data_dir / "metadata.db")
        self.policies = PolicyStore(self.store, self.config.policies, transform=self.plugins.transform)
        self.read_ahead = ReadAheadPool(
            total_bytes=self.config.read_ahead_bytes,
            reader_bytes=self.config.read_ahead_bytes_per_reader,
            range_size=self.config.read_ahead_range_bytes,
            emit=self.plugins.emit,
        )
        self.offloaders = OffloaderProvider(self.plugins, self.data_dir, self.plugins.emit,
                                            read_ahead=self.read_ahead,
                                            entry_offsets=self.config.entry_offsets,
                                            driver_options=driver_options)  # fmt: skip
        self._clock = clock
        self._open: dict[TopicName, ManagedLedger] = {}
        self.background = BackgroundWork(self.plugins.emit)
        # Worker processes need every plugin from entry points: a broker given
        # its own plugin manager (plugins registered in code) offloads in-process,
        # as does one given driver options (credentials stay in this process).
        # Where no worker process can start, the launcher says so once and
        # the work runs on the broker's threads.
        in_process = plugin_manager is not None or bool(driver_options)
        workers = 0 if in_process else self.config.offload_worker_processes
        launcher = WorkerLauncher()
        self.offload_workers = OffloadWorkers(workers, self.plugins.emit, launcher) if workers > 0 else None
        self.segment_workers = (
            SegmentWorkers(
                self.plugins.emit, launcher, data_dir=str(self.data_dir), entry_offsets=self.config.entry_offsets
            )
            if workers > 0
            else None
        )
        self._stopping = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.config.maintenance_interval_seconds > 0:
            self._ticker = threading.Thread(target=self._maintain_periodically, name="offload-core-maintenance",
                                            daemon=True)  # fmt: skip
            self._ticker.start()

    def _maintain_periodically(self) -> None:
        while not self._stopping.wait(self.config.maintenance_interval_seconds):
            for ledger in list(self._open.values()):
                self.background.submit(f"maintenance of {ledger.name}", ledger.run_maintenance)

    def topic(self, name: str | TopicName) -> ManagedLedger:
        """Open (or return the already open) managed ledger of topic ``name``."""
        topic = name if isinstance(name, TopicName) else TopicName.parse(name)
        ledger = self._open.get(topic)
        if ledger is None:
            ledger = ManagedLedger(
                topic,
                data_dir=self.data_dir,
                store=self.store,
                config=self.config,
                policies=self.policies,
                offloaders=self.offloaders,
                emit=self.plugins.emit,
                clock=self._clock,
                schedule=self.background.submit,
                schedule_after=self.background.submit_after,
                offload_workers=self.offload_workers,
                segment_workers=self.segment_workers,
            )
            self._open[topic] = ledger
        return ledger

    def topics(self) -> list[TopicName]:
        """Every topic with a managed ledger in this data directory."""
        names = []
        for path in self.store.children("managed-ledgers/"):
            tenant, namespace, _persistent, local = path.removeprefix("managed-ledgers/").split("/")
            names.append(TopicName(tenant, namespace, local))
        return names

    def unclaimed_hot_files(self) -> list[int]:
        """Ids of hot-tier ledger files holding entries that no topic's
        metadata names (left by a damaged metadata store, or copied in)."""
        return unclaimed_hot_files(self.store, self.data_dir / "ledgers")

    def start_workers(self) -> None:
        """Start the offload and segment worker processes now rather than at
        first use, so no producer shares the machine with their start-up
        later (nothing to do with workers off, or where no worker process
        can start: the broker then works on its threads, and logs that once)."""
        try:
            if self.offload_workers is not None:
                self.offload_workers.start()
            if self.segment_workers is not None:
                self.segment_workers.start()
        except WorkersUnavailable:
            pass  # logged by the launcher

    def drain(self, timeout: float | None = None) -> bool:
        """Wait for the background work started so far (threshold offloads,
        trims, streaming pumps, and the pumps deferred for appends made
        within a second of the last, started now) and what it starts; false
        if ``timeout`` ran out first. A pump that starts later is not waited
        for: one a segment's room notice starts when a full buffer empties,
        or a segment worker's report on offers sent without waiting."""
        return self.background.drain(timeout)

    def close(self) -> None:
        """Finish the background work, then close every topic and the store."""
        self._stopping.set()
        if self._ticker is not None:
            self._ticker.join()
        self.background.close()
        for ledger in self._open.values():
            ledger.close()
        self._open.clear()
        if self.offload_workers is not None:
            self.offload_workers.close()
        if self.segment_workers is not None:
            self.segment_workers.close()
        self.offloaders.close()
        self.read_ahead.close()
        self.store.close()
        if self.metrics_server is not None:
            self.metrics_server.close()

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
