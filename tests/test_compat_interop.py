"""The compatible layer and sonic-swss-common's binding on one redis-server, for the table kinds
beyond ConfigDB: the same call sequences through each leave the same Redis state (hashes in
HGETALL order, key sets, op queues), and what one side's producer writes the other side's consumer
pops. The binding runs in a subprocess (see test_configdb_interop for its environment); skipped
with the reason when it cannot be imported."""

from __future__ import annotations

import ast
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat import swsscommon as ours_module
from swssd.compat.dbconnector import DBConnector
from swssd.compat.pubsub import PubSub
from swssd.redis.embedded_redis import EmbeddedRedis
from test_configdb_interop import swss_env

_ = (sonic_db_config, swss_env)

#: ops: (object, method, args); objects made on first use. The same source runs here and there.
DRIVER = """
def drive(sc, config, ops):
    sc.SonicDBConfig.initialize(config)
    db = sc.DBConnector("APPL_DB", 0, True)
    made = {
        "PST": lambda: sc.ProducerStateTable(db, "ROUTE_TABLE"),
        "CST": lambda: sc.ConsumerStateTable(db, "ROUTE_TABLE"),
        "PT": lambda: sc.ProducerTable(db, "Q_TABLE"),
        "CT": lambda: sc.ConsumerTable(db, "Q_TABLE"),
        "T": lambda: sc.Table(db, "PORT_TABLE"),
        "DB": lambda: db,
        "NP": lambda: sc.NotificationProducer(db, "NOTIFY"),
    }
    objects = {}
    out = []
    for name, method, args in ops:
        obj = objects.get(name) or objects.setdefault(name, made[name]())
        args = [sc.FieldValuePairs([tuple(p) for p in a]) if isinstance(a, list) and a and isinstance(a[0], list)
                else a for a in args]
        try:
            result = getattr(obj, method)(*args)
            out.append(("ok", result if isinstance(result, (int, str, type(None), list, tuple, dict)) else None))
        except Exception as exc:
            out.append(("error", type(exc).__name__))
    return out
"""
BINDING = DRIVER + """
import ast, sys
from swsscommon import swsscommon as sc
request = ast.literal_eval(sys.stdin.read())
print(repr(drive(sc, request["config"], request["ops"])))
"""


def ours(config: Path, ops: list[tuple[str, str, list[Any]]]) -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(DRIVER, namespace)
    ours_module.SonicDBConfig.reset()
    try:
        return list(namespace["drive"](ours_module, str(config), ops))
    finally:
        ours_module.SonicDBConfig.reset()


def theirs(env: dict[str, str], config: Path, ops: list[tuple[str, str, list[Any]]]) -> list[Any]:
    done = subprocess.run([env.get("PYTHON", sys.executable), "-c", BINDING], input=repr({"config": str(config),
                          "ops": ops}), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


def snapshot(db: DBConnector) -> dict[str, Any]:
    """Every key of APPL_DB with its type and contents (sets sorted, lists and hashes in order)."""
    conn = db.connection
    state: dict[str, Any] = {}
    for key in sorted(conn.command("KEYS", "*")):
        kind = conn.command("TYPE", key)
        if kind == "hash":
            state[key] = conn.command("HGETALL", key)
        elif kind == "set":
            state[key] = sorted(conn.command("SMEMBERS", key))
        elif kind == "list":
            state[key] = conn.command("LRANGE", key, 0, -1)
        else:
            state[key] = (kind, conn.command("GET", key))
    return state


def messages(pubsub: PubSub) -> list[tuple[str, str]]:
    """(channel, message) of everything published since the last call."""
    out = []
    while message := pubsub.get_message(0.2):
        out.append((message["channel"], message["data"]))
    return out


def random_ops(seed: int, count: int = 60) -> list[tuple[str, str, list[Any]]]:
    rng = random.Random(seed)
    keys = [f"10.0.{i}.0/24" for i in range(6)]
    fields = ["nexthop", "ifname", "weight", "ports@"]

    def pairs() -> list[list[str]]:
        return [[rng.choice(fields), rng.choice(["a", "b", "é", "", "x y"])] for _ in range(rng.randint(1, 3))]

    ops: list[tuple[str, str, list[Any]]] = []
    for _ in range(count):
        kind = rng.randrange(9)
        key = rng.choice(keys)
        if kind == 0:
            ops.append(("PST", "set", [key, pairs()]))
        elif kind == 1:
            ops.append(("PST", "delete", [key]))
        elif kind == 2:
            ops.append(("PST", "delete", [rng.sample(keys, 2)]))
        elif kind == 3:
            ops.append(("PT", "set", [key, pairs()]))
        elif kind == 4:
            ops.append(("PT", "delete", [key]))
        elif kind == 5:
            ops.append(("T", "set", [key, pairs()]))
        elif kind == 6:
            ops.append(("T", "hset", [key, rng.choice(fields), "v"]))
        elif kind == 7:
            ops.append(("T", rng.choice(["delete", "_del"]), [key]))
        else:
            ops.append(("T", "hdel", [key, rng.choice(fields)]))
    reads = [("T", "getKeys", []), *(("T", "get", [k]) for k in keys), *(("T", "hget", [k, "nexthop"]) for k in keys)]
    return ops + reads + [("PST", "count", [])]


def normal(results: list[Any]) -> list[Any]:
    """getKeys in KEYS order, which follows the server's hash table, not the calls: sorted."""
    return [(s, sorted(v) if isinstance(v, tuple) and all(isinstance(x, str) for x in v) else v) for s, v in results]


@pytest.mark.parametrize("seed", range(6))
def test_same_calls_same_redis_state(swss_env: dict[str, str], clean_redis: EmbeddedRedis, sonic_db_config: Path,
                                     seed: int) -> None:
    ops = random_ops(seed)
    db = DBConnector("APPL_DB", 0)
    published = db.pubsub()
    published.psubscribe("*")  # every PUBLISH, the channels' wake-ups included
    their_results = theirs(swss_env, sonic_db_config, ops)
    their_state = snapshot(db)
    their_messages = messages(published)
    db.flushdb()
    our_results = ours(sonic_db_config, ops)
    assert snapshot(db) == their_state
    assert messages(published) == their_messages
    assert normal(our_results) == normal(their_results)


def test_each_side_pops_what_the_other_wrote(swss_env: dict[str, str], sonic_db_config: Path) -> None:
    writes = [
        ("PST", "set", ["k1", [["a", "1"], ["b", "2"]]]), ("PST", "set", ["k2", [["c", "3"]]]),
        ("PST", "delete", ["k3"]), ("PST", "delete", [["k4", "k5"]]),
        ("PT", "set", ["q1", [["f", "v"]]]), ("PT", "delete", ["q2"]),
    ]
    pops = [("CST", "pops", []), ("CT", "pops", [])]
    theirs(swss_env, sonic_db_config, writes)
    popped_by_us = ours(sonic_db_config, pops)
    ours(sonic_db_config, writes)
    popped_by_them = theirs(swss_env, sonic_db_config, pops)

    def entries(result: Any) -> list[Any]:
        status, value = result
        assert status == "ok"
        return sorted(ours_module.transpose_pops(value)) if value[0] else []

    assert [entries(r) for r in popped_by_us] == [entries(r) for r in popped_by_them]
    state, queue = (entries(r) for r in popped_by_us)
    assert state == [("k1", "SET", (("a", "1"), ("b", "2"))), ("k2", "SET", (("c", "3"),)),
                     ("k3", "DEL", ()), ("k4", "DEL", ()), ("k5", "DEL", ())]
    assert queue == [("q1", "SET", (("f", "v"),)), ("q2", "DEL", ())]
