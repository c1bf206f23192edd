"""Redis time per popped key of each pop script: ConsumerStateTable's and ConsumerTable's (issue 12).

    .venv/bin/python bench/bench_pop_scripts.py [--keys 100000] [--repeat 3] [--only state|queue]

For each round and each script (the order rotating from round to round), a private redis-server
(swssd.redis.embedded_redis, no persistence) is filled with --keys keys of 4 fields: for a state pop a
key set with a state hash per key, as batched sets leave them; for a queue pop an op queue of SET
operations, as ProducerTable leaves it. The script then pops it 128 keys a call until it is empty,
and INFO commandstats (after CONFIG RESETSTAT) says how long Redis spent in EVALSHA. Printed: the
median µs per key and each round's, and the ratio to the C++ script's median of the same kind. The
client's own time is not in these figures; bench_cpp.py measures whole drains side by side with the
C++ library.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import redis

from swssd.lua import (
    CST_POPS,
    CST_POPS_FAST,
    CST_POPS_RELIABLE,
    CST_POPS_TRACKED,
    CT_POPS,
    CT_POPS_FAST,
    CT_POPS_RELIABLE,
    Script,
)
from swssd.redis.embedded_redis import EmbeddedRedis

TABLE = "BENCH_TABLE"
BATCH = 128
KEY_SET = f"{TABLE}_KEY_SET"
QUEUE = f"{TABLE}_KEY_VALUE_OP_QUEUE"
STATE_KEYS = [KEY_SET, f"{TABLE}:", f"{TABLE}_DEL_SET"]
RECORD = [f"_SWSSD_INFLIGHT:bench:{TABLE}", f"_SWSSD_DEAD:bench:{TABLE}"]
#: kind -> name -> (script, keys, args), the C++ script first; the daemon's pops also record each
#: batch (cleared as it goes here)
SCRIPTS: dict[str, dict[str, tuple[Script, list[str], list[str | int]]]] = {
    "state": {
        "C++ consumer_state_table_pops.lua": (CST_POPS, STATE_KEYS, [BATCH, "_"]),
        "swssd tracked (library, track_deletes)": (CST_POPS_TRACKED, STATE_KEYS, [BATCH, "_"]),
        "swssd fast (library, fast_scripts)": (CST_POPS_FAST, STATE_KEYS, [BATCH, "_"]),
        "swssd reliable (the daemon's pop)": (CST_POPS_RELIABLE, STATE_KEYS + RECORD, [BATCH, "_", 1000, 512]),
    },
    "queue": {
        "C++ consumer_table_pops.lua": (CT_POPS, [QUEUE, TABLE], [BATCH, 1]),
        "swssd fast (library, fast_scripts)": (CT_POPS_FAST, [QUEUE, TABLE], [BATCH, 1]),
        "swssd reliable (the daemon's pop)": (CT_POPS_RELIABLE, [QUEUE, TABLE, *RECORD], [BATCH, 1, 1000, 512]),
    },
}
RELIABLE = (CST_POPS_RELIABLE, CT_POPS_RELIABLE)


def fields(i: int) -> dict[str, str]:
    return {"alias": f"etp{i}", "speed": "100000", "mtu": "9100", "admin_status": "up"}


def fill_state(r: redis.Redis, keys: int) -> Callable[[], int]:
    """A key set and a state hash per key; returns how many keys wait."""
    r.flushdb()
    pipe = r.pipeline(transaction=False)
    for i in range(keys):
        pipe.sadd(KEY_SET, f"Ethernet{i}")
        pipe.hset(f"_{TABLE}:Ethernet{i}", mapping=fields(i))
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    return lambda: int(r.scard(KEY_SET))


def fill_queue(r: redis.Redis, keys: int) -> Callable[[], int]:
    """An op queue of SETs (key, JSON field/value array, "SSET"), as producer_table_enqueue.lua
    pushes them; returns how many elements wait."""
    r.flushdb()
    pipe = r.pipeline(transaction=False)
    for i in range(keys):
        pipe.lpush(QUEUE, f"Ethernet{i}", json.dumps([x for fv in fields(i).items() for x in fv]), "SSET")
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    return lambda: int(r.llen(QUEUE))


FILL = {"state": fill_state, "queue": fill_queue}


def redis_us_per_key(
    r: redis.Redis, kind: str, script: Script, keys: list[str], args: list[str | int], n: int
) -> float:
    """Pop everything with `script`; Redis's EVALSHA time divided by the keys popped."""
    sha = r.script_load(script.source)
    waiting = FILL[kind](r, n)
    r.config_resetstat()
    while waiting():
        reply = r.evalsha(sha, len(keys), *keys, *args)
        if script in RELIABLE and reply[2]:
            r.hdel(RECORD[0], reply[0])  # as the daemon clears what it handled (not timed by Redis)
    usec = r.info("commandstats")["cmdstat_evalsha"]["usec"]
    return float(usec) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=sorted(SCRIPTS), help="one kind of pop (default: both)")
    args = ap.parse_args()
    kinds = [args.only] if args.only else list(SCRIPTS)
    runs: dict[tuple[str, str], list[float]] = {(k, name): [] for k in kinds for name in SCRIPTS[k]}
    with EmbeddedRedis() as server:
        r = redis.Redis.from_url(server.url)
        for round_ in range(args.repeat):
            for kind in kinds:
                names = list(SCRIPTS[kind])
                for name in names[round_ % len(names):] + names[: round_ % len(names)]:
                    runs[kind, name].append(redis_us_per_key(r, kind, *SCRIPTS[kind][name], args.keys))
            print(f"  round {round_ + 1} of {args.repeat} done", flush=True)
        version = r.info("server")["redis_version"]
    print(f"\nRedis time per popped key, {args.keys:,} keys x 4 fields, pop batch {BATCH}, redis-server {version}, "
          f"medians of {args.repeat} rounds ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    for kind in kinds:
        base = statistics.median(runs[kind, next(iter(SCRIPTS[kind]))])
        print(f"  {kind} pops")
        for name in SCRIPTS[kind]:
            got = runs[kind, name]
            med = statistics.median(got)
            print(f"    {name:40s} {med:6.2f} us  ({med / base:.2f} of C++)   rounds: "
                  f"{', '.join(f'{x:.2f}' for x in got)}")


if __name__ == "__main__":
    main()
