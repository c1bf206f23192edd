"""The daemon's figures in Prometheus form: per table popped/handled/retried/failed/dead-lettered,
pending and handler latency; per connection reconnects; event-loop lag and Redis reachability.

Served by prometheus-client on a loopback address when enabled; `swssd status` reads them back.
"""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class DaemonMetrics:
    """One registry per daemon, so tests and several daemons in one process do not collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.popped = Counter("swssd_popped", "Tasks popped from Redis", ["table"], registry=r)
        self.handled = Counter("swssd_handled", "Tasks handled successfully", ["table"], registry=r)
        self.retried = Counter("swssd_retried", "Handler attempts that asked for or needed a retry", ["table"], registry=r)
        self.failed = Counter("swssd_failed", "Handler attempts that raised or timed out", ["table"], registry=r)
        self.dead_lettered = Counter("swssd_dead_lettered", "Tasks given up after max_attempts", ["table"], registry=r)
        self.pending = Gauge("swssd_pending", "Tasks waiting in the Orch's pending map", ["table"], registry=r)
        self.latency = Histogram(
            "swssd_handler_latency_seconds", "Time from pop to handled", ["table"],
            buckets=LATENCY_BUCKETS, registry=r,
        )
        self.reconnects = Counter("swssd_reconnects", "Connections re-established", ["connection"], registry=r)
        self.loop_lag = Gauge("swssd_loop_lag_seconds", "How late the event loop ran a 0.25 s timer", registry=r)
        self.redis_up = Gauge("swssd_redis_up", "1 while every Redis connection answers", registry=r)
        self.heartbeat = Gauge("swssd_heartbeat_timestamp_seconds", "Unix time the event loop last ran the lag probe", registry=r)
        self.ready = Gauge("swssd_ready", "1 once subscribed and the first drain is done", registry=r)

    def serve(self, host: str, port: int) -> None:
        """Serve /metrics from a background thread (prometheus-client's own server)."""
        start_http_server(port, addr=host, registry=self.registry)

    async def watch_loop_lag(self, interval: float = 0.25) -> None:
        """Measure how late the loop wakes up; runs until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(interval)
            self.loop_lag.set(max(0.0, loop.time() - start - interval))
            self.heartbeat.set(time.time())
