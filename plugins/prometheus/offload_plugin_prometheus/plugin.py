"""The hook implementations, loaded from the ``offload_core.plugins`` entry
point. Metrics are the process's (as Pulsar's broker keeps one
``LedgerOffloaderStats``): every plugin manager in the process that loads
this module feeds the same :data:`METRICS`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from prometheus_client import start_http_server

from offload_core import hookimpl
from offload_core.errors import ConfigError
from offload_core.hooks import Event

from .metrics import OffloadMetrics

__all__ = ["METRICS", "PrometheusServer"]

METRICS = OffloadMetrics()


@hookimpl
def offload_core_on_event(event: Event) -> None:
    METRICS.observe(event, now=time.monotonic())


@dataclass
class PrometheusServer:
    """A running ``/metrics`` endpoint."""

    url: str
    _server: Any
    _thread: Any

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@hookimpl
def offload_core_serve_metrics(host: str, port: int) -> PrometheusServer:
    try:
        server, thread = start_http_server(port, addr=host, registry=METRICS.registry)
    except OSError as exc:
        raise ConfigError(
            f"metrics port {host}:{port} cannot be served ({exc.strerror or exc}); choose another"
        ) from None
    bound = server.server_address[1]
    return PrometheusServer(f"http://{host}:{bound}/metrics", server, thread)
