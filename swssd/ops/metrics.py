"""The daemon's figures in Prometheus form, read from the daemon when scraped.

Per table: popped, handled, retried, failed, dead-lettered, pending and a handler-latency
histogram; per plugin timer: calls, failures, time-outs, skipped ticks, stalled and a duration
histogram; per connection kind: reconnects; the event loop's lag and heartbeat; whether Redis
answers and whether the daemon is serving. Nothing is counted twice on the hot path: the
collector reads the workers' own counters at scrape time (in the endpoint's scrape thread, see
metrics_server.py; plain int/float reads are safe under the GIL).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from .metrics_server import MetricsServer

#: Upper bounds (seconds) of the handler latency histogram buckets; +Inf is implied.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


# What the collector reads, as protocols: the daemon (swssd.orch) hands itself over and this
# module never imports it, so the operations layer stays below the daemon it reports on.


class TableCounters(Protocol):
    """A table worker's counters (swssd.orch.worker.TableStats)."""

    popped: int
    handled: int
    retried: int
    failed: int
    dead_lettered: int
    set_aside: int
    pop_errors: int
    #: handler calls per LATENCY_BUCKETS bucket, the last one past the largest bound
    latency_counts: list[int]
    handler_seconds: float


class TableFigures(Protocol):
    """One table's worker."""

    @property
    def db_name(self) -> str: ...
    @property
    def table(self) -> str: ...
    @property
    def stats(self) -> TableCounters: ...
    @property
    def pending_count(self) -> int: ...
    @property
    def alive(self) -> bool: ...
    @property
    def stalled(self) -> bool: ...
    @property
    def deaf(self) -> bool: ...
    def without_progress(self) -> float: ...


class TimerCounters(Protocol):
    """A plugin timer's counters (swssd.orch.timers.TimerStats)."""

    runs: int
    failed: int
    timed_out: int
    skipped: int
    seconds: float
    #: calls per LATENCY_BUCKETS bucket, the last one past the largest bound
    latency_counts: list[int]


class TimerFigures(Protocol):
    """One timer of one plugin (swssd.orch.timers.TimerRun)."""

    @property
    def orch_name(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def stats(self) -> TimerCounters: ...
    @property
    def stalled(self) -> bool: ...
    def without_progress(self) -> float: ...


class Reconnecting(Protocol):
    """A connection that counts how often it was re-established (the pub/sub reader)."""

    @property
    def reconnects(self) -> int: ...


class ZmqFigures(Protocol):
    """A ZMQ server's message counters."""

    @property
    def received(self) -> int: ...
    @property
    def changes(self) -> int: ...
    @property
    def malformed(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def peers(self) -> int: ...
    @property
    def refused_peers(self) -> int: ...
    @property
    def unfinished_peers(self) -> int: ...
    @property
    def buffered(self) -> int: ...
    @property
    def paused(self) -> bool: ...


class DeadLetterSizes(Protocol):
    """The dead-letter store (swssd.orch.dead_letters): entries kept per database."""

    @property
    def sizes(self) -> Mapping[str, int]: ...


class DaemonFigures(Protocol):
    """What the daemon shows on a scrape and on /health."""

    @property
    def workers(self) -> Sequence[TableFigures]: ...
    @property
    def select(self) -> Reconnecting: ...
    @property
    def command_reconnects(self) -> int: ...
    @property
    def zmq_servers(self) -> Mapping[str, ZmqFigures]: ...
    @property
    def redis_up(self) -> bool: ...
    @property
    def serving(self) -> bool: ...
    @property
    def timer_runs(self) -> Sequence[TimerFigures]: ...
    @property
    def dead_letters(self) -> DeadLetterSizes: ...


class LoopProbe:
    """How late the event loop runs a short timer, and when it last did: a stalled loop stops
    the heartbeat, a busy one shows lag."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.lag = 0.0
        self.heartbeat = time.time()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(self.interval)
            self.lag = max(0.0, loop.time() - start - self.interval)
            self.heartbeat = time.time()


class DaemonCollector(Collector):
    """Builds the metric families from a running daemon on every scrape."""

    def __init__(self, daemon: DaemonFigures, probe: LoopProbe) -> None:
        self.daemon = daemon
        self.probe = probe

    def collect(self) -> Iterator[Metric]:
        d = self.daemon
        labels = ["db", "table"]
        counters = {
            name: CounterMetricFamily(f"swssd_{name}", help_text, labels=labels)
            for name, help_text in (
                ("popped", "Tasks popped from Redis"),
                ("handled", "Tasks handled successfully"),
                ("retried", "Handler calls that raised Retry (the task stayed pending)"),
                ("failed", "Handler calls that raised or timed out"),
                ("dead_lettered", "Tasks given up after max_attempts"),
                ("set_aside", "Malformed or wrong-type entries the pop set aside (dead-letter list in Redis)"),
                ("pop_errors", "Pops Redis refused (e.g. a wrong-type key set); the table waits"),
            )
        }
        pending = GaugeMetricFamily("swssd_pending", "Tasks in memory: pending plus being handled", labels=labels)
        stalled = GaugeMetricFamily(
            "swssd_table_stalled", "1 while the table has had work due for its stall_after seconds and no "
            "handler call ended", labels=labels,
        )
        deaf = GaugeMetricFamily(
            "swssd_table_deaf", "1 while Redis does not publish the keyspace events the table follows "
            "(notify-keyspace-events off): it gets no change", labels=labels,
        )
        latency = HistogramMetricFamily("swssd_handler_latency_seconds", "Duration of handler calls", labels=labels)
        for worker in list(d.workers):
            key = [worker.db_name, worker.table]
            stats = worker.stats
            for name, family in counters.items():
                family.add_metric(key, getattr(stats, name))
            pending.add_metric(key, worker.pending_count)
            stalled.add_metric(key, float(worker.stalled))
            deaf.add_metric(key, float(worker.deaf))
            cumulative, buckets = 0, []
            for bound, count in zip((*LATENCY_BUCKETS, float("inf")), stats.latency_counts):
                cumulative += count
                buckets.append((_bound(bound), cumulative))
            latency.add_metric(key, buckets, stats.handler_seconds)
        yield from counters.values()
        yield pending
        yield stalled
        yield deaf
        yield latency
        reconnects = CounterMetricFamily("swssd_reconnects", "Connections re-established", labels=["connection"])
        reconnects.add_metric(["pubsub"], d.select.reconnects)
        reconnects.add_metric(["command"], d.command_reconnects)
        yield reconnects
        yield from _zmq_families(d)
        yield from _timer_families(d)
        dead = GaugeMetricFamily("swssd_dead_letters", "Dead letters kept in Redis (`swssd dead-letters list`), "
                                 "per database", labels=["db"])
        for db, size in sorted(dict(d.dead_letters.sizes).items()):
            dead.add_metric([db], size)
        yield dead
        yield GaugeMetricFamily(
            "swssd_loop_lag_seconds", "How late the event loop ran a 0.25 s timer", value=self.probe.lag
        )
        yield GaugeMetricFamily(
            "swssd_heartbeat_timestamp_seconds",
            "Unix time the event loop last ran the lag probe",
            value=self.probe.heartbeat,
        )
        yield GaugeMetricFamily("swssd_redis_up", "1 while every Redis connection answers", value=float(d.redis_up))
        ready = (d.serving and all(w.alive and not w.stalled for w in list(d.workers))
                 and not any(t.stalled for t in list(d.timer_runs)))
        yield GaugeMetricFamily("swssd_ready", "1 once subscribed and the first drain is done, while every "
                                "table's worker runs and no table or timer is stalled", value=float(ready))


def _zmq_families(d: DaemonFigures) -> Iterator[Metric]:
    """Per ZmqServer endpoint: messages received, malformed and dropped (no consumer)."""
    if not d.zmq_servers:
        return
    families: list[tuple[CounterMetricFamily | GaugeMetricFamily, str]] = [
        (CounterMetricFamily("swssd_zmq_received", "ZMQ messages received", labels=["endpoint"]), "received"),
        (CounterMetricFamily("swssd_zmq_changes", "Changes in received ZMQ messages handed to tables",
                             labels=["endpoint"]), "changes"),
        (CounterMetricFamily("swssd_zmq_malformed", "ZMQ messages that could not be read (logged, dropped)",
                             labels=["endpoint"]), "malformed"),
        (CounterMetricFamily("swssd_zmq_dropped", "ZMQ messages for a table no consumer here takes",
                             labels=["endpoint"]), "dropped"),
    ]
    families += [
        (CounterMetricFamily("swssd_zmq_refused_peers", "ZMQ connections refused: the peer limit was reached",
                             labels=["endpoint"]), "refused_peers"),
        (CounterMetricFamily("swssd_zmq_unfinished_peers", "ZMQ connections closed: they sent more of an "
                             "unfinished message than a message may hold", labels=["endpoint"]), "unfinished_peers"),
        (GaugeMetricFamily("swssd_zmq_peers", "ZMQ connections held", labels=["endpoint"]), "peers"),
        (GaugeMetricFamily("swssd_zmq_buffered_bytes", "Bytes of received ZMQ changes not popped yet",
                           labels=["endpoint"]), "buffered"),
        (GaugeMetricFamily("swssd_zmq_paused", "1 while the server does not read: its tables hold all they may",
                           labels=["endpoint"]), "paused"),
    ]
    for endpoint, server in d.zmq_servers.items():
        for family, attr in families:
            family.add_metric([endpoint], float(getattr(server, attr)))
    for family, _ in families:
        yield family


def _timer_families(d: DaemonFigures) -> Iterator[Metric]:
    """Per plugin timer: calls, failures, time-outs, skipped ticks, whether stalled, call durations."""
    timers = list(d.timer_runs)
    if not timers:
        return
    labels = ["orch", "timer"]
    counters = [
        (CounterMetricFamily("swssd_timer_runs", "Timer calls that ended, whatever their outcome", labels=labels),
         "runs"),
        (CounterMetricFamily("swssd_timer_failed", "Timer calls that raised (logged with the traceback)",
                             labels=labels), "failed"),
        (CounterMetricFamily("swssd_timer_timed_out", "Timer calls that ran past handler_timeout",
                             labels=labels), "timed_out"),
        (CounterMetricFamily("swssd_timer_skipped", "Timer ticks skipped because a call ran past them",
                             labels=labels), "skipped"),
    ]
    stalled = GaugeMetricFamily("swssd_timer_stalled", "1 while one call of the timer has gone on past its "
                                "stall_after", labels=labels)
    latency = HistogramMetricFamily("swssd_timer_duration_seconds", "Duration of timer calls", labels=labels)
    for run in timers:
        key = [run.orch_name, run.name]
        for family, attr in counters:
            family.add_metric(key, getattr(run.stats, attr))
        stalled.add_metric(key, float(run.stalled))
        cumulative, buckets = 0, []
        for bound, count in zip((*LATENCY_BUCKETS, float("inf")), run.stats.latency_counts):
            cumulative += count
            buckets.append((_bound(bound), cumulative))
        latency.add_metric(key, buckets, run.stats.seconds)
    for family, _ in counters:
        yield family
    yield stalled
    yield latency


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


def health(daemon: DaemonFigures) -> tuple[bool, str]:
    """What /health answers: healthy once serving, while Redis answers, every table's worker
    runs and makes progress with its work, and no plugin timer's call is stuck."""
    workers = list(daemon.workers)
    dead = sorted(w.table for w in workers if not w.alive)
    if dead and daemon.serving:
        return False, f"table worker stopped: {', '.join(dead)}"
    stalled = [(w.db_name, w.table, w.without_progress(), w.pending_count) for w in workers if w.stalled]
    if stalled:
        return False, "table stalled: " + "; ".join(
            f"{db} {table}: no handler call ended for {seconds:.0f} s with {pending} pending"
            for db, table, seconds, pending in sorted(stalled)
        )
    stuck = [(t.orch_name, t.name, t.without_progress()) for t in list(daemon.timer_runs) if t.stalled]
    if stuck:
        return False, "timer stalled: " + "; ".join(
            f"{orch} {name}: one call has gone on for {seconds:.0f} s" for orch, name, seconds in sorted(stuck)
        )
    deaf = sorted(f"{w.db_name} {w.table}" for w in workers if w.deaf)
    if deaf:
        return False, ("keyspace events off, no change seen: " + ", ".join(deaf) + " (Redis's notify-keyspace-events "
                       "lacks K and A or g+h: set it to AKE, or [daemon] enable_keyspace_events = true)")
    if not daemon.redis_up:
        return False, "Redis unreachable"
    if not daemon.serving:
        return False, "not ready yet"
    return True, "OK"


async def serve(daemon: DaemonFigures, probe: LoopProbe, host: str, port: int) -> MetricsServer:
    """Serve /metrics and /health for `daemon` on the running loop; OSError when host:port cannot
    be bound. close() stops it."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DaemonCollector(daemon, probe))
    server = MetricsServer(lambda: generate_latest(registry), lambda: health(daemon))
    await server.start(host, port)
    return server
