"""The daemon's ZMQ servers under hostile peers (issue 27), black-box with real peers: thousands
of connections that finish the ZMTP handshake and stay idle, frames that declare more than the
message limit, and a flood of 1 MB messages from several pyzmq peers into a slow plugin. What
must hold: the Redis tables beside it are still delivered quickly, metrics answer, the process
stays idle while its peers are, and its memory stays bounded."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import zmtp_peer
from daemon_harness import DaemonProcess, write_config
from swssd.redis.embedded_redis import EmbeddedRedis

IDLE_PEERS = 2000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metrics(port: int, timeout: float = 2.0) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as resp:
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name.split("{", 1)[0]] = float(value)
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def redis_cli(server: EmbeddedRedis, *args: str) -> None:
    import redis

    r = redis.Redis(unix_socket_path=server.unix_socket)
    r.execute_command(*args)
    r.close()


def stamps(path: Path) -> dict[str, float]:
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if line.endswith("]"):
            key, at = json.loads(line)
            out[key] = at
    return out


def state_table_latencies(server: EmbeddedRedis, record: Path, count: int, every: float) -> list[float]:
    """Write `count` changes to the Redis state table RT (the C++ ProducerStateTable way, through
    swssd's), `every` seconds apart; how late each reached the plugin."""
    import asyncio

    from swssd import DBConnector, ProducerStateTable

    async def produce() -> dict[str, float]:
        db = await DBConnector.from_url(server.url, db_id=0, separator=":", name="APPL_DB")
        producer = ProducerStateTable(db, "RT")
        sent = {}
        for i in range(count):
            key = f"k{i}-{time.time_ns()}"
            sent[key] = time.time()
            await producer.set(key, [("f", "v")])
            await asyncio.sleep(every)
        await db.close()
        return sent

    sent = asyncio.run(produce())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(stamps(record).keys() & sent.keys()) < count:
        time.sleep(0.05)
    got = stamps(record)
    return sorted(got[k] - sent[k] if k in got else float("inf") for k in sent)


def p95(latencies: list[float]) -> float:
    return latencies[int(len(latencies) * 0.95) - 1]


def config(tmp_path: Path, server: EmbeddedRedis, endpoint: str, port: int, **zmq_orch: object) -> Path:
    doc = {
        "metrics": {"enabled": True, "address": "127.0.0.1", "port": port},
        "orchs": [
            {"plugin": "orch_plugins:StampOrch", "tables": [{"db": "APPL_DB", "table": "RT", "kind": "state"}],
             "options": {"record": str(tmp_path / "stamps.jsonl")}},
            {"plugin": "orch_plugins:SlowCountingOrch",
             "tables": [{"db": "APPL_DB", "table": "ZBIG", "kind": "zmq", "endpoint": endpoint,
                         **zmq_orch.pop("table", {})}],  # type: ignore[dict-item]
             "options": {"record": str(tmp_path / "count.txt"), **zmq_orch}},
        ],
    }
    return write_config(tmp_path, server, doc)


@pytest.mark.parametrize("nofile", [None, 1024])
def test_idle_peers_leave_redis_metrics_and_cpu_alone(
    clean_redis: EmbeddedRedis, tmp_path: Path, nofile: int | None
) -> None:
    """2,000 peers that finish the handshake and stay idle: with the descriptor limit as found
    (the soft one raised to the hard one), and with 1,024 as systemd's default would have it
    (the daemon keeps descriptors for Redis and metrics and refuses the excess, counted)."""
    port, zport = free_port(), free_port()
    endpoint = f"tcp://127.0.0.1:{zport}"
    record = tmp_path / "stamps.jsonl"
    mine = resource.getrlimit(resource.RLIMIT_NOFILE)
    if mine[0] < IDLE_PEERS + 200:
        pytest.skip(f"this test process needs {IDLE_PEERS + 200} descriptors, it may have {mine[0]}")

    def limit() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    daemon = DaemonProcess(config(tmp_path, clean_redis, endpoint, port, delay=0), tmp_path / "log",
                           preexec_fn=limit)
    peers: list[socket.socket] = []
    try:
        daemon.wait_ready()
        for _ in range(IDLE_PEERS):
            with contextlib.suppress(OSError):  # refused past the bound: counted by the daemon
                peers.append(zmtp_peer.connect(("127.0.0.1", zport)))
        time.sleep(1.0)
        redis_cli(clean_redis, "CLIENT", "KILL", "TYPE", "normal")  # the daemon reconnects to Redis
        time.sleep(1.0)
        figures = metrics(port)
        if nofile is None:
            assert figures["swssd_zmq_peers"] == IDLE_PEERS
            assert figures["swssd_zmq_refused_peers_total"] == 0
        else:
            assert 0 < figures["swssd_zmq_peers"] < nofile - 200
            assert figures["swssd_zmq_refused_peers_total"] >= IDLE_PEERS - figures["swssd_zmq_peers"]
            assert len(daemon.events("zmq peer limit reached: further connections are refused until peers leave")) == 1
        latencies = state_table_latencies(clean_redis, record, 10, 0.05)
        assert latencies[-1] < 1.0, latencies
        before = cpu_seconds(daemon.proc.pid)
        time.sleep(3.0)
        used = cpu_seconds(daemon.proc.pid) - before
        assert used < 0.3, f"{used:.2f} s of CPU in 3 s with idle peers"
        assert metrics(port)["swssd_redis_up"] == 1
        assert daemon.stop() == 0
    finally:
        for peer in peers:
            peer.close()
        daemon.kill()
    assert "Traceback" not in daemon.log_path.read_text()


def test_a_frame_declaring_2_gib_costs_no_more_than_the_limit(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    port, zport = free_port(), free_port()
    daemon = DaemonProcess(config(tmp_path, clean_redis, f"tcp://127.0.0.1:{zport}", port), tmp_path / "log")
    try:
        daemon.wait_ready()
        start = rss_mb(daemon.proc.pid)
        peers = [zmtp_peer.connect(("127.0.0.1", zport)) for _ in range(4)]
        for peer in peers:
            with contextlib.suppress(OSError):  # closed while sending: refused
                peer.sendall(zmtp_peer.long_frame_header(2 << 30) + bytes(32 << 20))
            assert zmtp_peer.closed_by_peer(peer)
            peer.close()
        assert rss_mb(daemon.proc.pid) - start < 17 + 16
        assert metrics(port)["swssd_zmq_received_total"] == 0
        assert daemon.stop() == 0
    finally:
        daemon.kill()


FLOOD = r"""
import sys, threading, time, zmq
from swssd.channels.zmq.serializer import serialize
from swssd.fields import KeyOpFieldsValues
endpoint, seconds, peers = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
ctx = zmq.Context()
sent = [0] * peers
def flood(n):
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDHWM, 16)
    sock.setsockopt(zmq.SNDTIMEO, 100)
    sock.connect(endpoint)
    # built before: the flood's own CPU would otherwise take the daemon's from it
    messages = [serialize("APPL_DB", "ZBIG", [KeyOpFieldsValues(f"p{n}-{i}", "SET", [("v", str(i) * (1 << 20))])])
                for i in range(16)]
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        try:
            sock.send(messages[i % 16], copy=False)
            sent[n] += 1
            i += 1
        except zmq.Again:
            pass
    sock.close(0)
threads = [threading.Thread(target=flood, args=(n,)) for n in range(peers)]
for t in threads: t.start()
for t in threads: t.join()
print(sum(sent))
ctx.term()
"""


def test_a_flood_of_1mb_messages_into_a_slow_plugin(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """4 peers send 1 MB messages as fast as they can for 8 s into a plugin that takes 10 ms a
    task: the daemon stops reading (the peers' sends fail with EAGAIN and wait), its RSS stays
    under 300 MB, and a Redis state table beside it is delivered with p95 under 20 ms.

    On a machine busy with other work the delivery p95 is that work's, flood or not (measured
    here without any flood: 5-160 ms as it came and went): the same delivery is then measured
    without the flood, before it and after it, and the flood may take the p95 to four times the
    larger of the two and no further. On a quiet machine the flood takes it from 3-4 ms to 6-12
    ms (1.1 to 3.5 times: every hop of a change waits behind the reading of a 1 MB message),
    and the bound is the 20 ms; a daemon that read the flood without bound took it from 2 to
    305 ms."""
    port, zport = free_port(), free_port()
    endpoint = f"tcp://127.0.0.1:{zport}"
    record = tmp_path / "stamps.jsonl"
    daemon = DaemonProcess(config(tmp_path, clean_redis, endpoint, port, delay=0.01), tmp_path / "log")
    try:
        daemon.wait_ready()
        before = p95(state_table_latencies(clean_redis, record, 100, 0.03))
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
        flood = subprocess.Popen([sys.executable, "-c", FLOOD, endpoint, "8", "4"], stdout=subprocess.PIPE,
                                 text=True, env=env)
        time.sleep(2.0)
        peak = 0.0

        def sample() -> None:
            nonlocal peak
            peak = max(peak, rss_mb(daemon.proc.pid))

        sample()
        latencies = state_table_latencies(clean_redis, record, 100, 0.03)
        sample()
        while flood.poll() is None:
            sample()
            time.sleep(0.1)
        assert flood.returncode == 0
        figures = metrics(port)
        assert peak <= 300, f"RSS peaked at {peak:.0f} MB"
        after = p95(state_table_latencies(clean_redis, record, 100, 0.03))
        quiet = max(before, after)
        flooded = p95(latencies)
        assert flooded <= max(0.020, 4 * quiet), (
            f"p95 {flooded * 1000:.1f} ms in the flood, {before * 1000:.1f} ms before it and {after * 1000:.1f} ms "
            f"after it (load {os.getloadavg()[0]:.1f}): {latencies}"
        )
        assert figures["swssd_zmq_malformed_total"] == 0
        assert figures["swssd_zmq_unfinished_peers_total"] == 0  # every message finished: no peer dropped
        assert daemon.stop(timeout=60) == 0
    finally:
        daemon.kill()


@pytest.mark.parametrize("what", ["live server", "regular file"])
def test_an_ipc_path_held_or_not_a_socket_is_one_line_and_exit_2(
    clean_redis: EmbeddedRedis, tmp_path: Path, what: str
) -> None:
    """libzmq would take the path from the live server (which then gets nothing) or delete the
    file; the daemon refuses to start instead, naming the field, and leaves the path alone."""
    path = tmp_path / "zmq.sock"
    holder = None
    if what == "live server":
        holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        holder.bind(str(path))
        holder.listen()
    else:
        path.write_text("not a socket")
    try:
        doc = {"orchs": [{
            "plugin": "orch_plugins:RecordingOrch",
            "tables": [{"table": "ZROUTE", "kind": "zmq", "endpoint": f"ipc://{path}"}],
            "options": {"record": str(tmp_path / "r.jsonl")},
        }]}
        proc = subprocess.run(
            [sys.executable, "-m", "swssd.cli", "run", "--config", str(write_config(tmp_path, clean_redis, doc))],
            capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": "tests"},
        )
        assert proc.returncode == 2, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if "cannot bind" in line]
        assert len(errors) == 1 and "orchs.0.tables.0.endpoint" in errors[0], proc.stderr
        assert path.exists()
        if what == "regular file":
            assert path.read_text() == "not a socket"
    finally:
        if holder is not None:
            holder.close()


SMALL_FLOOD = r"""
import sys, zmq
from swssd.channels.zmq.serializer import serialize
from swssd.fields import KeyOpFieldsValues
endpoint, count = sys.argv[1], int(sys.argv[2])
ctx = zmq.Context()
sock = ctx.socket(zmq.PUSH)
sock.connect(endpoint)
for i in range(count):
    sock.send(serialize("APPL_DB", "ZBIG", [KeyOpFieldsValues(f"k{i}", "SET", [("seq", str(i))])]))
print("sent", flush=True)
sys.stdin.readline()
sock.close(0)
ctx.term()
"""


def test_a_zmq_table_at_its_pending_limit_stops_its_server(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """pending_limit 100, a plugin taking 20 ms a task, 20,000 small changes sent at once: the
    table pauses at 100 pending and its server stops reading then, so what the daemon holds is
    about the limit, not the 20,000 (which wait in libzmq's queues, TCP and the sender's)."""
    port, zport = free_port(), free_port()
    endpoint = f"tcp://127.0.0.1:{zport}"
    path = config(tmp_path, clean_redis, endpoint, port, delay=0.02, table={"pending_limit": 100})
    daemon = DaemonProcess(path, tmp_path / "log")
    sender = None
    try:
        daemon.wait_ready()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
        sender = subprocess.Popen([sys.executable, "-c", SMALL_FLOOD, endpoint, "20000"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 15
        while metrics(port).get("swssd_zmq_paused") != 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        figures = metrics(port)
        assert figures["swssd_zmq_paused"] == 1
        # the pop that reaches the limit is taken whole (128 a pop), one task is being handled
        assert figures["swssd_pending"] <= 100 + 128 + 1
        assert figures["swssd_zmq_received_total"] < 100 + 128 + 2 * 512, figures
        assert daemon.events("table paused: pending tasks at limit; its zmq server stops reading")
    finally:
        if sender is not None:
            sender.kill()
            sender.wait()
        daemon.kill()


def count_of(path: Path) -> int:
    return int(path.read_text()) if path.exists() and path.read_text() else 0


def test_a_message_in_parts_that_never_ends_drops_its_peer(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """Issue 35: a raw peer sends 300 valid 1 MB changes as parts flagged MORE and never a last
    part. libzmq would keep them all (+300 MB); the daemon closes the connection once they pass
    the message limit, logs it once and counts it, its RSS grows less than 64 MB, and a peer
    beside it and a Redis table are still served."""
    from swssd.channels.zmq.serializer import serialize
    from swssd.fields import KeyOpFieldsValues

    port, zport = free_port(), free_port()
    endpoint = f"tcp://127.0.0.1:{zport}"
    count = tmp_path / "count.txt"
    daemon = DaemonProcess(config(tmp_path, clean_redis, endpoint, port, delay=0), tmp_path / "log")
    try:
        daemon.wait_ready()
        start = peak = rss_mb(daemon.proc.pid)
        part = serialize("APPL_DB", "ZBIG", [KeyOpFieldsValues("k", "SET", [("v", "x" * (1 << 20))])])
        hostile = zmtp_peer.connect(("127.0.0.1", zport))
        sent = 0
        with contextlib.suppress(OSError):  # shut down while sending
            for _ in range(300):
                hostile.sendall(zmtp_peer.frame(part, more=True))
                sent += 1
                if sent % 10 == 0:
                    peak = max(peak, rss_mb(daemon.proc.pid))
        assert zmtp_peer.closed_by_peer(hostile)
        hostile.close()
        peak = max(peak, rss_mb(daemon.proc.pid))
        assert peak - start < 64, f"RSS {start:.0f} -> {peak:.0f} MB ({sent} parts sent)"
        events = daemon.wait_for_log("zmq peer dropped: it sent more of an unfinished message than a message may hold")
        assert len(events) == 1
        assert metrics(port)["swssd_zmq_unfinished_peers_total"] == 1
        # the server still serves: another peer's 20 changes, and the Redis table beside it
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
        sender = subprocess.Popen([sys.executable, "-c", SMALL_FLOOD, endpoint, "20"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + 15
            while count_of(count) < 20 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert count_of(count) == 20
        finally:
            sender.kill()
            sender.wait()
        assert state_table_latencies(clean_redis, tmp_path / "stamps.jsonl", 5, 0.01)[-1] < 2.0
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    assert "Traceback" not in daemon.log_path.read_text()


UNROUTED = r"""
import sys, zmq
from swssd.channels.zmq.serializer import serialize
from swssd.fields import KeyOpFieldsValues
endpoint, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ctx = zmq.Context()
sock = ctx.socket(zmq.PUSH)
sock.connect(endpoint)
for i in range(count):
    sock.send(serialize("APPL_DB", f"{i:04d}" + "T" * size, [KeyOpFieldsValues("k", "SET", [("f", "v")])]))
sock.send(serialize("APPL_DB", "ZBIG", [KeyOpFieldsValues(f"k{i}", "SET", [("f", "v")]) for i in range(10)]))
print("sent", flush=True)
sys.stdin.readline()
sock.close(0)
ctx.term()
"""


def test_unrouted_tables_with_huge_names_are_not_remembered_whole(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """Issue 35: 40 messages for 40 tables without consumer, each name 8 MiB: the log-once set
    kept the names whole (+353 MB); it keeps digests now. Each is logged once (name cut) and
    counted, and the table that has a consumer gets its changes after them."""
    port, zport = free_port(), free_port()
    endpoint = f"tcp://127.0.0.1:{zport}"
    daemon = DaemonProcess(config(tmp_path, clean_redis, endpoint, port, delay=0), tmp_path / "log")
    sender = None
    try:
        daemon.wait_ready()
        start = rss_mb(daemon.proc.pid)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
        sender = subprocess.Popen([sys.executable, "-c", UNROUTED, endpoint, "40", str(8 << 20)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 60
        while count_of(tmp_path / "count.txt") < 10 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert count_of(tmp_path / "count.txt") == 10
        grown = rss_mb(daemon.proc.pid) - start
        assert grown < 64, f"RSS grew {grown:.0f} MB"
        assert metrics(port)["swssd_zmq_dropped_total"] == 40
        logged = daemon.events("zmq message for a table without consumer dropped")
        assert len(logged) == 40 and all(len(e["table"]) <= 100 for e in logged)
        assert daemon.stop() == 0
    finally:
        if sender is not None:
            sender.kill()
            sender.wait()
        daemon.kill()
