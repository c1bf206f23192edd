"""`swssd status` against a real metrics endpoint: the table, and the exit code as a health check."""

from __future__ import annotations

import argparse
import time

import pytest

from swssd.embedded_redis import free_port
from swssd.metrics import DaemonMetrics
from swssd.tools import status


def args_for(port: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    status.add_arguments(parser)
    return parser.parse_args(["--metrics-url", f"http://127.0.0.1:{port}/metrics", "--timeout", "2"])


@pytest.fixture
def served() -> tuple[DaemonMetrics, int]:
    metrics = DaemonMetrics()
    port = free_port()
    metrics.serve("127.0.0.1", port)
    return metrics, port


def test_healthy_table(served: tuple[DaemonMetrics, int], capsys: pytest.CaptureFixture[str]) -> None:
    metrics, port = served
    metrics.popped.labels("PORT_TABLE").inc(7)
    metrics.handled.labels("PORT_TABLE").inc(6)
    metrics.failed.labels("PORT_TABLE").inc(1)
    metrics.pending.labels("PORT_TABLE").set(1)
    metrics.latency.labels("PORT_TABLE").observe(0.004)
    metrics.reconnects.labels("pubsub").inc(2)
    metrics.redis_up.set(1)
    metrics.ready.set(1)
    metrics.heartbeat.set(time.time())
    assert status.run(args_for(port)) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("PORT_TABLE"))
    assert row.split() == ["PORT_TABLE", "7", "6", "0", "1", "0", "1", "4.00"]
    assert "pubsub 2" in out
    assert "health: OK" in out


def test_unhealthy_when_redis_down_or_stalled(served: tuple[DaemonMetrics, int], capsys: pytest.CaptureFixture[str]) -> None:
    metrics, port = served
    metrics.redis_up.set(0)
    metrics.ready.set(1)
    metrics.heartbeat.set(time.time() - 60)
    assert status.run(args_for(port)) == 1
    out = capsys.readouterr().out
    assert "Redis unreachable" in out and "stalled" in out


def test_unreachable_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    assert status.run(args_for(free_port())) == 2
    assert "cannot reach" in capsys.readouterr().err
