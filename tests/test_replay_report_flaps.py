"""overview.per_key's flaps on events built by hand: the cases its hash aggregation must order and
count as the module docstring defines flaps (equal timestamps ordered by file and line, a field
twice in one SET, dead letters and notifications left out, the shortest sequences that flap), and
seeded random keys against a plain-Python fold of the same events.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from fixtures.spark_session import spark  # noqa: F401 - spark is a fixture
from swssd.replay.overview import base_columns, per_key

_SCHEMA = (
    "host STRING, db STRING, `table` STRING, `key` STRING, op STRING, fvs ARRAY<ARRAY<STRING>>, us BIGINT,"
    " rotation INT, file INT, block BIGINT, line BIGINT, dead_letter BOOLEAN, kind STRING"
)
_EVENTS = [
    "host", "db", "`table`", "`key`", "op", "fvs", "timestamp_micros(us) AS ts", "dead_letter",
    "CAST(NULL AS STRING) AS dl_reason", "kind", "'test' AS source",
    "named_struct('ts', timestamp_micros(us), 'rotation', rotation, 'file', file, 'block', block, 'line', line) AS ord",
]


def ev(key: str, us: int, op: str, fvs: list[tuple[str, str]] | None = None, *, file: int = 0, line: int = 0,
       dead: bool = False, kind: str | None = None) -> tuple[Any, ...]:
    """One event of key `key` on host h1, table T of APPL_DB."""
    return ("h1", "APPL_DB", "T", key, op, [list(p) for p in fvs or ()], us, 0, file, 0, line, dead, kind)


def flaps(spark: SparkSession, events: list[tuple[Any, ...]]) -> dict[str, tuple[int, int]]:
    """per_key's alternations and reversions of the events (given in any order), per key name,
    for the keys with a live record."""
    df = spark.createDataFrame(events, _SCHEMA).selectExpr(*_EVENTS)
    return {r["key"]: (r["alternations"], r["reversions"]) for r in per_key(base_columns(df)).collect()
            if r["events"] > r["dead_letters"]}


def fold(events: list[tuple[Any, ...]]) -> dict[str, tuple[int, int]]:
    """Alternations and reversions per key, the plain way: the live records in replay order."""
    got: dict[str, list[int]] = {}
    last_op: dict[str, str] = {}
    values: dict[tuple[str, str], list[str]] = {}
    for e in sorted(events, key=lambda e: (e[6], e[7], e[8], e[9], e[10])):
        key, op, fvs, dead, kind = e[3], e[4], e[5], e[11], e[12]
        if kind == "notification" or dead:
            continue
        f = got.setdefault(key, [0, 0])
        f[0] += key in last_op and last_op[key] != op
        last_op[key] = op
        for name, value in fvs if op == "SET" else ():
            seq = values.setdefault((key, name), [])
            if seq and seq[-1] == value:
                continue
            f[1] += len(seq) >= 2 and seq[-2] == value
            seq.append(value)
    return {k: (a, r) for k, (a, r) in got.items()}


def test_hand_made_cases(spark: SparkSession) -> None:
    events = [
        # S S D S S D D S: 4 alternations; f: up up down up down, deduplicated up down up down: 2
        ev("a", 1, "SET", [("f", "up")]), ev("a", 2, "SET", [("f", "up")]), ev("a", 3, "DEL"),
        ev("a", 4, "SET", [("f", "down")]), ev("a", 5, "SET", [("f", "up")]), ev("a", 6, "DEL"),
        ev("a", 7, "DEL"), ev("a", 8, "SET", [("f", "down")]),
        # one timestamp: file, then line order, given shuffled: f = 1 2 1 2 -> 2
        ev("b", 10, "SET", [("f", "2")], file=1, line=3), ev("b", 10, "SET", [("f", "1")], file=0, line=5),
        ev("b", 10, "SET", [("f", "2")], file=0, line=7), ev("b", 10, "SET", [("f", "1")], file=1, line=0),
        # a field twice in one SET, in its place: x y, then x -> 1
        ev("c", 20, "SET", [("f", "x"), ("f", "y")]), ev("c", 21, "SET", [("f", "x")]),
        # the shortest that flap: S D (1); g a b a (1); h a b (0)
        ev("d", 30, "SET", [("g", "a"), ("h", "a")]), ev("d", 31, "SET", [("g", "b"), ("h", "b")]),
        ev("d", 32, "SET", [("g", "a")]), ev("d", 33, "DEL"),
        # a dead letter and a notification are not records: S S S, a b a -> 0, 1
        ev("e", 40, "SET", [("f", "a")]), ev("e", 41, "DEL", dead=True), ev("e", 42, "SET", [("f", "b")]),
        ev("e", 43, "port_state_change", [("f", "b")], kind="notification"), ev("e", 44, "SET", [("f", "a")]),
        # one record: nothing
        ev("g", 50, "SET", [("f", "a")]),
    ]
    want = {"a": (4, 2), "b": (0, 2), "c": (0, 1), "d": (1, 1), "e": (0, 1), "g": (0, 0)}
    assert fold(events) == want
    assert flaps(spark, events) == want


def test_random_keys_equal_the_fold(spark: SparkSession) -> None:
    rng = random.Random(28)
    events = []
    for n in range(3000):
        key = f"k{rng.randrange(40)}"
        op = "DEL" if rng.random() < 0.2 else "SET"
        fvs = [(f, rng.choice("abc")) for f in rng.choices("fgh", k=rng.randint(1, 3))] if op == "SET" else []
        events.append(ev(key, rng.randrange(400), op, fvs, file=rng.randrange(2), line=n,
                         dead=rng.random() < 0.05))
    rng.shuffle(events)
    want = fold(events)
    assert sum(a + r for a, r in want.values()) > 100
    assert flaps(spark, events) == want
