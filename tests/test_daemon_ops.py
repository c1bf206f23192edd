"""The daemon as systemd and an operator see it: notify datagrams, the metrics endpoint, `swssd status`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from daemon_harness import TESTS_DIR, read_records, wait_until, write_config
from swssd import DBConnector, ProducerStateTable
from swssd.redis.embedded_redis import EmbeddedRedis, free_port


def recording(record: Path, tables: list[str]) -> dict:
    return {
        "plugin": "orch_plugins:RecordingOrch",
        "tables": [{"db": "APPL_DB", "table": t} for t in tables],
        "options": {"record": str(record)},
    }


def start_daemon(config: Path, log: Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS_DIR), env.get("PYTHONPATH")]))
    env.pop("SWSSD_DB_CONFIG", None)
    env.update(extra_env or {})
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "swssd.cli", "run", "--config", str(config)],
                                stdout=out, stderr=subprocess.STDOUT, env=env)


def stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()


def swssd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "swssd.cli", *args], capture_output=True, text=True, timeout=60)


class NotifySocket:
    """The datagram socket systemd would listen on."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setblocking(False)
        self.messages: list[str] = []

    def drain(self) -> list[str]:
        while True:
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except BlockingIOError:
                return self.messages

    def seen(self, prefix: str) -> bool:
        return any(m.startswith(prefix) or f"\n{prefix}" in m for m in self.drain())


async def test_notify_protocol_in_order(clean_redis: EmbeddedRedis, db: DBConnector, tmp_path: Path) -> None:
    # Data waiting before start: READY=1 only comes once it was drained.
    await ProducerStateTable(db, "OPS_A").set_many([(f"k{i}", [("f", "v")]) for i in range(500)])
    records = tmp_path / "records.jsonl"
    config = write_config(
        tmp_path, clean_redis, {"daemon": {"health_interval": 0.2}, "orchs": [recording(records, ["OPS_A"])]}
    )
    notify = NotifySocket(tmp_path / "notify.sock")
    proc = start_daemon(config, tmp_path / "log", {"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"})
    try:
        assert wait_until(lambda: notify.seen("READY=1"), 30), (tmp_path / "log").read_text()[-2000:]
        # READY=1 means subscribed and the first drain done: nothing waits in the key set.
        assert await db.redis.scard("OPS_A_KEY_SET") == 0
        assert wait_until(lambda: sum(m == "WATCHDOG=1" for m in notify.drain()) >= 3, 10)
        assert wait_until(lambda: any(m.startswith("STATUS=serving") for m in notify.drain()), 10)
        proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: notify.seen("RELOADING=1"), 10)
        assert stop(proc) == 0
    finally:
        stop(proc)
    msgs = notify.drain()

    def first(prefix: str, after: int = -1) -> int:
        return next(i for i, m in enumerate(msgs) if i > after and m.startswith(prefix))

    ready = first("READY=1")
    assert msgs[0] == "STATUS=starting" and ready > 0
    reloading = first("RELOADING=1", ready)
    again = first("READY=1", reloading)  # ready again after the reload
    stopping = first("STOPPING=1", again)
    assert not any(m.startswith("READY=1") for m in msgs[stopping:])


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.read().decode()


async def test_metrics_and_status_healthy_then_unhealthy(tmp_path: Path) -> None:
    # A private server: the test stops it to make the daemon unhealthy.
    with EmbeddedRedis() as server:
        db = await DBConnector.from_url(server.url, db_id=0, name="APPL_DB")
        records = tmp_path / "records.jsonl"
        port = free_port()
        config = write_config(tmp_path, server, {
            "daemon": {"health_interval": 0.2},
            "metrics": {"enabled": True, "address": "127.0.0.1", "port": port},
            "orchs": [recording(records, ["M_A", "M_B"])],
        })
        proc = start_daemon(config, tmp_path / "log")
        try:
            url = f"http://127.0.0.1:{port}/metrics"

            def up() -> bool:
                try:
                    return "swssd_ready 1.0" in scrape(port)
                except OSError:
                    return False

            assert wait_until(up, 30), (tmp_path / "log").read_text()[-2000:]
            await ProducerStateTable(db, "M_A").set_many([(f"k{i}", [("f", "v")]) for i in range(300)])
            await ProducerStateTable(db, "M_B").set("only", [("f", "v")])
            assert wait_until(lambda: len(read_records(records)) >= 301, 30)
            text = scrape(port)
            assert 'swssd_popped_total{db="APPL_DB",table="M_A"} 300.0' in text
            assert 'swssd_handled_total{db="APPL_DB",table="M_A"} 300.0' in text
            assert 'swssd_handled_total{db="APPL_DB",table="M_B"} 1.0' in text
            assert 'swssd_pending{db="APPL_DB",table="M_A"} 0.0' in text
            assert 'swssd_handler_latency_seconds_count{db="APPL_DB",table="M_A"} 300.0' in text
            assert 'swssd_redis_up 1.0' in text and "swssd_loop_lag_seconds" in text

            ok = swssd("status", "--metrics-url", url)
            assert ok.returncode == 0, ok.stdout + ok.stderr
            row = next(line.split() for line in ok.stdout.splitlines() if line.startswith("APPL_DB") and "M_A" in line)
            assert row[:8] == ["APPL_DB", "M_A", "300", "300", "0", "0", "0", "0"]
            assert "health: OK" in ok.stdout
            # the columns the log's "handler failed; will retry" could be read against are explained
            assert "retried: handler calls that raised Retry" in ok.stdout and "failed: handler errors" in ok.stdout

            server.stop()  # Redis goes away; the daemon keeps running and says so
            assert wait_until(lambda: "swssd_redis_up 0.0" in scrape(port), 30)
            bad = swssd("status", "--metrics-url", url)
            assert bad.returncode == 1
            assert "Redis unreachable" in bad.stdout
            assert proc.poll() is None
        finally:
            code = stop(proc)
            await db.close()
        assert code == 0
    gone = swssd("status", "--metrics-url", f"http://127.0.0.1:{free_port()}/metrics", "--timeout", "1")
    assert gone.returncode == 2 and "cannot reach" in gone.stderr and "Traceback" not in gone.stderr
