"""Table-library benchmark (issue 2): producer and consumer keys/s against a private redis-server.

Each figure is the median of --repeat runs. Beside it:
  redis cmd %  - the share of wall time Redis spent executing the commands we sent, from
                 INFO commandstats (CONFIG RESETSTAT before the timed part). Only top-level
                 commands are summed: commands a Lua script runs are counted by Redis both
                 under their own name and inside EVALSHA, so summing everything counts them twice.
  redis CPU %  - redis-server's user+system CPU time over wall time (/proc), which also
                 covers socket I/O and protocol parsing: the real physical limit.
  python CPU % - this process's CPU time over wall time.

Run: .venv/bin/python bench/bench_tables.py [--keys 100000] [--keys-slow 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import redis
import uvloop

from swssd import ConsumerStateTable, ConsumerTable, DBConnector, ProducerStateTable, ProducerTable
from swssd.redis.embedded_redis import EmbeddedRedis

TABLE = "BENCH_TABLE"
BATCH = 128
#: Commands a client sends itself; whatever else commandstats lists ran inside a script.
TOP_LEVEL = {"evalsha", "eval", "script", "ping", "select", "client", "hello"}
CLK_TCK = os.sysconf("SC_CLK_TCK")

Entry = tuple[str, list[tuple[str, str]]]


def make_entries(n: int) -> list[Entry]:
    """n keys of 4 fields, shaped like PORT_TABLE entries."""
    return [
        (
            f"Ethernet{i}",
            [("alias", f"etp{i}"), ("speed", "100000"), ("mtu", "9100"), ("admin_status", "up")],
        )
        for i in range(n)
    ]


@dataclass
class Sample:
    keys: int
    wall: float
    redis_usec: int
    redis_cpu: float
    python_cpu: float

    @property
    def rate(self) -> float:
        return self.keys / self.wall


@dataclass
class Case:
    name: str
    keys: int
    cpp: tuple[int, int] | None  # C++ reference range in keys/s (low, high)
    #: Untimed pre-fill for consumers; None for producers.
    prepare: Callable[[DBConnector, list[Entry]], Awaitable[int]] | None
    #: The timed part; gets the entries (producers) or [] (consumers), returns keys handled.
    run: Callable[[DBConnector, list[Entry]], Awaitable[int]]


class Bench:
    def __init__(self, server: EmbeddedRedis, url: str) -> None:
        self.server = server
        self.url = url
        self.admin = redis.Redis(unix_socket_path=server.unix_socket)

    def _redis_cpu(self) -> float:
        assert self.server.process is not None
        with open(f"/proc/{self.server.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def _top_level_usec(self) -> int:
        stats = self.admin.info("commandstats")
        # Redis 7 names subcommands "script|load", "client|setinfo", ...
        return sum(
            v["usec"]
            for k, v in stats.items()
            if k.removeprefix("cmdstat_").split("|")[0] in TOP_LEVEL
        )

    async def measure(self, case: Case) -> Sample:
        db = await DBConnector.from_url(self.url, db_id=0)
        try:
            self.admin.flushall()
            entries = make_entries(case.keys)
            if case.prepare is not None:
                # A consumer does not hold the producer's data: free it, so the cyclic GC
                # does not walk the benchmark's own objects during the drain.
                await case.prepare(db, entries)
                entries = []
            gc.collect()
            await db.redis.ping()  # the pool's connection is open before the clock starts
            self.admin.config_resetstat()
            cpu0, py0, t0 = self._redis_cpu(), time.process_time(), time.perf_counter()
            done = await case.run(db, entries)
            wall = time.perf_counter() - t0
            py1, cpu1 = time.process_time(), self._redis_cpu()
            usec = self._top_level_usec()
        finally:
            await db.close()
        if done != case.keys:
            raise RuntimeError(f"{case.name}: handled {done} keys, expected {case.keys}")
        return Sample(done, wall, usec, cpu1 - cpu0, py1 - py0)


# -- producers -------------------------------------------------------------------------


async def pst_set(db: DBConnector, entries: list[Entry]) -> int:
    pst = ProducerStateTable(db, TABLE)
    for key, fvs in entries:
        await pst.set(key, fvs)
    return len(entries)


async def pst_set_many(db: DBConnector, entries: list[Entry]) -> int:
    pst = ProducerStateTable(db, TABLE)
    for i in range(0, len(entries), BATCH):
        await pst.set_many(entries[i : i + BATCH])
    return len(entries)


async def pst_buffered(db: DBConnector, entries: list[Entry]) -> int:
    pst = ProducerStateTable(db, TABLE, buffered=True)
    for i, (key, fvs) in enumerate(entries, 1):
        await pst.set(key, fvs)
        if i % BATCH == 0:
            await pst.flush()
    await pst.flush()
    return len(entries)


async def pt_set(db: DBConnector, entries: list[Entry]) -> int:
    pt = ProducerTable(db, TABLE)
    for key, fvs in entries:
        await pt.set(key, fvs)
    return len(entries)


async def pt_buffered(db: DBConnector, entries: list[Entry]) -> int:
    pt = ProducerTable(db, TABLE, buffered=True)
    for i, (key, fvs) in enumerate(entries, 1):
        await pt.set(key, fvs)
        if i % BATCH == 0:
            await pt.flush()
    await pt.flush()
    return len(entries)


# -- consumers -------------------------------------------------------------------------


def cst_drain(batch: int) -> Callable[[DBConnector, list[Entry]], Awaitable[int]]:
    async def run(db: DBConnector, entries: list[Entry]) -> int:
        cst = ConsumerStateTable(db, TABLE, pop_batch_size=batch)
        n = 0
        while items := await cst.pops():
            n += len(items)
        return n

    return run


def ct_drain() -> Callable[[DBConnector, list[Entry]], Awaitable[int]]:
    async def run(db: DBConnector, entries: list[Entry]) -> int:
        ct = ConsumerTable(db, TABLE, pop_batch_size=BATCH)
        n = 0
        while items := await ct.pops():
            n += len(items)
        return n

    return run


# -- report ----------------------------------------------------------------------------


def fmt_cpp(cpp: tuple[int, int] | None) -> str:
    if cpp is None:
        return "-"
    lo, hi = cpp
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


def ratio(rate: float, cpp: tuple[int, int] | None) -> str:
    return "-" if cpp is None else f"{rate / ((cpp[0] + cpp[1]) / 2):.2f}"


async def main(args: argparse.Namespace) -> None:
    keys, slow = args.keys, args.keys_slow
    cases = [
        Case("PST set (1 EVALSHA/key)", slow, (8_700, 8_700), None, pst_set),
        Case(f"PST set_many ({BATCH}/call)", keys, (119_000, 119_000), None, pst_set_many),
        Case(f"PST buffered set (flush/{BATCH})", keys, (76_000, 76_000), None, pst_buffered),
        Case("PT set (1 EVALSHA/key)", slow, None, None, pt_set),
        Case(f"PT buffered set (flush/{BATCH})", keys, None, None, pt_buffered),
        Case("CST drain, pop batch 128", keys, (57_000, 62_000), pst_set_many, cst_drain(128)),
        Case("CST drain, pop batch 1024", keys, (57_000, 62_000), pst_set_many, cst_drain(1024)),
        Case(f"CT drain, pop batch {BATCH}", keys, (110_000, 110_000), pt_buffered, ct_drain()),
    ]
    if args.only:
        cases = [c for c in cases if any(s.lower() in c.name.lower() for s in args.only)]

    with EmbeddedRedis() as server:
        url = f"unix://{server.unix_socket}" if args.unix else server.url
        bench = Bench(server, url)
        version = bench.admin.info("server")["redis_version"]
        print(
            f"swssd table benchmark: redis-server {version} (private, no persistence), "
            f"{'unix socket' if args.unix else 'loopback TCP'}, event loop uvloop {uvloop.__version__}, "
            f"4 fields/key, median of {args.repeat}"
        )
        print(f"{os.cpu_count()} CPUs, 1-min load average at start {os.getloadavg()[0]:.2f} "
              "(other processes on the machine compete with Python and redis-server)")
        print(
            f"{keys:,} keys per run; the one-EVALSHA-per-key cases (PST set, PT set) use "
            f"--keys-slow {slow:,} keys"
        )
        head = (
            f"{'case':34} {'keys':>8} {'keys/s':>9} {'redis cmd%':>10} {'redis CPU%':>10} "
            f"{'python CPU%':>11} {'C++ keys/s':>14} {'ours/C++':>8}"
        )
        print(head)
        print("-" * len(head))
        for case in cases:
            samples = [await bench.measure(case) for _ in range(args.repeat)]
            s = sorted(samples, key=lambda x: x.rate)[len(samples) // 2]
            print(
                f"{case.name:34} {case.keys:>8,} {s.rate:>9,.0f} "
                f"{100 * s.redis_usec / 1e6 / s.wall:>9.0f}% {100 * s.redis_cpu / s.wall:>9.0f}% "
                f"{100 * s.python_cpu / s.wall:>10.0f}% {fmt_cpp(case.cpp):>14} {ratio(s.rate, case.cpp):>8}",
                flush=True,
            )
            if args.verbose:
                print("    runs keys/s:", ", ".join(f"{x.rate:,.0f}" for x in samples),
                      "| stdev", f"{statistics.pstdev(x.rate for x in samples):,.0f}")
        bench.admin.close()
    print("C++ drain reference is the range 57,000-62,000; the ratio uses its midpoint 59,500.")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=100_000, help="keys per run (default 100000)")
    p.add_argument("--keys-slow", type=int, default=20_000,
                   help="keys per run for the one-EVALSHA-per-key producers (default 20000)")
    p.add_argument("--repeat", type=int, default=3, help="runs per case; the median is printed")
    p.add_argument("--unix", action="store_true", help="connect over the unix socket instead of TCP")
    p.add_argument("--only", nargs="*", help="run only cases whose name contains one of these")
    p.add_argument("-v", "--verbose", action="store_true", help="also print every run's keys/s")
    return p.parse_args()


if __name__ == "__main__":
    uvloop.run(main(parse_args()))
