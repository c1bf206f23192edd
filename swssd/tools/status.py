"""`swssd status`: a running daemon's figures as a readable table, and a health check.

The endpoint is the one the daemon's config names ([metrics] address and port), so an operator
passes the same --config as to `swssd run`; --metrics-url overrides it (`host:port` is enough).
Exit 0 when healthy; 1 when unhealthy (Redis down, event loop stalled or lagging, a table stalled,
not ready);
2 when the daemon's metrics endpoint cannot be reached or the config names none.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families

from ..errors import ConfigError
from ..orch.config import DEFAULT_CONFIG, MetricsConfig
from ..orch.config_file import load_config

COLUMNS = ("popped", "handled", "retried", "failed", "dead_lettered", "pending")
#: What the two columns people mix up count (the log's "handler failed; will retry" is a failure).
LEGEND = ("retried: handler calls that raised Retry (the task waits for a dependency); failed: handler errors "
          "and time-outs, each run again after a backoff until max_attempts, then dead-lettered")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", "-c", type=Path, metavar="FILE",
        help=f"the daemon's TOML config: its [metrics] address and port (default: {DEFAULT_CONFIG} if present, "
        "else 127.0.0.1:9750)",
    )
    parser.add_argument(
        "--metrics-url", metavar="URL",
        help="the endpoint itself, instead of the config's: http://host:port/metrics, or host:port",
    )
    parser.add_argument("--max-lag", type=float, default=1.0, help="loop lag in seconds above which it is unhealthy")
    parser.add_argument("--max-silence", type=float, default=10.0, help="seconds without a heartbeat: stalled")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the endpoint")


class EndpointError(ValueError):
    """No endpoint to ask: the config cannot be read or does not serve metrics."""


def normalize_url(text: str) -> str:
    """`host:port`, `http://host:port` or a full URL -> a URL with the /metrics path."""
    url = text if "://" in text else f"http://{text}"
    return url if urlsplit(url).path not in ("", "/") else url.rstrip("/") + "/metrics"


def config_url(metrics: MetricsConfig) -> str:
    """The URL that reaches what [metrics] serves (an any-address bind is asked on loopback)."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(metrics.address, metrics.address)
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{metrics.port}/metrics"


def endpoint(args: argparse.Namespace) -> str:
    """--metrics-url, else the config's [metrics], else the daemon's default address."""
    if args.metrics_url:
        return normalize_url(args.metrics_url)
    path = args.config
    if path is None:
        if not Path(DEFAULT_CONFIG).exists():
            return config_url(MetricsConfig())
        path = Path(DEFAULT_CONFIG)
    try:
        config = load_config(path)
    except ConfigError as exc:
        raise EndpointError(str(exc)) from None
    if not config.metrics.enabled:
        raise EndpointError(f"{path}: the daemon serves no metrics: set [metrics] enabled = true (and restart it)")
    return config_url(config.metrics)


@dataclass
class Snapshot:
    """What the endpoint said, reduced to what the table and the health check need."""

    tables: dict[tuple[str, str], dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    scalars: dict[str, float] = field(default_factory=dict)
    reconnects: dict[str, float] = field(default_factory=dict)
    #: per plugin timer (orch, timer): its figures, `timer_` and `_total` cut from their names
    timers: dict[tuple[str, str], dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    #: dead letters kept in Redis, per database
    dead_letters: dict[str, float] = field(default_factory=dict)


def parse(text: str) -> Snapshot:
    snap = Snapshot()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            name = sample.name.removeprefix("swssd_")
            if name.endswith("_created"):
                continue
            if "table" in sample.labels:
                row = snap.tables[(sample.labels.get("db", ""), sample.labels["table"])]
                column = name.removesuffix("_total")
                if column in COLUMNS:
                    row[column] = sample.value
                elif name == "handler_latency_seconds_sum":
                    row["latency_sum"] = sample.value
                elif name == "handler_latency_seconds_count":
                    row["latency_count"] = sample.value
                elif name == "table_stalled":
                    row["stalled"] = sample.value
                elif name == "table_deaf":
                    row["deaf"] = sample.value
            elif "timer" in sample.labels:
                column = name.removeprefix("timer_").removesuffix("_total")
                snap.timers[(sample.labels.get("orch", ""), sample.labels["timer"])][column] = sample.value
            elif name == "dead_letters":
                snap.dead_letters[sample.labels.get("db", "?")] = sample.value
            elif name.startswith("reconnects"):
                snap.reconnects[sample.labels.get("connection", "?")] = sample.value
            else:
                snap.scalars[name] = sample.value
    return snap


def problems(snap: Snapshot, max_lag: float, max_silence: float, now: float | None = None) -> list[str]:
    """Why the daemon is unhealthy; empty when it is healthy."""
    found = []
    redis_up = snap.scalars.get("redis_up", 0.0) >= 1.0
    ready = snap.scalars.get("ready", 0.0) >= 1.0
    if not redis_up and not ready:
        found.append("starting: waiting for Redis (Redis unreachable)")
    elif not redis_up:
        found.append("Redis unreachable")
    stalled = [f"{db} {table}" for (db, table), row in sorted(snap.tables.items()) if row.get("stalled", 0.0) >= 1.0]
    if stalled:
        found.append("table stalled (work pending, no handler call ended for its stall_after): " + ", ".join(stalled))
    stuck = [f"{orch} {name}" for (orch, name), row in sorted(snap.timers.items()) if row.get("stalled", 0.0) >= 1.0]
    if stuck:
        found.append("timer stalled (one call has gone on past its stall_after): " + ", ".join(stuck))
    if not ready and not stalled and not stuck:
        found.append("not ready (still starting or stopping)")
    deaf = [f"{db} {table}" for (db, table), row in sorted(snap.tables.items()) if row.get("deaf", 0.0) >= 1.0]
    if deaf:
        found.append("keyspace events off, no change seen (set notify-keyspace-events AKE in Redis, or "
                     "[daemon] enable_keyspace_events = true): " + ", ".join(deaf))
    lag = snap.scalars.get("loop_lag_seconds", 0.0)
    if lag > max_lag:
        found.append(f"event loop lagging {lag:.3f}s")
    beat = snap.scalars.get("heartbeat_timestamp_seconds")
    now = time.time() if now is None else now
    if beat is None or now - beat > max_silence:
        found.append("event loop stalled (no heartbeat)")
    return found


def render(snap: Snapshot) -> str:
    head = ("db", "table", *COLUMNS, "avg ms")
    rows = []
    for db, table in sorted(snap.tables):
        t = snap.tables[(db, table)]
        count = t.get("latency_count", 0.0)
        avg = f"{t.get('latency_sum', 0.0) / count * 1000:.2f}" if count else "-"
        rows.append((db, table, *(f"{int(t.get(c, 0))}" for c in COLUMNS), avg))
    widths = [max(len(str(r[i])) for r in (head, *rows)) for i in range(len(head))]
    lines = ["  ".join(str(v).ljust(w) if i < 2 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
             for r in (head, *rows)]
    lag = snap.scalars.get("loop_lag_seconds", 0.0)
    reconnects = ", ".join(f"{k} {int(v)}" for k, v in sorted(snap.reconnects.items())) or "none"
    lines.append("")
    lines.append(LEGEND)
    lines.append(f"loop lag {lag * 1000:.1f} ms; reconnects: {reconnects}")
    if any(snap.dead_letters.values()):
        kept = ", ".join(f"{db} {int(n)}" for db, n in sorted(snap.dead_letters.items()) if n)
        lines.append(f"dead letters kept: {kept} (swssd dead-letters list)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        url = endpoint(args)
    except EndpointError as exc:
        print(f"swssd status: error: {exc}", file=sys.stderr)
        return 2
    try:
        with urllib.request.urlopen(url, timeout=args.timeout) as resp:
            text = resp.read().decode()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        print(f"swssd status: cannot reach {url} ({exc}); is the daemon running with [metrics] enabled?",
              file=sys.stderr)
        return 2
    snap = parse(text)
    print(render(snap))
    found = problems(snap, args.max_lag, args.max_silence)
    print("health: " + ("OK" if not found else "UNHEALTHY: " + "; ".join(found)))
    return 1 if found else 0
