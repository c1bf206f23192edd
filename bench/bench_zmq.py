"""ZMQ state-table channel benchmark (issue 9): swssd's ZMQ path against its Redis key-set path and
against the C++ ZMQ pair.

    .venv/bin/python bench/bench_zmq.py [--changes 10000 100000] [--repeat 3] [--swss-common DIR]
                                        [--unique-fields]

N route-like changes (key `10.x.y.0/24`, 4 fields: nexthop, ifname, weight, protocol), each on its
own key, go from a producer process to a consumer process. By default every route carries the
same 4 values (a route table repeating few next-hop groups); with --unique-fields the values
differ per key (unique_fields(): a neighbour, port or FDB table, where nothing repeats). The time
is from the producer's first send to the end of the consumer's pop that returned the last change
(both processes read CLOCK_MONOTONIC); "consumer alone" is from the start of the consumer's first
pop that returned changes to the end of its last (issue 27's measure of a consumer). The consumer
is started and ready first; the producer has built its changes before the clock starts. Each
producer also reports its CPU over the sends, per change: the process's (libzmq's I/O thread
included) and the sending thread's alone (getrusage in C++, process_time/thread_time in Python),
the part of the pair's time a producer can move. Each consumer reports its process's CPU per
change too (swssd's from its first pop on, C++'s from "ready" on: its receive thread works
before the first pop).

    swssd ZMQ        ZmqProducerStateTable.set() per change -> ZmqConsumerStateTable (pop batch 128)
    swssd Redis      ProducerStateTable(buffered) .set() per change, flush() every 128 ->
                     ConsumerStateTable (pop batch 128), the key-set channel, over a unix socket
    C++ ZMQ          the same with libswsscommon's ZmqProducerStateTable/ZmqConsumerStateTable
                     (bench/cpp/zmq_bench.cpp)
    C++ -> swssd     libswsscommon's producer, swssd's consumer (the consumers compared on one producer)
    swssd -> C++     swssd's producer, libswsscommon's consumer
    ..., no C        the same with swssd's one-change messages encoded, sent and read in Python
                     (SWSSD_NO_SPEEDUPS=1: an install where swssd/channels/zmq/_speedups.c was not built)

ZMQ runs over tcp://127.0.0.1 (SONiC's orchagent endpoint is tcp, port 8100), persistence off
(as fpmsyncd -> orchagent). swssd runs on uvloop. Each swssd process, once set up and before it
says "ready", collects and freezes what start-up built (gc.collect(); gc.freeze()), as
`swssd run` does after its start-up: otherwise the first full collection after the imports
(20-90 ms here) lands inside the timed run of a fresh process; --no-freeze leaves the GC alone.
Rounds are interleaved (the order of the rows rotates every round); the table has the medians of
--repeat rounds. Without a sonic-swss-common tree (--swss-common or $SWSS_COMMON_DIR, else
../cpp/env.sh beside the repository), only swssd runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import redis
import uvloop

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TABLE = "ROUTE_TABLE"
FIELDS = [("nexthop", "10.0.0.1,10.0.0.3"), ("ifname", "Ethernet0,Ethernet4"), ("weight", "1,1"), ("protocol", "bgp")]
FLUSH_EVERY = 128


def route_key(i: int) -> str:
    return f"{10 + i // 65536}.{i // 256 % 256}.{i % 256}.0/24"


def unique_fields(i: int) -> list[tuple[str, str]]:
    """Values that differ per key (bench/cpp/zmq_bench.cpp's uniqueFields() makes the same)."""
    a, b = (i >> 8) & 255, i & 255
    return [("nexthop", f"10.{a}.{b}.1,10.{a}.{b}.3"), ("ifname", f"Ethernet{i % 128 * 4},Ethernet{(i + 1) % 128 * 4}"),
            ("weight", f"{i % 7 + 1},{i % 5 + 1}"), ("protocol", f"bgp{i % 1000}")]


def fields_of(i: int, unique: bool) -> list[tuple[str, str]]:
    return unique_fields(i) if unique else list(FIELDS)


# -- the swssd roles (run as subprocesses of this file) -----------------------------------------


def started(freeze: bool) -> None:
    """What `swssd run` does once started: what start-up built is not scanned again."""
    if freeze:
        gc.collect()
        gc.freeze()


async def swssd_produce(kind: str, url: str, endpoint: str, count: int, freeze: bool, unique: bool = False) -> None:
    from swssd import DBConnector, ProducerStateTable
    from swssd.channels.zmq import ZmqClient, ZmqProducerStateTable

    db = await DBConnector.from_url(url, db_id=0, separator=":", name="APPL_DB")
    routes = [(route_key(i), fields_of(i, unique)) for i in range(count)]
    client = None
    if kind == "zmq":
        client = ZmqClient(endpoint)
        zp = ZmqProducerStateTable(db, TABLE, client, db_persistence=False)
    else:
        rp = ProducerStateTable(db, TABLE, buffered=True)
        await db.load_scripts([])
    started(freeze)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    print(time.monotonic_ns(), flush=True)
    cpu, thread = time.process_time_ns(), time.thread_time_ns()
    if kind == "zmq":
        for key, fvs in routes:
            await zp.set(key, fvs)
    else:
        for n, (key, fvs) in enumerate(routes, 1):
            await rp.set(key, fvs)
            if n % FLUSH_EVERY == 0:
                await rp.flush()
        await rp.flush()
    cpu, thread = time.process_time_ns() - cpu, time.thread_time_ns() - thread
    print(json.dumps({"producer_cpu_ns": cpu, "producer_thread_ns": thread}), flush=True)
    print("sent", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    if client is not None:
        client.close()
    await db.close()


async def swssd_consume(kind: str, url: str, endpoint: str, count: int, freeze: bool, unique: bool = False) -> None:
    from swssd import ConsumerStateTable, DBConnector, Select
    from swssd.channels.zmq import ZmqConsumerStateTable, ZmqServer

    db = await DBConnector.from_url(url, db_id=0, separator=":", name="APPL_DB")
    sel = Select()
    server = None
    consumer: ZmqConsumerStateTable | ConsumerStateTable
    if kind == "zmq":
        server = ZmqServer(endpoint)
        consumer = ZmqConsumerStateTable(db, TABLE, server, 128)
    else:
        consumer = ConsumerStateTable(db, TABLE, 128)
    await sel.add(consumer)
    started(freeze)
    print("ready", flush=True)
    got, first, last, cpu = 0, 0, 0, 0
    while got < count:
        table = await sel.select(timeout=60)
        if table is None:
            raise SystemExit(f"stalled after {got} changes")
        start = time.monotonic_ns()
        n = len(await consumer.pops())
        last = time.monotonic_ns()
        if n and not first:
            first = start
            cpu = time.process_time_ns()  # the process's CPU (every thread) from the first pop on
        got += n
    cpu = time.process_time_ns() - cpu
    print(json.dumps({"count": got, "first_ns": first, "last_ns": last, "cpu_ns": cpu}), flush=True)
    await sel.close()
    if server is not None:
        await server.close()
    await db.close()


# -- running one pair -------------------------------------------------------------------------


def free_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def command(
    side: str, role: str, kind: str, count: int, url: str, endpoint: str, db_config: Path, binary: Path | None,
    freeze: bool = True, unique: bool = False,
) -> list[str]:
    if side == "cpp":
        assert binary is not None
        return [str(binary), role, str(db_config), endpoint, str(count)] + (["unique"] if unique else [])
    return ([sys.executable, str(Path(__file__).resolve()), "--role", role, "--kind", kind,
             "--url", url, "--endpoint", endpoint, "--count", str(count)] + ([] if freeze else ["--no-freeze"])
            + (["--unique-fields"] if unique else []))


def side_env(side: str, env: dict[str, str]) -> dict[str, str]:
    """The environment of one side's process: "swssd-py" is swssd without its C functions."""
    return dict(env, SWSSD_NO_SPEEDUPS="1") if side == "swssd-py" else env


def expect(stream: IO[str], word: str) -> str:
    """The next line starting with `word` (log lines before it are skipped)."""
    while True:
        line = stream.readline()
        if not line:
            raise RuntimeError(f"expected {word!r}, the process ended")
        if line.startswith(word):
            return line.strip()


def run_pair(
    producer: str, consumer: str, kind: str, count: int, url: str, db_config: Path, binary: Path | None,
    freeze: bool = True, unique: bool = False,
) -> tuple[float, float, float, tuple[float, float]]:
    """Seconds from the producer's first send to the consumer's last pop, the consumer's CPU
    microseconds per change (swssd: from its first pop on; C++: from "ready" on), the seconds from the
    consumer's first pop to its last (the consumer alone, as issue 27 timed it), and the
    producer's CPU microseconds per change over its sends (process, sending thread)."""
    endpoint = free_endpoint()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cons = subprocess.Popen(command(consumer, "consume", kind, count, url, endpoint, db_config, binary, freeze, unique),
                            stdout=subprocess.PIPE, text=True, env=side_env(consumer, env))
    prod = subprocess.Popen(command(producer, "produce", kind, count, url, endpoint, db_config, binary, freeze, unique),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=side_env(producer, env))
    assert cons.stdout is not None and prod.stdout is not None and prod.stdin is not None
    try:
        expect(cons.stdout, "ready")
        expect(prod.stdout, "ready")
        time.sleep(0.2)  # the client has connected
        prod.stdin.write("go\n")
        prod.stdin.flush()
        start_ns = int(prod.stdout.readline())
        out, _ = cons.communicate(timeout=600)
        if cons.returncode != 0:
            raise RuntimeError(f"{consumer} consumer failed ({cons.returncode})")
        result = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
        assert result["count"] >= count, result
        if result.get("early_timeouts"):
            print(f"  note: the C++ consumer's select() returned TIMEOUT early {result['early_timeouts']} time(s)",
                  flush=True)
        used = json.loads(expect(prod.stdout, "{"))
        expect(prod.stdout, "sent")
        prod.stdin.write("quit\n")
        prod.stdin.flush()
        prod.wait(timeout=60)
        cpu = float(result["cpu_ns"]) / 1e3 / count
        producer_cpu = (used["producer_cpu_ns"] / 1e3 / count, used["producer_thread_ns"] / 1e3 / count)
        return (float(result["last_ns"] - start_ns) / 1e9, cpu, float(result["last_ns"] - result["first_ns"]) / 1e9,
                producer_cpu)
    finally:
        for p in (cons, prod):
            if p.poll() is None:
                p.kill()
                p.wait()


def build_cpp(swss_common: Path, out_dir: Path) -> Path:
    binary = out_dir / "zmq_bench"
    libs = swss_common / "common" / ".libs"
    subprocess.run(
        ["g++", "-O2", "-std=c++14", f"-I{swss_common / 'common'}", f"-I{swss_common}", "-I/usr/include/libnl3",
         str(HERE / "cpp" / "zmq_bench.cpp"), "-o", str(binary),
         f"-L{libs}", f"-Wl,-rpath,{libs}", "-lswsscommon", "-lhiredis", "-lpthread"],
        check=True,
    )
    return binary


def swss_common_dir(given: Path | None) -> Path | None:
    if given:
        return given
    env_file = ROOT.parent / "cpp" / "env.sh"
    if env_file.exists():
        out = subprocess.run(["bash", "-c", f'. "{env_file}" >/dev/null 2>&1; printf %s "$SWSS_COMMON_DIR"'],
                             capture_output=True, text=True).stdout
        if out and (Path(out) / "common" / ".libs" / "libswsscommon.so").exists():
            return Path(out)
    return None


ROWS = [
    # label, producer, consumer, kind
    ("swssd ZMQ", "swssd", "swssd", "zmq"),
    ("swssd Redis key-set", "swssd", "swssd", "redis"),
    ("C++ ZMQ", "cpp", "cpp", "zmq"),
    ("C++ -> swssd ZMQ", "cpp", "swssd", "zmq"),
    ("swssd -> C++ ZMQ", "swssd", "cpp", "zmq"),
    # swssd without its C one-change functions (SWSSD_NO_SPEEDUPS=1: what runs where none was built)
    ("C++ -> swssd ZMQ, no C", "cpp", "swssd-py", "zmq"),
    ("swssd -> C++ ZMQ, no C", "swssd-py", "cpp", "zmq"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--swss-common", type=Path, default=os.environ.get("SWSS_COMMON_DIR"))
    parser.add_argument("--rows", nargs="+", help="only these rows (labels as printed)")
    parser.add_argument("--no-freeze", action="store_true", help="no gc.collect()/gc.freeze() after set-up")
    parser.add_argument("--unique-fields", action="store_true", help="field values that differ per key")
    parser.add_argument("--role", choices=["produce", "consume"], help=argparse.SUPPRESS)
    parser.add_argument("--kind", choices=["zmq", "redis"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        role = swssd_produce if args.role == "produce" else swssd_consume
        uvloop.run(role(args.kind, args.url, args.endpoint, args.count, not args.no_freeze, args.unique_fields))
        return

    sys.path.insert(0, str(ROOT))
    from swssd.redis.embedded_redis import EmbeddedRedis

    swss_common = swss_common_dir(args.swss_common)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis() as server:
        db_config = server.write_database_config(Path(tmp) / "database_config.json")
        binary = build_cpp(swss_common, Path(tmp)) if swss_common else None
        if binary is None:
            print("no sonic-swss-common tree (--swss-common or $SWSS_COMMON_DIR): swssd only")
        rows = [r for r in ROWS if binary is not None or "cpp" not in (r[1], r[2])]
        if args.rows:
            rows = [r for r in rows if r[0] in args.rows]
        url = f"unix://{server.unix_socket}"
        flush = redis.Redis(unix_socket_path=server.unix_socket)
        results: dict[int, dict[str, list[float]]] = {n: {} for n in args.changes}
        cpus: dict[int, dict[str, list[float]]] = {n: {} for n in args.changes}
        pops: dict[int, dict[str, list[float]]] = {n: {} for n in args.changes}
        sends: dict[int, dict[str, list[tuple[float, float]]]] = {n: {} for n in args.changes}
        for round_ in range(args.repeat):
            order = rows[round_ % len(rows):] + rows[:round_ % len(rows)]
            for n in args.changes:
                for label, producer, consumer, kind in order:
                    flush.flushall()
                    seconds, cpu, popping, sending = run_pair(producer, consumer, kind, n, url, db_config, binary,
                                                     not args.no_freeze, args.unique_fields)
                    results[n].setdefault(label, []).append(seconds)
                    pops[n].setdefault(label, []).append(popping)
                    sends[n].setdefault(label, []).append(sending)
                    cpus[n].setdefault(label, []).append(cpu)
                    said = f"  consumer CPU {cpu:.2f} us/change"
                    print(f"round {round_ + 1} {n:>7,} {label:20}: {seconds:7.3f} s  {n / seconds:10,.0f} changes/s"
                          f"  consumer alone {n / popping:10,.0f}/s{said}  producer CPU {sending[0]:.2f} us/change"
                          f" ({sending[1]:.2f} its sending thread)", flush=True)
        print()
        for n in args.changes:
            med = {label: statistics.median(v) for label, v in results[n].items()}
            best = {label: min(v) for label, v in results[n].items()}
            shape = "values that differ per key" if args.unique_fields else "the same 4 values for every key"
            print(f"{n:,} changes ({shape}), medians of {args.repeat} (and the best round):")
            alone = {label: statistics.median(v) for label, v in pops[n].items()}
            print("| path | seconds | changes/s | best seconds | consumer alone, changes/s "
                  "| consumer CPU us/change | producer CPU us/change (sending thread) |")
            print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
            for label, *_ in rows:
                cpu_med = f"{statistics.median(cpus[n][label]):.2f}"
                sent = sends[n][label]
                print(f"| {label} | {med[label]:.3f} | {n / med[label]:,.0f} | {best[label]:.3f} "
                      f"| {n / alone[label]:,.0f} | {cpu_med} | {statistics.median(c for c, _ in sent):.2f} "
                      f"({statistics.median(t for _, t in sent):.2f}) |")
            if "C++ ZMQ" in med and "C++ -> swssd ZMQ" in med:
                print(f"swssd consumer vs C++ consumer (C++ producer), first pop to last pop: "
                      f"{alone['C++ ZMQ'] / alone['C++ -> swssd ZMQ']:.2f}x; from the first send: "
                      f"{med['C++ ZMQ'] / med['C++ -> swssd ZMQ']:.2f}x")
            if "C++ ZMQ" in med and "swssd -> C++ ZMQ" in med:
                print(f"swssd producer vs C++ producer (C++ consumer), from the first send: "
                      f"{med['C++ ZMQ'] / med['swssd -> C++ ZMQ']:.2f}x")
            if "C++ ZMQ" in med and "C++ -> swssd ZMQ, no C" in med:
                print(f"without C: swssd consumer vs C++ consumer, first pop to last pop: "
                      f"{alone['C++ ZMQ'] / alone['C++ -> swssd ZMQ, no C']:.2f}x")
            if "C++ ZMQ" in med and "swssd -> C++ ZMQ, no C" in med:
                print(f"without C: swssd producer vs C++ producer, from the first send: "
                      f"{med['C++ ZMQ'] / med['swssd -> C++ ZMQ, no C']:.2f}x")
            if len(med) < len(ROWS):
                continue
            print(f"swssd ZMQ vs swssd Redis: {med['swssd Redis key-set'] / med['swssd ZMQ']:.1f}x")
            if "C++ ZMQ" in med:
                print(f"swssd ZMQ vs C++ ZMQ: {med['C++ ZMQ'] / med['swssd ZMQ']:.2f}x")
                print(f"swssd consumer vs C++ consumer (C++ producer): {med['C++ ZMQ'] / med['C++ -> swssd ZMQ']:.2f}x")
                print(f"swssd producer vs C++ producer (C++ consumer): {med['C++ ZMQ'] / med['swssd -> C++ ZMQ']:.2f}x")
            print()


if __name__ == "__main__":
    main()
