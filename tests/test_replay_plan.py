"""The replay's plans are built from SQL expression text (swssd/replay/inputs.py, fold.py).

Why it matters: every Column function is a py4j call into the JVM, about 1 ms each in a freshly
started one; the plan of `replay state` took some 4,000 of them (seconds of a 2-event replay).
These tests count the calls, and check that text reaching the SQL parser (host names, patterns,
time zones, globs) is quoted so that it means what it meant as a Column literal.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

import py4j.java_gateway
from pyspark.sql import SparkSession

from fixtures.spark_session import spark  # noqa: F401 - spark is a fixture
from swssd.replay.fold import event_conditions, fold_state, matches_sql, select_events
from swssd.replay.inputs import InputOptions, load
from swssd.replay.sqltext import sql_string

FIXTURE = Path(__file__).parent / "fixtures" / "swss_rec" / "sw-leaf1"
#: py4j calls the plan of `replay state` may take (about 200 now; some 4,000 as Column objects)
MAX_PLAN_CALLS = 300


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every py4j command sent while the test runs."""
    sent: list[str] = []
    original = py4j.java_gateway.GatewayClient.send_command

    def counted(self: Any, command: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(command)
        return original(self, command, *args, **kwargs)

    monkeypatch.setattr(py4j.java_gateway.GatewayClient, "send_command", counted)
    yield sent


def _capture(tmp_path: Path, host_dir: str = "sw1") -> Path:
    path = tmp_path / host_dir / "swssd.capture.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    records = [
        {"ts": "2026-11-25T23:41:16.123456Z", "db": "APPL_DB", "table": "PORT_TABLE", "key": "Ethernet0",
         "op": "SET", "fvs": [["mtu", "9100"]], "seq": 1},
        {"ts": "2026-11-25T23:41:17Z", "db": "APPL_DB", "table": "PORT'S \\TABLE", "key": "it's",
         "op": "SET", "fvs": [["a", "b"]], "seq": 2},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_state_plan_takes_few_py4j_calls(spark: SparkSession, calls: list[str]) -> None:
    paths = [str(FIXTURE / "swss.rec.1"), str(FIXTURE / "swss.rec")]
    spark.sparkContext  # noqa: B018 - the session is up before counting
    # earlier tests' garbage collected now: py4j's release of each of their JVM objects is a call,
    # which would otherwise be counted when a collection happens to run inside the plan
    gc.collect()
    calls.clear()
    inputs = load(spark, InputOptions(paths))
    conditions = event_conditions(spark, tables=["PORT_TABLE", "ROUTE*"], as_of_us=1 << 60)
    state = fold_state(select_events(inputs.events, conditions))
    # py4j's release of a collected JavaObject ("m\nd\n...") is sent whenever a garbage collection
    # happens to run, at a count that varies from run to run: not a call the plan makes
    made = [c for c in calls if not c.startswith("m\nd\n")]
    assert len(made) <= MAX_PLAN_CALLS, f"{len(made)} py4j calls to build the plan"
    assert state.count() > 0


def test_literals_and_patterns_keep_their_meaning(spark: SparkSession, tmp_path: Path) -> None:
    capture = _capture(tmp_path, "leaf'1")  # (Hadoop reads a backslash in a path as a glob escape)
    # the host from the path (the default pattern) and from --host, with a quote and a backslash
    rows = load(spark, InputOptions([str(capture)])).events.select("host").distinct().collect()
    assert [r["host"] for r in rows] == ["leaf'1"]
    given = load(spark, InputOptions([str(capture)], host="o'k\\n", host_pattern=r"/(le\w+')")).events
    assert {r["host"] for r in given.collect()} == {"o'k\\n"}
    inputs = load(spark, InputOptions([str(capture)], host_pattern=r"/(le\w+')[^/]*/[^/]*$"))
    assert {r["host"] for r in inputs.events.collect()} == {"leaf'"}
    for tables in (["PORT'S \\TABLE"], ["PORT'S*"], ["*\\TABLE"]):
        conditions = event_conditions(spark, tables=tables, keys=["it's"])
        state = fold_state(select_events(inputs.events, conditions)).collect()
        assert [(r["table"], r["key"], dict(r["fields"])) for r in state] == [("PORT'S \\TABLE", "it's", {"a": "b"})]


def test_a_session_without_string_escapes(spark: SparkSession, tmp_path: Path) -> None:
    """spark.sql.parser.escapedStringLiterals on: the same events and filters (literals are
    then written as they are); a quote in a literal is refused rather than misread."""
    rec = [str(FIXTURE / "swss.rec.1"), str(FIXTURE / "swss.rec")]

    def events() -> list[tuple[str, ...]]:
        conditions = event_conditions(spark, tables=["PORT*", "ROUTE_TABLE"])
        selected = select_events(load(spark, InputOptions(rec)).events, conditions)
        return sorted(tuple(str(v) for v in r) for r in selected.collect())

    plain = events()
    spark.conf.set("spark.sql.parser.escapedStringLiterals", "true")
    try:
        assert events() == plain
        with pytest.raises(ValueError):
            load(spark, InputOptions(rec, host="it's \"x\""))
    finally:
        spark.conf.unset("spark.sql.parser.escapedStringLiterals")
    assert sql_string("a'b\\c") == "'a\\'b\\\\c'"
    assert sql_string("a\\c", escapes=False) == "'a\\c'"
    assert sql_string("a'\\c", escapes=False) == '"a\'\\c"'
    assert matches_sql("table", None) is None
    assert matches_sql("table", ["A", "B*"]) == "((`table` IN ('A')) OR (`table` RLIKE '(?s:B.*)\\\\Z'))"


def test_a_file_of_one_kind_is_read_for_that_kind_alone(spark: SparkSession, tmp_path: Path) -> None:
    """A swss.rec is not read a second time for JSON records, a JSON capture not for swss.rec
    lines; a file holding both is read once for each, and every line counts once."""
    record = {"ts": "2026-11-27T10:00:00.000001Z", "host": "h1", "db": "APPL_DB", "table": "T", "key": "j",
              "op": "SET", "fvs": [["a", "b"]]}
    rec_line = "2026-11-27.10:00:00.000002|T:r|SET|a:c"
    (tmp_path / "h1").mkdir()
    files = {"swss.rec": rec_line + "\n", "cap.jsonl": json.dumps(record) + "\n",
             "both.log": json.dumps(record) + "\n" + rec_line + "\n"}
    for name, text in files.items():
        (tmp_path / "h1" / name).write_text(text)

    def read(*names: str) -> tuple[str, list[str]]:
        inputs = load(spark, InputOptions([str(tmp_path / "h1" / n) for n in names]))
        assert inputs.lines is not None
        keys = sorted(r["key"] for r in inputs.events.select("key").collect())
        return inputs.lines._jdf.queryExecution().optimizedPlan().toString(), keys

    plan, keys = read("swss.rec")
    assert keys == ["r"] and "from_json" not in plan and "|SET|" in plan
    plan, keys = read("cap.jsonl")
    assert keys == ["j"] and "from_json" in plan and "|SET|" not in plan
    plan, keys = read("swss.rec", "cap.jsonl", "both.log")
    # a scan of each file, both.log's twice (once for each kind): four, two of them for JSON records
    assert keys == ["j", "j", "r", "r"] and plan.count("Relation [value") == 4 and plan.count("from_json") == 2
