"""The server's own metrics, in Prometheus' text format: requests, latencies, writes, the store.

``GET /metrics`` (an admin token) answers them: how many requests each route answered with each
status and how long they took, how many single adds the write queue stored in how many groups
(one embedding batch each; one transaction, or on PostgreSQL one per namespace of the group) and
how many wait, how long operations waited for the store's write lock, the change number the
server has caught up with (compare two servers' to see how far one lags), and the process's CPU
and memory. Labels are routes as declared (``/v1/memories/{memory_id}``), methods and status
codes, never a namespace, an id or a text: the figures are the operator's, summed over every
tenant.

Under ``memctl serve --workers N`` (see :mod:`.workers`) each worker is a process of its own: the
request counts and latencies are summed over every worker (Prometheus' multiprocess mode, files in
``PROMETHEUS_MULTIPROC_DIR``), and what a worker knows alone (its bank's figures, its process) is
labelled ``worker`` and comes from the worker that answered the scrape.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client import generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

if TYPE_CHECKING:
    from memory_core import MemoryBank

    from .writes import WriteQueue

__all__ = ["CONTENT_TYPE", "RequestMetrics", "ServerMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Seconds: a health check answers in about a millisecond, a recall in a few, a large batch in seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
UNMATCHED = "unmatched"  # the route label of a request no route took (a 404, or refused before routing)


class ServerMetrics:
    """The metrics of one server: request counts and latencies it is told of (:meth:`observe`),
    and the bank's and the write queue's figures, read when scraped."""

    def __init__(self, bank: "MemoryBank", writes: Callable[[], "WriteQueue | None"], worker: int | None = None):
        self.registry = CollectorRegistry()
        # One of several workers: the requests' metrics go to the shared files (not to this
        # registry) and are read back summed over the workers.
        shared = os.environ.get("PROMETHEUS_MULTIPROC_DIR") if worker is not None else None
        own = None if shared else self.registry
        self.requests = Counter("memctl_requests", "HTTP requests answered, by route, method and status.",
                                ["route", "method", "status"], registry=own)
        self.latency = Histogram("memctl_request_seconds", "Seconds from a request's arrival to the end of its "
                                 "answer, by route and method.", ["route", "method"], buckets=BUCKETS,
                                 registry=own)
        if shared:
            MultiProcessCollector(self.registry, shared)
        alone: list[Any] = [ProcessCollector(registry=None), _BankCollector(bank, writes)]
        for collector in alone:
            self.registry.register(collector if worker is None else _Labelled(collector, worker))

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        method = method if method in METHODS else "other"
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route, method).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _BankCollector:
    """What the bank and the write queue know, read at each scrape (nothing to keep up to date)."""

    def __init__(self, bank: "MemoryBank", writes: Callable[[], "WriteQueue | None"]):
        self.bank, self.writes = bank, writes

    def describe(self) -> list[Metric]:
        return []  # the names are fixed below; nothing to check against at registration

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("memctl_change_seq_seen", "The change number this server has caught up with "
                                "(every server of a bank reaches the same one).", value=self.bank.seen_seq)
        waits = self.bank.lock_waits
        yield CounterMetricFamily("memctl_store_lock_waits", "Operations that waited for the store's write lock.",
                                  value=waits.count)
        yield CounterMetricFamily("memctl_store_lock_wait_seconds", "Seconds operations waited for the store's "
                                  "write lock.", value=waits.seconds)
        writes = self.writes()
        if writes is not None:
            yield GaugeMetricFamily("memctl_adds_waiting", "Single adds waiting for the writer thread.",
                                    value=writes.queued())
            yield CounterMetricFamily("memctl_adds_stored", "Single adds the write queue stored (POST "
                                      "/v1/memories and MCP add_memory).", value=writes.rows_written)
            yield CounterMetricFamily("memctl_add_groups", "Groups the write queue stored them in: one embedding "
                                      "batch each, and one transaction (on PostgreSQL one per namespace "
                                      "of the group).", value=writes.groups_written)


class _Labelled:
    """Another collector's metrics, each sample labelled with the worker that reports it."""

    def __init__(self, collector: Any, worker: int):
        self.collector, self.worker = collector, str(worker)

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        for metric in self.collector.collect():
            labelled = Metric(metric.name, metric.documentation, metric.type, metric.unit)
            for sample in metric.samples:
                labelled.add_sample(sample.name, {**sample.labels, "worker": self.worker}, sample.value,
                                    sample.timestamp, sample.exemplar)
            yield labelled


class RequestMetrics:
    """Counts and times every HTTP answer by the route that took it (pure ASGI, outermost)."""

    def __init__(self, app: Any, metrics: ServerMetrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = 500  # what the client gets if the app fails before answering

        async def answering(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, answering)
        finally:
            # The router puts the route it chose in the scope; its declared path is the label.
            route = getattr(scope.get("route"), "path", None) or UNMATCHED
            self.metrics.observe(route, scope.get("method", ""), status, time.perf_counter() - started)
