"""SubscriberStateTable benchmark, swssd against the C++ library side by side (issue 8).

    .venv/bin/python bench/bench_subscriber.py [--changes 100000] [--repeat 3] [--swss-common DIR]

1. Stream: a writer process does N HSETs of 4-field entries on N distinct keys of a CONFIG_DB
   table (pipelined, 1,000 a round trip, over TCP); the consumer, subscribed before the writer
   starts, counts the changes it is handed. changes/s = N / (start of the pop that returned the
   first change -> end of the pop that returned the last).
2. Start-up: the table holds N entries; time from creating the consumer to the end of the pop that
   handed over the last of them. For swssd also the event loop's lag while it does that: a probe
   task sleeps 1 ms at a time and records how late it wakes (p99 and max).

swssd runs here on uvloop (Select + SubscriberStateTable, pop batch 128) over the server's unix
socket; the C++ SubscriberStateTable (pop batch 128, under swss::Select) runs as
bench/cpp/subscriber_bench.cpp, built here against the sonic-swss-common tree given by
--swss-common or $SWSS_COMMON_DIR (without one, only swssd runs). Both talk to the same private
redis-server (notify-keyspace-events AKE, no persistence) through its unix socket, in interleaved
rounds, C++ first in odd rounds and swssd first in even ones; rows are medians of --repeat rounds.
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

import redis
import uvloop

from swssd import DBConnector, Select, SubscriberStateTable
from swssd.redis.embedded_redis import EmbeddedRedis

HERE = Path(__file__).resolve().parent
TABLE = "BENCH_PORT"
FIELDS = {"admin_status": "up", "mtu": "9100", "speed": "100000", "alias": "etp1"}

WRITER = """
import sys, redis
r = redis.Redis(port=int(sys.argv[1]), db=4)
n = int(sys.argv[2])
fields = {"admin_status": "up", "mtu": "9100", "speed": "100000", "alias": "etp1"}
for start in range(0, n, 1000):
    pipe = r.pipeline(transaction=False)
    for i in range(start, min(n, start + 1000)):
        pipe.hset(f"BENCH_PORT|Ethernet{i}", mapping=fields)
    pipe.execute()
"""


# -- the C++ side -----------------------------------------------------------------------------


def build_cpp(swss_common: Path, out_dir: Path) -> Path:
    """Compile bench/cpp/subscriber_bench.cpp against the tree's headers and libswsscommon."""
    binary = out_dir / "subscriber_bench"
    libs = swss_common / "common" / ".libs"
    cmd = [
        "g++", "-O2", "-std=c++14", f"-I{swss_common / 'common'}", f"-I{swss_common}", "-I/usr/include/libnl3",
        str(HERE / "cpp" / "subscriber_bench.cpp"), "-o", str(binary),
        f"-L{libs}", f"-Wl,-rpath,{libs}", "-lswsscommon", "-lhiredis", "-lpthread",
    ]
    subprocess.run(cmd, check=True)
    return binary


def cpp_run(binary: Path, mode: str, db_config: Path, count: int, server: EmbeddedRedis) -> float:
    """Seconds the C++ consumer took, by its own clock."""
    proc = subprocess.Popen(
        [str(binary), mode, str(db_config), "CONFIG_DB", TABLE, str(count)],
        stdout=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    if mode == "stream":
        assert proc.stdout.readline().strip() == "ready"
        write(server, count)
    out, _ = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"C++ consumer failed ({proc.returncode})")
    result = json.loads(out.strip().splitlines()[-1])
    assert result["count"] >= count, result
    return (result["last_ns"] - result["first_ns"]) / 1e9


# -- the swssd side ---------------------------------------------------------------------------


class LagProbe:
    """How late a 1 ms sleep wakes up, every time, while running; and how much of each delay
    this process spent on the CPU (on a loaded machine the rest is other processes' turn)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        #: per sample, the part of the delay this process was running: its own stall
        self.busy: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start, cpu = loop.time(), time.process_time()
            await asyncio.sleep(0.001)
            lag = loop.time() - start - 0.001
            self.lags.append(lag)
            self.busy.append(min(lag, max(0.0, time.process_time() - cpu - 0.001)))

    def __enter__(self) -> LagProbe:
        self._task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()

    def percentile(self, q: float) -> float:
        lags = sorted(self.lags)
        return lags[min(len(lags) - 1, int(q * len(lags)))] if lags else 0.0


async def swssd_run(mode: str, server: EmbeddedRedis, count: int) -> tuple[float, LagProbe]:
    db = await DBConnector.from_url(f"unix://{server.unix_socket}", db_id=4, separator="|", name="CONFIG_DB")
    sel = Select()
    probe = LagProbe()
    try:
        with probe:
            created = time.perf_counter()
            sst = SubscriberStateTable(db, TABLE, 128)
            await sel.add(sst)
            writer = None
            if mode == "stream":
                while await sel.select(timeout=0.05) is not None:
                    await sst.pops()  # the initial read of the empty table
                writer = asyncio.ensure_future(asyncio.to_thread(write, server, count))
            got, first, last = 0, 0.0, 0.0
            while got < count:
                table = await sel.select(timeout=60)
                assert table is sst, f"stalled after {got} changes"
                start = time.perf_counter()
                n = len(await sst.pops())
                last = time.perf_counter()
                if n and not first:
                    first = start
                got += n
            if writer is not None:
                await writer
        return last - (created if mode == "startup" else first), probe
    finally:
        await sel.close()
        await db.close()


# -- common -----------------------------------------------------------------------------------


def write(server: EmbeddedRedis, count: int) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(server.port), str(count)], check=True)


def reset(server: EmbeddedRedis, prefill: int) -> None:
    r = redis.Redis(port=server.port, db=4)
    r.flushall()
    for start in range(0, prefill, 1000):
        pipe = r.pipeline(transaction=False)
        for i in range(start, min(prefill, start + 1000)):
            pipe.hset(f"{TABLE}|Ethernet{i}", mapping=FIELDS)
        pipe.execute()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--swss-common", type=Path, default=os.environ.get("SWSS_COMMON_DIR"))
    args = parser.parse_args()
    n = args.changes

    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis() as server:
        redis.Redis(port=server.port).config_set("notify-keyspace-events", "AKE")
        db_config = server.write_database_config(Path(tmp) / "database_config.json")
        binary = build_cpp(args.swss_common, Path(tmp)) if args.swss_common else None
        if binary is None:
            print("no sonic-swss-common tree (--swss-common or $SWSS_COMMON_DIR): swssd only")
        results: dict[str, dict[str, list[float]]] = {"stream": {}, "startup": {}}
        lags: list[tuple[float, float, float]] = []
        for round_ in range(args.repeat):
            sides = ["cpp", "swssd"] if round_ % 2 == 0 else ["swssd", "cpp"]
            for mode in ("stream", "startup"):
                for side in sides:
                    if side == "cpp" and binary is None:
                        continue
                    reset(server, n if mode == "startup" else 0)
                    if side == "cpp":
                        seconds = cpp_run(binary, mode, db_config, n, server)  # type: ignore[arg-type]
                    else:
                        seconds, probe = uvloop.run(swssd_run(mode, server, n))
                        if mode == "startup":
                            lags.append((probe.percentile(0.99), max(probe.lags, default=0.0),
                                         max(probe.busy, default=0.0)))
                    results[mode].setdefault(side, []).append(seconds)
                    print(f"round {round_ + 1} {mode:7} {side:5}: {n / seconds:10,.0f} changes/s ({seconds:.3f} s)",
                          flush=True)

        print(f"\n{n:,} changes, 4 fields each, medians of {args.repeat}")
        print(f"{'path':40} {'C++':>12} {'swssd':>12} {'ratio':>7}")
        for mode, label in (("stream", "stream: changes/s delivered"), ("startup", "start-up load: entries/s")):
            sw = n / statistics.median(results[mode]["swssd"])
            if "cpp" in results[mode]:
                cpp = n / statistics.median(results[mode]["cpp"])
                print(f"{label:40} {cpp:12,.0f} {sw:12,.0f} {sw / cpp:6.2f}x")
            else:
                print(f"{label:40} {'-':>12} {sw:12,.0f}")
        p99 = statistics.median(p for p, _, _ in lags) * 1000
        worst = max(m for _, m, _ in lags) * 1000
        own = max(b for _, _, b in lags) * 1000
        print(f"swssd start-up of {n:,} entries: event-loop lag p99 {p99:.1f} ms (median of rounds), "
              f"max {worst:.1f} ms (worst round), of which this process was running at most {own:.1f} ms "
              f"(load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
