"""Liveness, black-box: `swssd run` against a private redis-server that is frozen (SIGSTOP).

A frozen Redis drops no connection, so only an active probe notices it: within 5 s the log says
"Redis not answering", the metrics say swssd_redis_up 0 and `swssd status` is not OK; after
SIGCONT every change produced before the freeze is handled, none lost.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from daemon_harness import DaemonProcess, fold, read_records, to_toml, wait_until, write_config
from swssd import DBConnector, ProducerStateTable, ProducerTable
from swssd.redis.embedded_redis import EmbeddedRedis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_up(port: int) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("swssd_redis_up "):
            return float(line.split()[1])
    return None


def status(port: int) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "swssd.cli", "status", "--metrics-url", f"127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=30,
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("read_timeout", [None, 3.0], ids=["default-timeouts", "pop-times-out"])
async def test_frozen_redis_is_reported_within_5s_and_nothing_is_lost(
    tmp_path: Path, read_timeout: float | None
) -> None:
    """Redis frozen 10 s while the daemon drains. With the default read timeout (30 s) the pops
    wait the freeze out; with a 3 s one, a pop sent before the freeze times out and its tasks are
    read back from the in-flight record (the reply is lost, the pop happened)."""
    records = tmp_path / "records.jsonl"
    port = free_port()
    with EmbeddedRedis() as server:
        assert server.process is not None
        pid = server.process.pid
        doc: dict[str, Any] = {
            "daemon": {"health_interval": 1.0},
            "metrics": {"enabled": True, "address": "127.0.0.1", "port": port},
            "orchs": [{
                "plugin": "orch_plugins:RecordingOrch",
                # small batches, so that draining the last burst takes a few hundred pops
                "tables": [{"db": "APPL_DB", "table": "LIVE_S", "pop_batch_size": 32},
                           {"db": "APPL_DB", "table": "LIVE_Q", "kind": "queue", "pop_batch_size": 32}],
                "options": {"record": str(records), "delay": 0.0005},
            }],
        }
        if read_timeout is not None:
            doc["redis"] = {"read_timeout": read_timeout}
        daemon = DaemonProcess(write_config(tmp_path, server, doc), tmp_path / "log")
        appl = await DBConnector.from_url(server.url, db_id=0, separator=":", name="APPL_DB")
        frozen = False
        try:
            daemon.wait_ready()
            assert wait_until(lambda: redis_up(port) == 1.0, 10)
            state = ProducerStateTable(appl, "LIVE_S", buffered=True)
            queue = ProducerTable(appl, "LIVE_Q", buffered=True)
            model: dict[tuple[str, str], dict[str, str]] = {}
            for i in range(4000):
                key = f"k{i % 1500}"
                if i % 7 == 3:
                    await state.delete(key)
                    model.pop(("LIVE_S", key), None)
                else:
                    await state.set(key, [("f", f"v{i}")])
                    model.setdefault(("LIVE_S", key), {})["f"] = f"v{i}"
                qkey = f"q{i % 500}"
                await queue.set(qkey, [("n", f"v{i}")])
                model.setdefault(("LIVE_Q", qkey), {})["n"] = f"v{i}"
                if i % 500 == 499 and i < 2000:
                    await state.flush()
                    await queue.flush()
            # The last 2,000 of each in one burst: the daemon is still popping them when Redis
            # freezes (a drain that ended first would leave no pop to time out).
            await state.flush()
            await queue.flush()

            os.kill(pid, signal.SIGSTOP)
            frozen = True
            stopped_at = time.monotonic()
            daemon.wait_for_log("Redis not answering", timeout=5.0)
            assert time.monotonic() - stopped_at < 5.0
            assert wait_until(lambda: redis_up(port) == 0.0, 5.0 - (time.monotonic() - stopped_at))
            code, out = status(port)
            assert code == 1 and "health: OK" not in out and "Redis unreachable" in out, out
            # Frozen for 10 s in all, then running again.
            time.sleep(max(0.0, 10.0 - (time.monotonic() - stopped_at)))
            assert daemon.proc.poll() is None
            os.kill(pid, signal.SIGCONT)
            frozen = False

            daemon.wait_for_log("Redis answering again", timeout=10.0)
            assert wait_until(lambda: redis_up(port) == 1.0, 10)
            deadline = time.monotonic() + 60
            while fold(read_records(records)) != model:
                assert time.monotonic() < deadline and daemon.proc.poll() is None, (
                    f"not every change handled:\n{daemon.log_path.read_text()[-3000:]}")
                await asyncio.sleep(0.3)
            code, out = status(port)
            assert code == 0 and "health: OK" in out, out
            if read_timeout is not None:
                assert "pop recovered" in daemon.log_path.read_text(), "no pop timed out: the test missed its point"
            assert daemon.stop() == 0
        finally:
            if frozen:
                os.kill(pid, signal.SIGCONT)
            daemon.kill()
            await appl.close()


def test_tls_against_a_plain_port_says_so_at_once(tmp_path: Path) -> None:
    """tls = true against a plain Redis port: one clear error line within the connect timeout
    (not a silent hang in retried handshakes), no READY, and SIGTERM still stops it."""
    with EmbeddedRedis() as server:
        doc = {
            "redis": {"url": f"redis://127.0.0.1:{server.port}", "tls": True},
            "logging": {"format": "json", "level": "info"},
            "orchs": [{
                "plugin": "orch_plugins:RecordingOrch",
                "tables": [{"db": "APPL_DB", "table": "T"}],
                "options": {"record": str(tmp_path / "records.jsonl")},
            }],
        }
        config = tmp_path / "swssd.toml"
        config.write_text(to_toml(doc))
        started = time.monotonic()
        daemon = DaemonProcess(config, tmp_path / "log")
        try:
            def told() -> bool:
                return any("plain (non-TLS)" in str(e.get("event")) for e in daemon.logs())

            assert wait_until(lambda: told() or daemon.proc.poll() is not None, 15.0), (
                daemon.log_path.read_text()[-3000:])
            assert told() and time.monotonic() - started < 12.0, daemon.log_path.read_text()[-3000:]
            lines = [e for e in daemon.logs() if "plain (non-TLS)" in str(e.get("event"))]
            assert lines[0]["level"] == "error" and "tls = false" in lines[0]["event"]
            assert not daemon.events("ready")
            assert daemon.stop() == 0
        finally:
            daemon.kill()
