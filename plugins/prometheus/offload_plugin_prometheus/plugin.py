"""The hook implementations, loaded from the ``offload_core.plugins`` entry
point. Metrics are the process's (as Pulsar's broker keeps one
``LedgerOffloaderStats``): every plugin manager in the process that loads
this module feeds the same ``METRICS``, made (and prometheus_client
imported) at the first event or server, not when a registry loads the
plugin: every ``offload`` verb builds one."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from offload_core import hookimpl
from offload_core.errors import ConfigError
from offload_core.hooks import Event

if TYPE_CHECKING:
    from .metrics import OffloadMetrics

    METRICS: OffloadMetrics  # made on first use: see __getattr__

__all__ = ["METRICS", "PrometheusServer"]


@functools.cache
def _metrics() -> OffloadMetrics:
    from .metrics import OffloadMetrics

    return OffloadMetrics()


def __getattr__(name: str) -> Any:
    if name == "METRICS":
        return _metrics()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def offload_core_on_event(event: Event) -> None:
    _metrics().observe(event, now=time.monotonic())


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
    from prometheus_client import start_http_server

    try:
        server, thread = start_http_server(port, addr=host, registry=_metrics().registry)
    except OSError as exc:
        raise ConfigError(
            f"metrics port {host}:{port} cannot be served ({exc.strerror or exc}); choose another"
        ) from None
    bound = server.server_address[1]
    return PrometheusServer(f"http://{host}:{bound}/metrics", server, thread)
