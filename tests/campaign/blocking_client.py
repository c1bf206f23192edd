"""The blocking layer's workload, a process of its own (signal handlers run in a main thread):
swssd.compat.swsscommon calls (DBConnector get, hget, hgetall, blpop, exists with a short timeout;
ConfigDBConnector.get_entry) against the campaign's Redis, some of them
interrupted by a SIGALRM whose handler raises, while the campaign pauses, kills and restarts Redis.

Every key holds a value naming it (`BLK:s3` = "s3"), so a reply meant for another call is seen:
a value naming another key, or the wrong type. A missing key (a wiped Redis) is written again.
After an error the connection is used again, as a program would (the C++ binding then raises
until it is replaced); after 5 errors in a row it is replaced.

    python -m campaign.blocking_client --port 6379 --db-config database_config.json --seed 1 --seconds 5
    (PYTHONPATH=tests; the database_config.json places CONFIG_DB on that port, for ConfigDBConnector)

prints one JSON line: calls, ok, errors, interrupts, wrong (replies to the wrong call), examples.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import sys
import time
from typing import Any

KEYS = 8


class Interrupted(Exception):
    """What the SIGALRM handler raises inside a call."""


def _alarm(signum: int, frame: Any) -> None:
    raise Interrupted


def _connect(port: int, timeout_ms: int) -> Any:
    from swssd.compat.swsscommon import DBConnector

    while True:
        try:
            return DBConnector(0, "127.0.0.1", port, timeout_ms)
        except (Exception, Interrupted):
            time.sleep(0.05)


def _connect_config_db(port: int) -> Any:
    """A ConfigDBConnector (CONFIG_DB as database_config.json places it, SonicDBConfig loaded).

    Its connect() sets notify-keyspace-events (to KEA, as the C++ one does): after a Redis
    restart that would turn keyspace events back on for the daemon and hide whether the
    daemon does so itself. So it sets the value Redis has now instead (a change between the
    two calls is the small window left)."""
    import redis

    from swssd.compat.dbinterface import DBInterface
    from swssd.compat.swsscommon import ConfigDBConnector

    while True:
        try:
            with redis.Redis(port=port, socket_timeout=1, decode_responses=True) as admin:
                events = admin.config_get("notify-keyspace-events")["notify-keyspace-events"]
            DBInterface.KEYSPACE_EVENTS = events  # this process's own class: what connect() sets
            cdb = ConfigDBConnector()
            cdb.connect(wait_for_init=False)
            return cdb
        except (Exception, Interrupted):
            time.sleep(0.05)


def _expected(op: str, i: int) -> tuple[Any, ...]:
    """The replies a call may rightly get: its key's value, or nothing (a wiped Redis)."""
    return {"get": (f"s{i}", None), "hget": (f"h{i}", None), "hgetall": ({"f": f"h{i}"}, {}),
            "blpop": (f"l{i}", None), "exists": (True, False), "cfg_get": ({"f": f"e{i}"}, {})}[op]


def _call(conn: Any, cdb: Any, op: str, i: int) -> Any:
    if op == "cfg_get":
        return dict(cdb.get_entry("BLKCFG", f"e{i}"))
    if op == "get":
        return conn.get(f"BLK:s{i}")
    if op == "hget":
        return conn.hget(f"BLK:h{i}", "f")
    if op == "hgetall":
        return dict(conn.hgetall(f"BLK:h{i}"))
    if op == "blpop":
        conn.rpush(f"BLK:l{i}", f"l{i}")
        return conn.blpop(f"BLK:l{i}", 1)
    return conn.exists(f"BLK:s{i}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--timeout-ms", type=int, default=200)
    parser.add_argument("--db-config", required=True, help="database_config.json for ConfigDBConnector")
    args = parser.parse_args(argv)
    from swssd.compat.swsscommon import SonicDBConfig

    SonicDBConfig.initialize(args.db_config)
    rng = random.Random(args.seed)
    signal.signal(signal.SIGALRM, _alarm)
    stats: dict[str, Any] = {"calls": 0, "ok": 0, "errors": 0, "interrupts": 0, "wrong": 0, "examples": []}
    conn, cdb = _connect(args.port, args.timeout_ms), _connect_config_db(args.port)
    in_a_row = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        op, i = rng.choice(("get", "hget", "hgetall", "blpop", "exists", "cfg_get")), rng.randrange(KEYS)
        interrupt = rng.random() < 0.2
        stats["calls"] += 1
        try:
            try:
                if interrupt:
                    signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.0001, 0.005))
                reply = _call(conn, cdb, op, i)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except Interrupted:
            stats["interrupts"] += 1
            in_a_row += 1
        except Exception:
            stats["errors"] += 1
            in_a_row += 1
        else:
            in_a_row = 0
            if reply in _expected(op, i):
                stats["ok"] += 1
            else:
                stats["wrong"] += 1
                if len(stats["examples"]) < 5:
                    stats["examples"].append(f"{op} {i} -> {reply!r}")
            if reply in (None, {}, False):
                try:
                    conn.set(f"BLK:s{i}", f"s{i}")
                    conn.hset(f"BLK:h{i}", "f", f"h{i}")
                    cdb.set_entry("BLKCFG", f"e{i}", {"f": f"e{i}"})
                except (Exception, Interrupted):
                    in_a_row += 1
        if in_a_row >= 5:
            with contextlib.suppress(Exception, Interrupted):
                conn.close()
            with contextlib.suppress(Exception, Interrupted):
                cdb.close()
            conn, cdb = _connect(args.port, args.timeout_ms), _connect_config_db(args.port)
            in_a_row = 0
    print(json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
