"""Redis time per popped key of each ConsumerStateTable pop script (issue 12).

    .venv/bin/python bench/bench_pop_scripts.py [--keys 100000] [--repeat 3]

For each round and each script (the order rotating from round to round), a private redis-server
(swssd.embedded_redis, no persistence) gets a key set of --keys keys, each with a state hash of 4
fields, as batched sets leave them; the script then pops it 128 keys a call until it is empty,
and INFO commandstats (after CONFIG RESETSTAT) says how long Redis spent in EVALSHA. Printed: the
median µs per key and each round's, and the ratio to the C++ script's median. The client's own
time is not in these figures; bench_cpp.py measures whole drains side by side with the C++ library.
"""

from __future__ import annotations

import argparse
import statistics
import time

import redis

from swssd.embedded_redis import EmbeddedRedis
from swssd.lua import CST_POPS, CST_POPS_FAST, CST_POPS_RELIABLE, CST_POPS_TRACKED, Script

TABLE = "BENCH_TABLE"
BATCH = 128
KEYS = [f"{TABLE}_KEY_SET", f"{TABLE}:", f"{TABLE}_DEL_SET"]
RECORD = [f"_SWSSD_INFLIGHT:bench:{TABLE}", f"_SWSSD_DEAD:bench:{TABLE}"]
#: name -> (script, keys, args); the daemon's pop also records each batch (cleared as it goes here)
SCRIPTS: dict[str, tuple[Script, list[str], list[str | int]]] = {
    "C++ consumer_state_table_pops.lua": (CST_POPS, KEYS, [BATCH, "_"]),
    "swssd tracked (library, track_deletes)": (CST_POPS_TRACKED, KEYS, [BATCH, "_"]),
    "swssd fast (library, fast_scripts)": (CST_POPS_FAST, KEYS, [BATCH, "_"]),
    "swssd reliable (the daemon's pop)": (CST_POPS_RELIABLE, KEYS + RECORD, [BATCH, "_", 1000, 512]),
}


def prefill(r: redis.Redis, keys: int) -> None:
    r.flushdb()
    pipe = r.pipeline(transaction=False)
    for i in range(keys):
        key = f"Ethernet{i}"
        pipe.sadd(KEYS[0], key)
        pipe.hset(f"_{TABLE}:{key}", mapping={"alias": f"etp{i}", "speed": "100000", "mtu": "9100",
                                             "admin_status": "up"})
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()


def redis_us_per_key(r: redis.Redis, script: Script, keys: list[str], args: list[str | int], n: int) -> float:
    """Pop everything with `script`; Redis's EVALSHA time divided by the keys popped."""
    sha = r.script_load(script.source)
    prefill(r, n)
    r.config_resetstat()
    while r.scard(KEYS[0]):
        reply = r.evalsha(sha, len(keys), *keys, *args)
        if script is CST_POPS_RELIABLE and reply[2]:
            r.hdel(RECORD[0], reply[0])  # as the daemon clears what it handled (not timed by Redis)
    usec = r.info("commandstats")["cmdstat_evalsha"]["usec"]
    return float(usec) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    runs: dict[str, list[float]] = {name: [] for name in SCRIPTS}
    with EmbeddedRedis() as server:
        r = redis.Redis.from_url(server.url)
        names = list(SCRIPTS)
        for round_ in range(args.repeat):
            for name in names[round_ % len(names):] + names[: round_ % len(names)]:
                runs[name].append(redis_us_per_key(r, *SCRIPTS[name], args.keys))
            print(f"  round {round_ + 1} of {args.repeat} done", flush=True)
        version = r.info("server")["redis_version"]
    base = statistics.median(runs[names[0]])
    print(f"\nRedis time per popped key, {args.keys:,} keys x 4 fields, pop batch {BATCH}, redis-server {version}, "
          f"medians of {args.repeat} rounds ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})")
    for name, got in runs.items():
        med = statistics.median(got)
        print(f"  {name:40s} {med:6.2f} us  ({med / base:.2f} of C++)   rounds: {', '.join(f'{x:.2f}' for x in got)}")


if __name__ == "__main__":
    main()
