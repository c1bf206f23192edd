"""Daemon benchmark: end-to-end keys/s, write-to-handler latency, RSS with 100 tables.

    .venv/bin/python bench/bench_daemon.py [--keys 100000] [--repeat 3] [--seconds 10]

1. End to end: a ProducerStateTable writer in its own process writes N keys (4 fields each,
   batched sets) over 1 or 50 tables; the consumer here is either the raw library (Select +
   ConsumerStateTable.pops, no handling) or the daemon with a no-op Orch. keys/s = N / (first
   write -> last key popped/handled). Both use the same pops script (track_deletes=True).
   Drain: the same N keys written first, then drained (raw: Select + pops, one pop at a time as
   the C++ consumer does; daemon: from run() to the last key handled, start-up included,
   20-30 ms) -- the consumer's own capacity, writer excluded.
2. Latency: the writer sets one key at a time at a steady 2,000 changes/s with its wall time in a
   field; the no-op Orch takes the difference when the task reaches it (p50/p99), and the raw
   consumer the same when pops returns it.
3. RSS of a `swssd run` process consuming 100 tables, when ready and after 20,000 changes.
Everything runs on uvloop against a private redis-server (swssd.redis.embedded_redis); consumers (raw
and daemon) reach it over its unix socket, writers over TCP.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

import uvloop

from swssd import ConsumerStateTable, DBConnector, KeyOpFieldsValues, Orch, ProducerStateTable, Select
from swssd.ops import logs as swssd_logging
from swssd.orch.config_file import config_from_dict
from swssd.orch.daemon import Daemon
from swssd.redis.embedded_redis import EmbeddedRedis

FIELDS = [("admin_status", "up"), ("mtu", "9100"), ("speed", "100000"), ("alias", "etp1")]


class NoopOrch(Orch):
    """Counts tasks; sets `done` at `target`. With `latency`, records write-to-handler seconds."""

    target = 0
    done: asyncio.Event | None = None
    latencies: ClassVar[list[float]] = []  # one list for the whole run, reset by the latency benchmark

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.latency = False

    async def start(self) -> None:
        self.latency = bool(self.options.get("latency"))

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if self.latency:
            NoopOrch.latencies.append(time.time() - float(task.fvs[0][1]))
        self.count += 1
        if self.count == NoopOrch.target and NoopOrch.done is not None:
            NoopOrch.done.set()


# -- the writer process ---------------------------------------------------------------------


async def produce(url: str, tables: int, keys: int, rate: float, seconds: float) -> None:
    db = await DBConnector.from_url(url, db_id=0, name="APPL_DB")
    producers = [ProducerStateTable(db, f"BENCH_{t}") for t in range(tables)]
    print(json.dumps({"start": time.time()}), flush=True)
    if rate:  # one set per change, wall time in the first field
        start = time.monotonic()
        i = 0
        while time.monotonic() - start < seconds:
            due = start + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await producers[i % tables].set(f"k{i % 1000}", [("ts", repr(time.time()))])
            i += 1
    else:
        per_table = keys // tables
        for first in range(0, per_table, 128):
            for p in producers:
                await p.set_many((f"k{i}", FIELDS) for i in range(first, min(first + 128, per_table)))
    print(json.dumps({"end": time.time()}), flush=True)
    await db.close()


def start_writer(url: str, tables: int, keys: int = 0, rate: float = 0, seconds: float = 0) -> subprocess.Popen[str]:
    args = [sys.executable, __file__, "--writer", url, str(tables), str(keys), str(rate), str(seconds)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)


def writer_times(proc: subprocess.Popen[str]) -> tuple[float, float]:
    out, _ = proc.communicate(timeout=600)
    marks = {k: v for line in out.splitlines() for k, v in json.loads(line).items()}
    return marks["start"], marks["end"]


# -- end to end -----------------------------------------------------------------------------


async def flush(server: EmbeddedRedis) -> None:
    db = await DBConnector.from_url(server.url)
    await db.redis.flushall()
    await db.close()


async def raw_e2e(server: EmbeddedRedis, db_config: Path, tables: int, keys: int) -> tuple[float, float]:
    """(consumer keys/s, writer keys/s) with the library's consumer only."""
    await flush(server)
    db = await DBConnector.connect("APPL_DB", db_config)  # the unix socket, as the daemon
    sel = Select()
    for t in range(tables):
        await sel.add(ConsumerStateTable(db, f"BENCH_{t}", track_deletes=True))
    writer = start_writer(server.url, tables, keys)
    got = 0
    while got < keys:
        table = await sel.select(timeout=30)
        assert table is not None, "raw consumer timed out"
        got += len(await table.pops())
    end = time.time()
    start, wrote = writer_times(writer)
    await sel.close()
    await db.close()
    return keys / (end - start), keys / (wrote - start)


def bench_config(server_db_config: Path, tables: int, **options: object) -> object:
    return config_from_dict({
        "redis": {"database_config": str(server_db_config)},
        "logging": {"level": "warning"},
        "orchs": [{
            "plugin": f"{__name__}:NoopOrch", "options": options,
            "tables": [{"db": "APPL_DB", "table": f"BENCH_{t}"} for t in range(tables)],
        }],
    })


async def daemon_e2e(server: EmbeddedRedis, db_config: Path, tables: int, keys: int) -> float:
    await flush(server)
    NoopOrch.target, NoopOrch.done = keys, asyncio.Event()
    daemon = Daemon(bench_config(db_config, tables), handle_signals=False)  # type: ignore[arg-type]
    run = asyncio.ensure_future(daemon.run())
    await daemon.ready.wait()
    writer = start_writer(server.url, tables, keys)
    await asyncio.wait_for(NoopOrch.done.wait(), 600)
    end = time.time()
    start, _ = writer_times(writer)
    daemon.stop()
    await run
    return keys / (end - start)


async def preload(server: EmbeddedRedis, tables: int, keys: int) -> None:
    await flush(server)
    writer = start_writer(server.url, tables, keys)
    await asyncio.to_thread(writer_times, writer)


async def raw_drain(server: EmbeddedRedis, db_config: Path, tables: int, keys: int) -> float:
    await preload(server, tables, keys)
    db = await DBConnector.connect("APPL_DB", db_config)
    sel = Select()
    for t in range(tables):
        await sel.add(ConsumerStateTable(db, f"BENCH_{t}", track_deletes=True))
    start = time.perf_counter()
    got = 0
    while got < keys:
        table = await sel.select(timeout=30)
        assert table is not None, "raw consumer timed out"
        got += len(await table.pops())
    elapsed = time.perf_counter() - start
    await sel.close()
    await db.close()
    return keys / elapsed


async def daemon_drain(server: EmbeddedRedis, db_config: Path, tables: int, keys: int) -> float:
    await preload(server, tables, keys)
    NoopOrch.target, NoopOrch.done = keys, asyncio.Event()
    daemon = Daemon(bench_config(db_config, tables), handle_signals=False)  # type: ignore[arg-type]
    start = time.perf_counter()
    run = asyncio.ensure_future(daemon.run())
    await asyncio.wait_for(NoopOrch.done.wait(), 600)
    elapsed = time.perf_counter() - start
    daemon.stop()
    await run
    return keys / elapsed


# -- latency --------------------------------------------------------------------------------


def percentiles(samples: list[float]) -> dict[str, float]:
    q = statistics.quantiles(samples, n=100)
    return {"p50_ms": round(q[49] * 1000, 3), "p99_ms": round(q[98] * 1000, 3), "max_ms": round(max(samples) * 1000, 3)}


async def daemon_latency(server: EmbeddedRedis, db_config: Path, rate: float, seconds: float) -> dict[str, float]:
    await flush(server)
    NoopOrch.latencies = []
    NoopOrch.target, NoopOrch.done = 0, None
    daemon = Daemon(bench_config(db_config, 4, latency=True), handle_signals=False)  # type: ignore[arg-type]
    run = asyncio.ensure_future(daemon.run())
    await daemon.ready.wait()
    writer = start_writer(server.url, 4, rate=rate, seconds=seconds)
    await asyncio.to_thread(writer_times, writer)
    await asyncio.sleep(0.5)
    daemon.stop()
    await run
    samples = NoopOrch.latencies[int(rate):]  # the first second warms up
    return {"changes": len(NoopOrch.latencies), **percentiles(samples)}


async def raw_latency(server: EmbeddedRedis, db_config: Path, rate: float, seconds: float) -> dict[str, float]:
    await flush(server)
    db = await DBConnector.connect("APPL_DB", db_config)
    sel = Select()
    for t in range(4):
        await sel.add(ConsumerStateTable(db, f"BENCH_{t}", track_deletes=True))
    writer = start_writer(server.url, 4, rate=rate, seconds=seconds)
    samples: list[float] = []
    while writer.poll() is None or any(t.ready for t in sel.tables):
        table = await sel.select(timeout=0.5)
        if table is not None:
            now = time.time()
            samples += [now - float(t.fvs[0][1]) for t in await table.pops()]
    writer_times(writer)
    await sel.close()
    await db.close()
    return {"changes": len(samples), **percentiles(samples[int(rate):])}


# -- RSS ------------------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def daemon_rss(server: EmbeddedRedis, db_config: Path, tables: int) -> dict[str, float]:
    await flush(server)
    work = Path(tempfile.mkdtemp(prefix="swssd-bench-"))
    table_lines = "\n".join(f'  {{db = "APPL_DB", table = "BENCH_{t}"}},' for t in range(tables))
    (work / "swssd.toml").write_text(
        f'[redis]\ndatabase_config = "{db_config}"\n[logging]\nformat = "json"\n'
        f'[[orchs]]\nplugin = "bench_daemon:NoopOrch"\ntables = [\n{table_lines}\n]\n'
    )
    log = work / "log"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent))
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "swssd.cli", "run", "--config", str(work / "swssd.toml")],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(600):
            if '"event": "ready"' in log.read_text():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        ready = rss_mb(proc.pid)
        writer = start_writer(server.url, tables, 20_000)
        await asyncio.to_thread(writer_times, writer)
        await asyncio.sleep(2.0)
        loaded = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
    return {"tables": tables, "rss_ready_mb": round(ready, 1), "rss_after_20000_changes_mb": round(loaded, 1)}


# -- main -----------------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> None:
    swssd_logging.configure("console", "warning")
    with EmbeddedRedis() as server:
        db_config = server.write_database_config()
        results: dict[str, object] = {}
        for tables in (1, 50):
            runs: dict[str, list[float]] = {
                k: [] for k in ("wrote", "raw", "daemon", "raw_drain", "daemon_drain")
            }
            for _ in range(args.repeat):  # interleaved, so load from other processes hits both alike
                r, w = await raw_e2e(server, db_config, tables, args.keys)
                runs["raw"].append(r)
                runs["wrote"].append(w)
                runs["daemon"].append(await daemon_e2e(server, db_config, tables, args.keys))
                runs["raw_drain"].append(await raw_drain(server, db_config, tables, args.keys))
                runs["daemon_drain"].append(await daemon_drain(server, db_config, tables, args.keys))
            med = {k: statistics.median(v) for k, v in runs.items()}
            row = {
                "keys": args.keys,
                "writer_keys_per_s": round(med["wrote"]),
                "e2e_raw_keys_per_s": round(med["raw"]),
                "e2e_daemon_keys_per_s": round(med["daemon"]),
                "e2e_daemon_vs_raw": round(med["daemon"] / med["raw"], 3),
                "drain_raw_keys_per_s": round(med["raw_drain"]),
                "drain_daemon_keys_per_s": round(med["daemon_drain"]),
                "drain_daemon_vs_raw": round(med["daemon_drain"] / med["raw_drain"], 3),
                "load_average": os.getloadavg()[0],
            }
            results[f"{tables}_tables"] = row
            print(f"{tables} table(s): {row}", flush=True)
        results["latency_daemon"] = await daemon_latency(server, db_config, 2000, args.seconds)
        print("daemon latency:", results["latency_daemon"], flush=True)
        results["latency_raw"] = await raw_latency(server, db_config, 2000, args.seconds)
        print("raw latency:", results["latency_raw"], flush=True)
        results["rss"] = await daemon_rss(server, db_config, 100)
        print("rss:", results["rss"], flush=True)
        results["load_average_end"] = os.getloadavg()[0]
        print(json.dumps(results))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        url, tables, keys, rate, seconds = sys.argv[2:7]
        uvloop.run(produce(url, int(tables), int(keys), float(rate), float(seconds)))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0, help="latency run length")
    uvloop.run(main(parser.parse_args()))
