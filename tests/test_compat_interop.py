"""The compatible layer and sonic-swss-common's binding on one redis-server, for the table kinds
beyond ConfigDB: the same call sequences through each leave the same Redis state (hashes in
HGETALL order, key sets, op queues), and what one side's producer writes the other side's consumer
pops. The binding runs in a subprocess (see test_configdb_interop for its environment); skipped
with the reason when it cannot be imported."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


def ours(config: Path, ops: list[Any]) -> list[Any]:
    namespace: dict[str, Any] = {}
    exec(DRIVER, namespace)
    ours_module.SonicDBConfig.reset()  # the driver initializes it with `config`, and leaves it so
    return list(namespace["drive"](ours_module, str(config), ops))


def theirs(env: dict[str, str], config: Path, ops: list[Any]) -> list[Any]:
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


def both(swss_env: dict[str, str], sonic_db_config: Path, db: DBConnector, calls: list[Op]) -> tuple[Any, Any]:
    """`calls` through the binding, then through swssd's layer, each on an empty APPL_DB (`db`):
    they must leave the same state and publish the same messages; the results of each."""
    db.flushdb()
    published = db.pubsub()
    published.psubscribe("*")  # every PUBLISH, the channels' wake-ups included
    try:
        their_results = theirs(swss_env, sonic_db_config, calls)
        their_state = snapshot(db)
        their_messages = messages(published)
        db.flushdb()
        our_results = ours(sonic_db_config, calls)
        assert snapshot(db) == their_state
        assert messages(published) == their_messages
    finally:
        published.punsubscribe("*")  # a pattern left on the server counts in every later test's PUBLISH
    return their_results, our_results


KEYS = [f"10.0.{i}.0/24" for i in range(4)] + ["", "a:b", "é"]
FIELDS = ["nexthop", "ifname", "ports@", "x y", "é"]
VALUES = ["a", "", "None", "é", "x y", "1,2"]
Op = tuple[str, str, list[Any]]

pairs = st.lists(st.tuples(st.sampled_from(FIELDS), st.sampled_from(VALUES)).map(list), min_size=1, max_size=3)
key = st.sampled_from(KEYS)
one_op: st.SearchStrategy[Op] = st.one_of(
    st.tuples(st.just("PST"), st.just("set"), st.tuples(key, pairs).map(list)),
    st.tuples(st.just("PST"), st.just("delete"), st.tuples(key).map(list)),
    st.tuples(st.just("PST"), st.just("delete"), st.tuples(st.lists(key, min_size=1, max_size=3)).map(list)),
    st.tuples(st.just("PT"), st.just("set"), st.tuples(key, pairs).map(list)),
    st.tuples(st.just("PT"), st.just("delete"), st.tuples(key).map(list)),
    st.tuples(st.just("T"), st.just("set"), st.tuples(key, pairs).map(list)),
    st.tuples(st.just("T"), st.just("hset"), st.tuples(key, st.sampled_from(FIELDS), st.sampled_from(VALUES)).map(
        list)),
    st.tuples(st.just("T"), st.sampled_from(["delete", "_del"]), st.tuples(key).map(list)),
    st.tuples(st.just("T"), st.just("hdel"), st.tuples(key, st.sampled_from(FIELDS)).map(list)),
)
READS: list[Op] = [
    ("T", "getKeys", []), *(("T", "get", [k]) for k in KEYS), *(("T", "hget", [k, "nexthop"]) for k in KEYS),
    ("PST", "count", []),
]


def normal(results: list[Any]) -> list[Any]:
    """getKeys in KEYS order, which follows the server's hash table, not the calls: sorted."""
    return [(s, sorted(v) if isinstance(v, tuple) and all(isinstance(x, str) for x in v) else v) for s, v in results]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(one_op, min_size=1, max_size=40))
def test_same_calls_same_redis_state(swss_env: dict[str, str], clean_redis: EmbeddedRedis, sonic_db_config: Path,
                                     ops: list[Op]) -> None:
    """Property: any sequence of writes, through either, leaves the same APPL_DB, publishes the same
    messages and returns the same values (the reads after it included)."""
    their_results, our_results = both(swss_env, sonic_db_config, DBConnector("APPL_DB", 0), [*ops, *READS])
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


TEMP_VIEW: list[Op] = [
    # the table as a consumer left it (ROUTE_TABLE:<key> hashes)
    ("DB", "hset", ["ROUTE_TABLE:keep", "a", "1"]), ("DB", "hset", ["ROUTE_TABLE:gone", "a", "1"]),
    ("DB", "hset", ["ROUTE_TABLE:change", "a", "1"]), ("DB", "hset", ["ROUTE_TABLE:change", "b", "2"]),
    ("DB", "hset", ["ROUTE_TABLE:fewer", "a", "1"]), ("DB", "hset", ["ROUTE_TABLE:fewer", "b", "2"]),
    ("PST", "set", ["pending", [["p", "1"]]]),  # dropped by apply_temp_view's clear
    ("PST", "create_temp_view", []),
    ("PST", "set", ["keep", [["a", "1"]]]), ("PST", "set", ["change", [["a", "1"], ["b", "3"]]]),
    ("PST", "set", ["fewer", [["a", "1"]]]), ("PST", "set", ["new", [["n", "1"]]]),
    ("PST", "set", ["dropped", [["d", "1"]]]), ("PST", "delete", ["dropped"]),
    ("PST", "apply_temp_view", []),
    ("PST", "apply_temp_view", []),  # no view any more: an error
]


def test_temp_view_publishes_the_same_difference(swss_env: dict[str, str], clean_redis: EmbeddedRedis,
                                                 sonic_db_config: Path) -> None:
    db = DBConnector("APPL_DB", 0)
    their_results, our_results = both(swss_env, sonic_db_config, db, TEMP_VIEW)
    assert our_results == their_results
    assert their_results[-1] == ("error", "RuntimeError")
    assert sorted(db.connection.command("SMEMBERS", "ROUTE_TABLE_KEY_SET")) == ["change", "fewer", "gone", "new"]
    assert sorted(db.connection.command("SMEMBERS", "ROUTE_TABLE_DEL_SET")) == ["fewer", "gone"]
