"""The cost of the daemon's in-flight record: pops/s and Redis busy share with and without it.

    .venv/bin/python bench/bench_inflight.py [--keys 100000] [--repeat 3]

N keys (4 fields each) are written first, then drained with pop batch 128, three ways per table kind:

  without     the pop script the daemon would use without a record, one pop at a time: the
              tracked state script (the C++ script's effects, deletes reported) / the C++ queue script
  with        swssd's reliable script (entries checked, set aside when bad, the batch appended to
              the in-flight hash), one pop at a time, and the finished batches removed from the
              record with one HDEL per 8 pops (the daemon's clearing runs every ~50 ms)
  ReliablePop the daemon's own object: prefetch, a pending map, clearing task (every task marked
              done as soon as it is handed over: no handler cost)

keys/s is N over the drain's wall time; redis cmd % is the share of that time Redis spent in the
commands sent (INFO commandstats: EVALSHA, HDEL, HGET, HMGET; CONFIG RESETSTAT first), redis CPU %
is redis-server's CPU time over wall time, redis µs/key those commands' time per key (what bounds
keys/s once Redis is saturated). Medians of --repeat interleaved runs, and the best run (highest
keys/s, lowest µs/key: the least disturbed one on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Awaitable, Callable

import uvloop

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_tables
from bench_tables import BATCH, TABLE, Bench, Case, Entry, pst_set_many, pt_buffered

from swssd import ConsumerStateTable, ConsumerTable, DBConnector
from swssd.lua import CST_POPS_RELIABLE, CST_POPS_TRACKED, CT_POPS, CT_POPS_RELIABLE
from swssd.orch.pending import PendingMap
from swssd.orch.reliable_pop import DEAD_CAP, EXCERPT, ReliablePop, dead_key, inflight_key
from swssd.redis.embedded_redis import EmbeddedRedis

# The record's own commands count as the client's: the clearing task sends them.
bench_tables.TOP_LEVEL |= {"hdel", "hget", "hmget"}
CLEAR_EVERY = 8

Run = Callable[[DBConnector, list[Entry]], Awaitable[int]]


def _calls(db: DBConnector, kind: str, reliable: bool) -> tuple[object, list[str], list[str | int]]:
    record, dead = inflight_key("bench", TABLE), dead_key("bench", TABLE)
    if kind == "state":
        keys = [f"{TABLE}_KEY_SET", f"{TABLE}:", f"{TABLE}_DEL_SET"]
        if reliable:
            return CST_POPS_RELIABLE, [*keys, record, dead], [BATCH, "_", DEAD_CAP, EXCERPT]
        return CST_POPS_TRACKED, keys, [BATCH, "_"]
    keys = [f"{TABLE}_KEY_VALUE_OP_QUEUE", TABLE]
    if reliable:
        return CT_POPS_RELIABLE, [*keys, record, dead], [BATCH, 1, DEAD_CAP, EXCERPT]
    return CT_POPS, keys, [BATCH, 1]


def _consumer(db: DBConnector, kind: str) -> ConsumerStateTable | ConsumerTable:
    if kind == "state":
        return ConsumerStateTable(db, TABLE, BATCH, track_deletes=True)
    return ConsumerTable(db, TABLE, BATCH)


def script_drain(kind: str, reliable: bool) -> Run:
    """One pop at a time with the given script (parsed as the daemon parses it)."""

    async def run(db: DBConnector, entries: list[Entry]) -> int:
        script, keys, args = _calls(db, kind, reliable)
        consumer = _consumer(db, kind)
        n, finished = 0, []
        while True:
            reply = await db.evalsha(script, keys, args, resend=False)  # type: ignore[arg-type]
            if reliable:
                seq, more, entries_, _aside = reply
                n += len(consumer.parse(json.loads(entries_))) if entries_ else 0  # the batch's JSON text
                if entries_:
                    finished.append(str(seq))
                if len(finished) >= CLEAR_EVERY or not more:
                    if finished:
                        await db.redis.hdel(keys[-2], *finished)
                    finished = []
                if not more:
                    return n
            else:
                got = consumer.parse(reply)
                n += len(got)
                if not got:
                    return n

    return run


def reliable_pop_drain(kind: str) -> Run:
    """The daemon's ReliablePop: prefetch, pending map, clearing task; tasks done at once."""

    async def run(db: DBConnector, entries: list[Entry]) -> int:
        consumer = _consumer(db, kind)
        pending = PendingMap()
        source = ReliablePop(consumer, pending, instance="bench")
        source.start()
        consumer.notify()
        n = 0
        while consumer.ready:
            for batch in await source.pop():
                pending.add_many(batch.tasks, batch.seq)
                n += len(batch.tasks)
                for key, _ in pending.snapshot():
                    pending.done(pending.take(key))
                source.progress()
        await source.close(5.0)
        return n

    return run


async def main(args: argparse.Namespace) -> None:
    cases = []
    for kind, prepare in (("state", pst_set_many), ("queue", pt_buffered)):
        cases += [
            Case(f"{kind} without record", args.keys, None, prepare, script_drain(kind, False)),
            Case(f"{kind} with record", args.keys, None, prepare, script_drain(kind, True)),
            Case(f"{kind} ReliablePop", args.keys, None, prepare, reliable_pop_drain(kind)),
        ]
    with EmbeddedRedis() as server:
        bench = Bench(server, f"unix://{server.unix_socket}")
        samples: dict[str, list[bench_tables.Sample]] = {c.name: [] for c in cases}
        for _ in range(args.repeat):
            for case in cases:
                samples[case.name].append(await bench.measure(case))
    rows = {}
    print(f"{'case':<24} {'keys/s':>9} {'best':>9} {'redis cmd %':>11} {'redis CPU %':>11} {'python CPU %':>12} "
          f"{'redis µs/key':>12} {'best':>6}")
    for name, ss in samples.items():
        usec = [s.redis_usec / s.keys for s in ss]
        row = {
            "keys_per_s": round(statistics.median(s.rate for s in ss)),
            "best_keys_per_s": round(max(s.rate for s in ss)),
            "redis_cmd_pct": round(statistics.median(100 * s.redis_usec / 1e6 / s.wall for s in ss)),
            "redis_cpu_pct": round(statistics.median(100 * s.redis_cpu / s.wall for s in ss)),
            "python_cpu_pct": round(statistics.median(100 * s.python_cpu / s.wall for s in ss)),
            "redis_usec_per_key": round(statistics.median(usec), 2),
            "best_redis_usec_per_key": round(min(usec), 2),
        }
        rows[name] = row
        print(f"{name:<24} {row['keys_per_s']:>9,} {row['best_keys_per_s']:>9,} {row['redis_cmd_pct']:>11} "
              f"{row['redis_cpu_pct']:>11} {row['python_cpu_pct']:>12} {row['redis_usec_per_key']:>12} "
              f"{row['best_redis_usec_per_key']:>6}")
    for kind in ("state", "queue"):
        with_, without = rows[f"{kind} with record"], rows[f"{kind} without record"]
        print(f"{kind}: with/without record: keys/s median {with_['keys_per_s'] / without['keys_per_s']:.3f}, "
              f"best {with_['best_keys_per_s'] / without['best_keys_per_s']:.3f}; redis µs/key best "
              f"{without['best_redis_usec_per_key'] / with_['best_redis_usec_per_key']:.3f} (target >= 0.90)")
    print(json.dumps({"rows": rows, "load_average": os.getloadavg()[0]}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    uvloop.run(main(parser.parse_args()))
