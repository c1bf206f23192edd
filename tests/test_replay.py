"""Spark replay in local mode: swss.rec fixtures, swssd captures through Redis, history, stats, diff, restore."""

from __future__ import annotations

import asyncio
import gzip
import importlib.util
import itertools
import json
import os
import random
import re
import shutil
import time
import zlib
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from fixtures.spark_session import SPARK_ARGS, spark  # noqa: F401 - spark is a fixture
from swssd import (
    ConsumerStateTable,
    DBConnector,
    KeyOpFieldsValues,
    ProducerStateTable,
    Select,
    SubscriberStateTable,
    Table,
)
from swssd.capture import CaptureWriter, iso_ts
from swssd.replay.cli import main
from swssd.replay.fold import event_conditions, fold_state, select_events
from swssd.replay.inputs import InputOptions, load
from swssd.replay.timeparse import parse_instant

FIXTURE = Path(__file__).parent / "fixtures" / "swss_rec" / "sw-leaf1"

PORTS_END = {
    "Ethernet0": {"alias": "fortyGigE0/0", "lanes": "25,26,27,28", "mtu": "9100", "admin_status": "up",
                  "description": "uplink|to spine1"},
    "Ethernet4": {"alias": "fortyGigE0/4", "lanes": "29,30,31,32", "mtu": "9100", "admin_status": "down"},
    "Ethernet8": {"mtu": "9100"},
}
ROUTES_END = {
    "10.1.0.0/24": {"nexthop": "10.0.0.1", "ifname": "PortChannel01"},
    "10.2.0.0/24": {"nexthop": "10.0.0.13", "ifname": "PortChannel04"},
}
EXPECTED_END = {
    ("APPL_DB", "PORT_TABLE"): PORTS_END,
    ("APPL_DB", "INTF_TABLE"): {"PortChannel02:fc00::75/126": {"scope": "global", "family": "IPv6"}},
    ("APPL_DB", "ROUTE_TABLE"): ROUTES_END,
    ("APPL_DB", "NEIGH_TABLE"): {"Vlan1000:fe80::1": {"neigh": "00:11:22:33:44:55", "family": "IPv6"}},
    ("APPL_DB", "SWITCH_TABLE"): {"switch": {"ecmp_hash_seed": "0", "fdb_aging_time": "600"}},
    ("APPL_DB", "LLDP_ENTRY_TABLE"): {
        "Ethernet0": {"lldp_rem_sys_name": "spine1", "lldp_rem_port_desc": "Ethernet1/1:100G"}},
    ("CONFIG_DB", "QUEUE"): {
        "Ethernet0|0": {"scheduler": "[SCHEDULER|scheduler.0]", "wred_profile": "[WRED_PROFILE|AZURE_LOSSLESS]"}},
}

#: The fixture's APPL_DB at its end, as `swssd dump` prints it.
APPL_END = {table: entries for (db, table), entries in EXPECTED_END.items() if db == "APPL_DB"}


@pytest.fixture(scope="module")
def rec_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture files as logrotate leaves them: swss.rec, swss.rec.1, swss.rec.2.gz."""
    d = tmp_path_factory.mktemp("captures") / "sw-leaf1"
    d.mkdir()
    shutil.copy(FIXTURE / "swss.rec", d / "swss.rec")
    shutil.copy(FIXTURE / "swss.rec.1", d / "swss.rec.1")
    (d / "swss.rec.2.gz").write_bytes(gzip.compress((FIXTURE / "swss.rec.2").read_bytes()))
    return d


def by_table(rows: list) -> dict:  # type: ignore[type-arg]
    out: dict = {}
    for r in rows:
        out.setdefault((r["db"], r["table"]), {})[r["key"]] = dict(r["fields"])
    return out


def state_of(spark: SparkSession, paths: list[str], as_of: str | None = None, tz: str = "UTC",
             **filters: list[str]) -> dict:  # type: ignore[type-arg]
    inputs = load(spark, InputOptions(paths, timezone=tz))
    conditions = event_conditions(spark, as_of_us=parse_instant(as_of, tz) if as_of else None, **filters)
    events = select_events(inputs.events, conditions)
    return by_table(fold_state(events).collect())


def run(*argv: str) -> int:
    return main([*argv, *SPARK_ARGS])


# -- swss.rec ----------------------------------------------------------------------------


def test_rec_fixture_replays_to_expected_state(
    spark: SparkSession, rec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run("state", str(rec_dir / "swss.rec*"), "--output", str(out)) == 0
    rows = spark.read.parquet(str(out / "state")).collect()
    assert {r["host"] for r in rows} == {"sw-leaf1"}  # from the directory name
    assert by_table(rows) == EXPECTED_END
    printed = capsys.readouterr().out
    assert "read 27 lines: 19 events, 3 'recording started' markers, 1 blank, 4 rejected" in printed
    rejects = [
        json.loads(line) for f in sorted((out / "rejects").glob("*.json")) for line in f.read_text().splitlines()
    ]
    assert sorted((r["value"], r["reason"]) for r in rejects) == sorted([
        ("core dumped while writing 2026-03-01.10:05:0", "no swss.rec timestamp"),
        ("2026-03-01.10:05:05.00", "no swss.rec timestamp"),
        ("2026-03-01.10:10:02.000001|PORT_TABLE:Ethernet4|SET|garbage-without-colon", "field without ':'"),
        ("2026-03-01.10:10:03.000000|VLAN_TABLE:Vlan1000|GET|admin_status:up", "no SET/DEL op token"),
    ])
    assert all(r["source"].endswith(("swss.rec", "swss.rec.1")) for r in rejects)


def test_rec_state_as_of_instants_in_the_middle(spark: SparkSession, rec_dir: Path) -> None:
    paths = [str(rec_dir / "swss.rec*")]
    before = state_of(spark, paths, "2026-03-01.10:05:01.999999", tables=["ROUTE_TABLE", "PORT_TABLE"])
    assert before[("APPL_DB", "ROUTE_TABLE")] == {
        "10.1.0.0/24": {"nexthop": "10.0.0.1,10.0.0.5", "ifname": "PortChannel01,PortChannel02", "weight": "1,1"}}
    assert before[("APPL_DB", "PORT_TABLE")]["Ethernet4"]["admin_status"] == "down"
    assert "Ethernet8" not in before[("APPL_DB", "PORT_TABLE")]
    at = state_of(spark, paths, "2026-03-01T10:05:02Z", tables=["ROUTE_*"])  # DEL then SET at that instant
    assert at == {("APPL_DB", "ROUTE_TABLE"): {"10.1.0.0/24": {"nexthop": "10.0.0.1", "ifname": "PortChannel01"}}}
    assert state_of(spark, paths, "2026-03-01.09:59:59") == {}


def test_rec_timezone_moves_every_event(spark: SparkSession, rec_dir: Path) -> None:
    paths = [str(rec_dir / "swss.rec*")]
    inputs = load(spark, InputOptions(paths, timezone="Europe/Paris"))
    first = inputs.events.orderBy("ord").select("ts").first()
    assert iso_ts(int(first["ts"].timestamp() * 1_000_000)) == "2026-03-01T09:00:00.100000Z"
    # a naive --as-of is read in the same zone, so it means what the swss.rec line says
    assert state_of(spark, paths, "2026-03-01.10:05:02", tz="Europe/Paris", tables=["ROUTE_TABLE"]) == \
        state_of(spark, paths, "2026-03-01.10:05:02", tz="UTC", tables=["ROUTE_TABLE"])


def test_history_keeps_file_order_for_equal_timestamps(
    spark: SparkSession, rec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert run("history", str(rec_dir / "swss.rec*"), "--output", str(out),
               "--key", "Ethernet8", "--key", "10.*") == 0
    printed = capsys.readouterr().out
    lines = [line.split() for line in printed.splitlines() if line.startswith("2026-")]
    assert {w[2] for w in lines} == {"APPL_DB"}
    got = [(w[4], w[5], w[6] if len(w) > 6 else "") for w in lines]
    assert got == [  # time order; equal instants in file order, and rotated files first
        ("10.1.0.0/24", "SET", "nexthop=10.0.0.1,10.0.0.5"),
        ("10.1.0.0/24", "DEL", ""),
        ("10.1.0.0/24", "SET", "nexthop=10.0.0.1"),
        ("10.2.0.0/24", "SET", "nexthop=10.0.0.9"),
        ("Ethernet8", "SET", "mtu=1500"),  # last line of swss.rec.1 ...
        ("Ethernet8", "SET", "mtu=9100"),  # ... first of swss.rec, same instant
        ("10.2.0.0/24", "DEL", ""),
        ("10.2.0.0/24", "SET", "nexthop=10.0.0.13"),
    ]
    hist = spark.read.parquet(str(out / "history"))
    assert hist.count() == 8 and set(hist.columns) >= {"ts", "host", "table", "key", "op", "fvs", "source"}


def test_stats_numbers(spark: SparkSession, rec_dir: Path, tmp_path: Path,
                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert run("stats", str(rec_dir / "swss.rec*"), "--output", str(out), "--top", "3") == 0
    tables = {r["table"]: r for r in spark.read.parquet(str(out / "stats" / "tables")).collect()}
    route, port = tables["ROUTE_TABLE"], tables["PORT_TABLE"]
    assert (route["events"], route["sets"], route["dels"], route["distinct_keys"]) == (6, 4, 2, 2)
    assert (route["peak_per_minute"], route["active_minutes"], route["events_per_minute"]) == (3, 3, 0.6)
    assert (port["events"], port["sets"], port["dels"], port["distinct_keys"]) == (6, 6, 0, 3)
    assert port["peak_per_minute"] == 2
    assert tables["QUEUE"]["db"] == "CONFIG_DB" and (tables["QUEUE"]["sets"], tables["QUEUE"]["dels"]) == (2, 1)
    assert sum(r["events"] for r in tables.values()) == 19
    keys = spark.read.parquet(str(out / "stats" / "keys")).orderBy("events", "dels", ascending=False)
    top = [(r["table"], r["key"], r["events"], r["dels"]) for r in keys.limit(3).collect()]
    assert sorted(top[:2]) == [("ROUTE_TABLE", "10.1.0.0/24", 3, 1), ("ROUTE_TABLE", "10.2.0.0/24", 3, 1)]
    assert top[2] == ("QUEUE", "Ethernet0|3", 2, 1)
    printed = capsys.readouterr().out
    assert "most changed keys (flapping)" in printed and "10.1.0.0/24" in printed


def test_diff_against_a_dump(spark: SparkSession, rec_dir: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    live_ports = json.loads(json.dumps(PORTS_END))
    live_ports["Ethernet0"]["mtu"] = "1500"
    del live_ports["Ethernet0"]["admin_status"]
    live_ports["Ethernet0"]["speed"] = "40000"
    del live_ports["Ethernet4"]
    live_ports["Ethernet12"] = {"mtu": "9100"}
    dump = tmp_path / "live.json"
    dump.write_text(json.dumps({**APPL_END, "PORT_TABLE": live_ports}))
    out = tmp_path / "out"
    assert run("diff", str(rec_dir / "swss.rec*"), "--dump", str(dump), "--output", str(out)) == 1
    rows = {tuple(r) for r in spark.read.parquet(str(out / "diff")).collect()}
    e4 = PORTS_END["Ethernet4"]
    assert rows == {
        ("PORT_TABLE", "Ethernet0", "changed", "mtu", "9100", "1500"),
        ("PORT_TABLE", "Ethernet0", "missing_field", "admin_status", "up", None),
        ("PORT_TABLE", "Ethernet0", "extra_field", "speed", None, "40000"),
        ("PORT_TABLE", "Ethernet12", "extra_entry", "mtu", None, "9100"),
        *{("PORT_TABLE", "Ethernet4", "missing_entry", f, v, None) for f, v in e4.items()},
    }
    assert "missing_entry" in capsys.readouterr().out

    same = tmp_path / "same.json"
    same.write_text(json.dumps({**APPL_END, "EMPTY_TABLE": {}}))
    assert run("diff", str(rec_dir / "swss.rec*"), "--dump", str(same), "--output", str(out)) == 0
    assert "no differences" in capsys.readouterr().out


def test_diff_reports_every_entry_of_a_table_the_dump_lacks(
        spark: SparkSession, rec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A wiped table is absent from a dump (Redis keeps no empty hash): its entries are all missing,
    unless --table leaves it out."""
    dump = tmp_path / "wiped.json"
    dump.write_text(json.dumps({t: entries for t, entries in APPL_END.items() if t != "ROUTE_TABLE"}))
    out = tmp_path / "out"
    assert run("diff", str(rec_dir / "swss.rec*"), "--dump", str(dump), "--output", str(out)) == 1
    rows = {tuple(r) for r in spark.read.parquet(str(out / "diff")).collect()}
    assert rows == {("ROUTE_TABLE", key, "missing_entry", f, v, None)
                    for key, fields in ROUTES_END.items() for f, v in fields.items()}
    assert "ROUTE_TABLE" in capsys.readouterr().out
    assert run("diff", str(rec_dir / "swss.rec*"), "--dump", str(dump), "--table", "PORT_TABLE", "--table", "NEIGH*",
               "--output", str(out)) == 0
    assert "no differences" in capsys.readouterr().out


def test_bad_inputs_are_reported_not_raised(rec_dir: Path, tmp_path: Path, spark: SparkSession,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run("state", str(tmp_path / "nothing-here*"), "--output", str(tmp_path / "o")) == 2
    assert "swssd replay:" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert run("state", str(empty), "--output", str(tmp_path / "o")) == 0
    assert "read 0 lines" in capsys.readouterr().out
    assert spark.read.parquet(str(tmp_path / "o" / "state")).count() == 0
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert run("diff", str(rec_dir / "swss.rec*"), "--dump", str(bad), "--output", str(tmp_path / "o")) == 2
    assert "not a dump" in capsys.readouterr().err


# -- through Redis ------------------------------------------------------------------------


async def _drain(consumer: ConsumerStateTable) -> list[KeyOpFieldsValues]:
    out: list[KeyOpFieldsValues] = []
    while batch := await consumer.pops():
        out += batch
    return out


async def test_restore_publishes_only_the_minimal_diff(
    spark: SparkSession, rec_dir: Path, db: DBConnector, clean_redis, tmp_path: Path  # type: ignore[no-untyped-def]
) -> None:
    producer = ProducerStateTable(db, "PORT_TABLE")
    consumer = ConsumerStateTable(db, "PORT_TABLE")
    for key, fields in PORTS_END.items():  # the live table holds the end state
        await producer.set(key, fields)
    await _drain(consumer)
    as_of = "2026-03-01.10:05:01.500000"
    expected = state_of(spark, [str(rec_dir / "swss.rec*")], as_of, tables=["PORT_TABLE"])[("APPL_DB", "PORT_TABLE")]
    assert expected["Ethernet4"] == PORTS_END["Ethernet4"] and "Ethernet8" not in expected

    code = await asyncio.to_thread(
        run, "restore", str(rec_dir / "swss.rec*"), "--as-of", as_of, "--table", "PORT_TABLE",
        "--url", clean_redis.url, "--db-id", "0", "--output", str(tmp_path / "out"),
    )
    assert code == 0
    popped = await _drain(consumer)
    assert sorted((t.key, t.op) for t in popped) == [("Ethernet0", "SET"), ("Ethernet8", "DEL")]
    assert await Table(db, "PORT_TABLE").dump() == expected


async def test_swssd_capture_replays_exactly_what_redis_holds(
    spark: SparkSession, db: DBConnector, tmp_path: Path
) -> None:
    """Random traffic, popped with track_deletes and captured: state == the table, also as of a middle instant."""
    rng = random.Random(5)
    producer = ProducerStateTable(db, "ROUTE_TABLE")
    consumer = ConsumerStateTable(db, "ROUTE_TABLE", track_deletes=True)
    table = Table(db, "ROUTE_TABLE")
    writer = CaptureWriter(tmp_path / "cap", host="sw-test")
    await writer.start()
    keys = ["10.0.0.0/8", "fc00::/64", "Vlan1000:fe80::1", "é|x:y", "two\nlines", *(f"k{i}" for i in range(8))]
    mid_us, mid_snapshot = None, None
    saw_del_then_set = False
    for rnd in range(30):
        for _ in range(rng.randint(1, 12)):
            key = rng.choice(keys)
            roll = rng.random()
            if roll < 0.2:
                await producer.delete(key)
            elif roll < 0.35:  # deleted and set again before the consumer pops
                await producer.delete(key)
                await producer.set(key, [(f"f{rng.randrange(4)}", f"new:{rnd}")])
            else:
                await producer.set(key, [(f"f{rng.randrange(4)}", f"v{rnd}|{rng.random():.3f}")
                                         for _ in range(rng.randint(1, 3))])
        popped = await _drain(consumer)
        saw_del_then_set |= any(a.op == "DEL" and b.op == "SET" and a.key == b.key
                                for a, b in itertools.pairwise(popped))
        writer.record("APPL_DB", "ROUTE_TABLE", ":", popped)
        if rnd == 3:
            writer.record("APPL_DB", "ROUTE_TABLE", ":", [KeyOpFieldsValues("k0", "SET", [("junk", "1")])],
                          dead_letter=True, reason="handler failed")
        if rnd == 14:
            await writer.flush()
            mid_us, mid_snapshot = time.time_ns() // 1000, await table.dump()
            await asyncio.sleep(0.005)
    await writer.close()
    assert saw_del_then_set and writer.dropped == 0 and mid_snapshot

    out = tmp_path / "out"
    assert await asyncio.to_thread(run, "state", str(tmp_path / "cap" / "*.jsonl*"), "--output", str(out)) == 0
    got = by_table(spark.read.parquet(str(out / "state")).collect())
    assert got == {("APPL_DB", "ROUTE_TABLE"): await table.dump()}
    middle = state_of(spark, [str(tmp_path / "cap")], iso_ts(mid_us))
    assert middle == {("APPL_DB", "ROUTE_TABLE"): mid_snapshot}


# -- table kinds: subscriber SETs replace, notifications are not state ----------------------

BENCH = Path(__file__).parent.parent / "bench" / "bench_replay.py"


def bench_python_fold(directory: Path) -> dict:  # type: ignore[type-arg]
    """The benchmark's plain-Python fold (the reference the Spark fold is checked against)."""
    spec = importlib.util.spec_from_file_location("bench_replay", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.python_fold(directory)


async def _drain_select(sel: Select, quiet: float = 0.3) -> list[KeyOpFieldsValues]:
    out: list[KeyOpFieldsValues] = []
    while (ready := await sel.select(timeout=quiet)) is not None:
        out += await ready.pops()
    return out


def printed_events(printed: str) -> list[list[str]]:
    """The history table's rows (they start with a timestamp), split on whitespace."""
    return [line.split() for line in printed.splitlines() if re.match(r"\d{4}-\d\d-\d\dT", line)]


async def test_subscriber_hdel_is_replayed_while_a_state_set_merges(
    spark: SparkSession, unix_db: DBConnector, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same popped tasks captured as a subscriber table and as a state table: a field removed
    by HDEL between two SETs is gone from the first and kept (merged) in the second; swss.rec,
    which has no kinds, keeps it too (the documented loss); diff against live CONFIG_DB agrees."""
    await unix_db.redis.config_set("notify-keyspace-events", "AKE")
    sel = Select()
    await sel.add(SubscriberStateTable(unix_db, "PORT"))
    live = Table(unix_db, "PORT")
    cap = tmp_path / "cap" / "sw1"
    w = CaptureWriter(cap, host="sw1", rec=True)
    await w.start()
    popped: list[list[KeyOpFieldsValues]] = []

    async def pop_and_record() -> None:
        tasks = await _drain_select(sel)
        w.record("CONFIG_DB", "PORT", "|", tasks, kind="subscriber")
        w.record("APPL_DB", "PORT_TABLE", ":", tasks)  # a state table given the same SETs
        popped.append(tasks)

    try:
        await live.set("Ethernet0", [("speed", "100000"), ("mtu", "9100"), ("fec", "rs")])
        await live.set("Ethernet4", [("speed", "40000"), ("fec", "none")])
        await pop_and_record()
        await live.hdel("Ethernet0", "fec")
        await live.hset("Ethernet4", "mtu", "1500")
        await pop_and_record()
        w.record("CONFIG_DB", "PORT_NOTIFY", "|", [KeyOpFieldsValues("Ethernet0", "SET", [("fec", "rs")])],
                 kind="notification")  # a SET op, but a message: no state
        await w.close()
    finally:
        await sel.close()
    assert popped[1] == [KeyOpFieldsValues("Ethernet0", "SET", [("speed", "100000"), ("mtu", "9100")]),
                         KeyOpFieldsValues("Ethernet4", "SET", [("speed", "40000"), ("fec", "none"),
                                                                 ("mtu", "1500")])]
    live_port = await live.dump()
    assert "fec" not in live_port["Ethernet0"]

    got = state_of(spark, [str(cap / "swssd.capture.jsonl")])
    assert got == {
        ("CONFIG_DB", "PORT"): live_port,
        ("APPL_DB", "PORT_TABLE"): {**live_port, "Ethernet0": {**live_port["Ethernet0"], "fec": "rs"}},
    }
    # swss.rec: subscriber SETs are plain SET lines, so their replay merges and keeps fec
    rec = state_of(spark, [str(cap / "swss.rec")])
    assert rec[("CONFIG_DB", "PORT")]["Ethernet0"]["fec"] == "rs"
    assert "PORT_NOTIFY" not in (cap / "swss.rec").read_text()

    dump = tmp_path / "config_db.json"
    dump.write_text(json.dumps({"PORT": live_port, "PORT_NOTIFY": {}}))
    assert run("diff", str(cap / "swssd.capture.jsonl"), "--db", "CONFIG_DB", "--dump", str(dump),
               "--output", str(tmp_path / "out")) == 0
    assert "no differences" in capsys.readouterr().out


def write_jsonl(path: Path, records: list[dict]) -> Path:  # type: ignore[type-arg]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def old_record(seq: int, key: str, op: str, fvs: list, **extra: object) -> dict:  # type: ignore[type-arg]
    """A record as swssd wrote them before kinds: no "kind"."""
    return {"ts": f"2026-03-01T10:00:{seq:02d}.000000Z", "host": "sw1", "db": "APPL_DB",
            "table": "PORT_TABLE", "key": key, "op": op, "fvs": fvs, "seq": seq, **extra}


def test_records_without_kind_replay_as_before(spark: SparkSession, rec_dir: Path, tmp_path: Path) -> None:
    old = write_jsonl(tmp_path / "old" / "swssd.capture.jsonl", [
        old_record(1, "Ethernet0", "SET", [["mtu", "9100"], ["fec", "rs"]]),
        old_record(2, "Ethernet0", "SET", [["mtu", "1500"]]),
        old_record(3, "Ethernet4", "SET", [["mtu", "9100"]]),
        old_record(4, "Ethernet4", "DEL", []),
        old_record(5, "Ethernet8", "SET", [["a", "1"]], kind="state"),
        old_record(6, "Ethernet8", "SET", [["b", "2"]], kind="queue"),
    ])
    assert state_of(spark, [str(old)]) == {("APPL_DB", "PORT_TABLE"): {
        "Ethernet0": {"mtu": "1500", "fec": "rs"}, "Ethernet8": {"a": "1", "b": "2"}}}
    events = load(spark, InputOptions([str(old), str(rec_dir / "swss.rec*")])).events
    kinds = {(r["source"].rsplit("/", 1)[-1], r["kind"]) for r in events.select("source", "kind").collect()}
    assert kinds == {("swssd.capture.jsonl", None), ("swssd.capture.jsonl", "state"),
                     ("swssd.capture.jsonl", "queue"), ("swss.rec", None), ("swss.rec.1", None),
                     ("swss.rec.2.gz", None)}


def test_kind_and_op_rules_of_the_reader(spark: SparkSession, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h" / "swssd.capture.jsonl", [
        old_record(1, "a", "port_state_change", [["x", "y"]], kind="notification"),
        old_record(2, "b", "port_state_change", [["x", "y"]]),  # not a notification: refused
        old_record(3, "c", "SET", [["x", "y"]], kind="keyspace"),
        {k: v for k, v in old_record(4, "d", "", [], kind="notification").items() if k != "op"},
        {k: v for k, v in old_record(5, "e", "", []).items() if k != "op"},
        old_record(6, "f", "SET", [["x", "y"]], kind="subscriber"),
    ])
    inputs = load(spark, InputOptions([str(path)]))
    assert sorted((r["key"], r["op"], r["kind"]) for r in inputs.events.collect()) == [
        ("a", "port_state_change", "notification"), ("f", "SET", "subscriber")]
    reasons = sorted((json.loads(r["value"])["key"], r["reason"]) for r in inputs.rejects.collect())
    assert reasons == [("b", "op is neither SET nor DEL"), ("c", "unknown kind"),
                       ("d", "notification without op"), ("e", "op is neither SET nor DEL")]
    assert inputs.counts()["rejects"] == 4


async def test_notifications_show_in_history_and_stats_never_in_state(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = tmp_path / "cap" / "sw1"
    w = CaptureWriter(cap, host="sw1", rec=True)
    await w.start()
    k = KeyOpFieldsValues
    w.record("APPL_DB", "PORT_TABLE", ":", [k("Ethernet0", "SET", [("mtu", "9100")])])
    w.record("APPL_DB", "NOTIFICATIONS", ":", [
        k('[{"port_id":"oid:0x1","port_state":"SAI_PORT_OPER_STATUS_DOWN"}]', "port_state_change", []),
        k('[{"port_id":"oid:0x1","port_state":"SAI_PORT_OPER_STATUS_UP"}]', "port_state_change", []),
        k("[]", "fdb_event", [("mac", "00:11:22:33:44:55")]),
    ], kind="notification")
    # a channel named like the table, with SET and DEL ops: still messages, not changes
    w.record("APPL_DB", "PORT_TABLE", ":", [k("Ethernet0", "SET", [("mtu", "1")]), k("Ethernet0", "DEL", [])],
             kind="notification")
    w.record("APPL_DB", "NOTIFICATIONS", ":", [k("[]", "fdb_event", [])], kind="notification",
             dead_letter=True, reason="handler failed")
    w.record("CONFIG_DB", "PORT", "|", [k("Ethernet0", "SET", [("speed", "1")])], kind="subscriber")
    w.record("APPL_DB", "LLDP_TABLE", ":", [k("Ethernet0", "SET", [("port", "1")])], kind="queue")
    await w.close()
    jsonl = str(cap / "swssd.capture.jsonl")

    assert state_of(spark, [jsonl]) == {
        ("APPL_DB", "PORT_TABLE"): {"Ethernet0": {"mtu": "9100"}},
        ("APPL_DB", "LLDP_TABLE"): {"Ethernet0": {"port": "1"}},
        ("CONFIG_DB", "PORT"): {"Ethernet0": {"speed": "1"}},
    }

    out = tmp_path / "out"
    assert run("history", jsonl, "--output", str(out)) == 0
    rows = printed_events(capsys.readouterr().out)
    ops = [" ".join(x for x in w[5:] if "=" not in x) for w in rows]  # op and its marks, no fields
    assert [w[3] for w in rows] == ["PORT_TABLE", *["NOTIFICATIONS"] * 3, "PORT_TABLE", "PORT_TABLE",
                                    "NOTIFICATIONS", "PORT", "LLDP_TABLE"]
    # each with its database: CONFIG_DB's PORT beside APPL_DB's PORT_TABLE
    assert [w[2] for w in rows] == [*["APPL_DB"] * 7, "CONFIG_DB", "APPL_DB"]
    assert ops == ["SET", "port_state_change (notification)", "port_state_change (notification)",
                   "fdb_event (notification)", "SET (notification)", "DEL (notification)",
                   "fdb_event (notification) (dead letter) reason: handler failed", "SET (subscriber)", "SET (queue)"]
    hist = spark.read.parquet(str(out / "history")).orderBy("seq").collect()
    assert [r["kind"] for r in hist] == [None, *["notification"] * 6, "subscriber", "queue"]

    assert run("stats", jsonl, "--output", str(out)) == 0
    printed = capsys.readouterr().out
    tables = {(r["db"], r["table"]): r for r in spark.read.parquet(str(out / "stats" / "tables")).collect()}
    figures = {t: (r["kind"], r["events"], r["sets"], r["dels"], r["notifications"], r["dead_letters"])
               for t, r in tables.items()}
    assert figures == {
        ("APPL_DB", "PORT_TABLE"): ("notification,state", 3, 1, 0, 2, 0),
        ("APPL_DB", "NOTIFICATIONS"): ("notification", 4, 0, 0, 4, 1),
        ("APPL_DB", "LLDP_TABLE"): ("queue", 1, 1, 0, 0, 0),
        ("CONFIG_DB", "PORT"): ("subscriber", 1, 1, 0, 0, 0),
    }
    keys = spark.read.parquet(str(out / "stats" / "keys")).collect()
    assert sorted((r["table"], r["key"], r["kind"], r["events"]) for r in keys) == [
        ("LLDP_TABLE", "Ethernet0", "queue", 1), ("PORT", "Ethernet0", "subscriber", 1),
        ("PORT_TABLE", "Ethernet0", "state", 1)]
    notes = spark.read.parquet(str(out / "stats" / "notifications")).collect()
    assert sorted((r["table"], r["op"], r["events"], r["dead_letters"]) for r in notes) == [
        ("NOTIFICATIONS", "fdb_event", 2, 1), ("NOTIFICATIONS", "port_state_change", 2, 0),
        ("PORT_TABLE", "DEL", 1, 0), ("PORT_TABLE", "SET", 1, 0)]
    assert "notifications per channel and op" in printed and "port_state_change" in printed

    rec = (cap / "swss.rec").read_text()
    assert "NOTIFICATIONS" not in rec and "|PORT_TABLE:Ethernet0|SET|mtu:1" not in rec


async def test_mixed_capture_matches_the_plain_python_fold(spark: SparkSession, tmp_path: Path) -> None:
    """Random traffic on tables of every kind, through CaptureWriter with rotation and dead
    letters: the Spark fold equals the model kept while generating and the benchmark's fold."""
    rng = random.Random(8)
    kinds = {"ROUTE_TABLE": "state", "LLDP_TABLE": "queue", "PORT": "subscriber", "VLAN": "subscriber",
             "NOTIFICATIONS": "notification"}
    cap = tmp_path / "cap" / "sw1"
    w = CaptureWriter(cap, host="sw1", max_bytes=20_000, backups=100)
    await w.start()
    model: dict = {}
    fields = ["a", "b", "c", "d"]
    for rnd in range(60):
        table = rng.choice(list(kinds))
        kind = kinds[table]
        batch = []
        for i in range(rng.randint(1, 10)):
            key = f"k{rng.randrange(6)}"
            entry = (table, key)
            if kind == "notification":
                batch.append(KeyOpFieldsValues(key, rng.choice(["SET", "DEL", "port_state_change"]),
                                               [("x", str(i))]))
            elif rng.random() < 0.15:
                batch.append(KeyOpFieldsValues(key, "DEL", []))
                model.pop(entry, None)
            else:
                fvs = [(f, f"{rnd}.{i}") for f in rng.sample(fields, rng.randint(1, 4))]
                batch.append(KeyOpFieldsValues(key, "SET", fvs))
                if kind == "subscriber":
                    model[entry] = dict(fvs)
                else:
                    model.setdefault(entry, {}).update(fvs)
        db = "CONFIG_DB" if kind == "subscriber" else "APPL_DB"
        w.record(db, table, "|" if db == "CONFIG_DB" else ":", batch, kind=kind)
        if rnd % 9 == 0:
            w.record(db, table, ":", [KeyOpFieldsValues("k0", "SET", [("junk", "1")])], kind=kind,
                     dead_letter=True, reason="gave up")
        if rnd % 5 == 0:
            await w.flush()
    await w.close()
    assert len(list(cap.glob("swssd.capture.jsonl.*"))) >= 2  # rotated: order across files matters
    expected = {k: v for k, v in model.items() if v}
    assert {kinds[t] for t, _ in expected} == {"state", "queue", "subscriber"}

    got = load(spark, InputOptions([str(cap)]))
    spark_state = {(r["table"], r["key"]): dict(r["fields"]) for r in fold_state(got.events).collect()}
    python_state = {(t, key): v for (_, _, t, key), v in bench_python_fold(cap).items()}
    assert spark_state == python_state == expected
    assert got.counts()["rejects"] == 0


def test_gz_files_are_read_apart_first_each_in_a_task_of_its_own(spark: SparkSession, tmp_path: Path) -> None:
    """Spark packs files into tasks by their size on disk: rotated .gz files, small on disk and
    large in text, shared one task that ran alone long after the others (inputs.read_groups)."""
    from pyspark.sql import functions as F

    paths = []
    for host in ("sw1", "sw2", "sw3"):
        records = [{**old_record(i, f"Ethernet{i % 7}", "SET", [["mtu", str(i)]], host=host),
                    "ts": f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}.000000Z"} for i in range(3000)]
        plain = write_jsonl(tmp_path / host / "swssd.capture.jsonl", records[1500:])
        packed = tmp_path / host / "swssd.capture.jsonl.1.gz"
        packed.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records[:1500]).encode()))
        paths += [str(plain), str(packed)]
    lines = load(spark, InputOptions(paths)).lines
    assert lines is not None
    parts = lines.groupBy(F.spark_partition_id().alias("p")).agg(
        F.collect_set("source").alias("sources"), F.count(F.lit(1)).alias("n")).collect()
    gz = sorted((r["p"], r["sources"]) for r in parts if any(s.endswith(".gz") for s in r["sources"]))
    assert [len(sources) for _, sources in gz] == [1, 1, 1]  # one .gz file a task, alone
    assert [p for p, _ in gz] == [0, 1, 2]  # and first
    assert sum(r["n"] for r in parts) == 9000
    assert state_of(spark, paths, hosts=["sw2"])[("APPL_DB", "PORT_TABLE")]["Ethernet0"] == {"mtu": "2996"}


def test_an_input_matching_nothing_fails_before_spark_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import swssd.replay.session

    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started for an input that matches nothing")

    monkeypatch.setattr(swssd.replay.session, "get_session", no_spark)
    assert main(["state", str(tmp_path / "nothing-here*"), "--output", str(tmp_path / "out")]) == 2
    assert "no file matches" in capsys.readouterr().err


def test_an_empty_input_warns(spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty-file" ).mkdir()
    (tmp_path / "empty-file" / "swssd.capture.jsonl").write_text("")
    for target in ("empty", "empty-file"):
        assert main(["state", str(tmp_path / target), "--output", str(tmp_path / "out"), *SPARK_ARGS]) == 0
        captured = capsys.readouterr()
        assert "read 0 lines" in captured.out and "warning: the inputs hold no lines" in captured.err


def test_progress_lines_while_a_job_runs(spark: SparkSession) -> None:
    import io
    import time as _time

    from swssd.replay.progress import Progress

    out = io.StringIO()
    with Progress(spark, after=0.0, interval=0.05, stream=out):
        spark.range(0, 2_000_000, numPartitions=4).selectExpr("sum(id)").collect()
        _time.sleep(0.2)
    lines = out.getvalue().splitlines()
    assert lines and all(line.startswith("swssd replay: running for ") for line in lines)
    quiet = io.StringIO()
    with Progress(spark, after=30.0, stream=quiet):
        pass
    assert quiet.getvalue() == ""


def test_the_command_is_quiet_unless_verbose(tmp_path: Path) -> None:
    """A fresh `swssd replay` process: results on stdout, none of Spark's start-up notices or
    WARN lines on stderr (progress lines aside; not even the JVM's notice about incubator modules)."""
    import subprocess
    import sys

    capture = write_jsonl(tmp_path / "sw1" / "swssd.capture.jsonl",
                          [old_record(1, "Ethernet0", "SET", [["mtu", "9100"]])])
    proc = subprocess.run(
        [sys.executable, "-m", "swssd.replay", "state", str(capture.parent), "--output", str(tmp_path / "out"),
         *SPARK_ARGS],
        capture_output=True, text=True, timeout=300,
        # the class archive (and its one-time note) has tests of its own: test_replay_jvm.py
        env={**os.environ, "SWSSD_REPLAY_CDS": "0", "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 entries in 1 tables" in proc.stdout
    expected = ("swssd replay: running for ",)  # progress (the JVM's incubator warning is left out)
    noise = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith(expected)]
    assert noise == [], proc.stderr


def test_links_out_of_an_input_directory_are_not_followed_and_rejects_are_private(
    spark: SparkSession, rec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A capture folder holding a link to a file elsewhere (/etc/shadow, say): the link is not
    read (so none of its lines lands in the rejects), a note says so, and the rejects that are
    written are the user's alone (0600 files in 0700 directories)."""
    secret = tmp_path / "elsewhere" / "shadow"
    secret.parent.mkdir()
    secret.write_text("root:$6$secret-hash:19000:0:99999:7:::\n" * 25)
    capture = tmp_path / "captures" / "sw-leaf1"
    shutil.copytree(rec_dir, capture)
    (capture / "shadow").symlink_to(secret)
    (capture / "swss.rec.inside").symlink_to(capture / "swss.rec")  # a link inside the folder is read
    out = tmp_path / "out"
    assert run("stats", str(capture), "--output", str(out)) == 0
    printed = capsys.readouterr()
    assert "1 symbolic link(s) leading out of the input directory not followed" in printed.err + printed.out
    rejects = [line for f in (out / "rejects").glob("*.json") for line in f.read_text().splitlines()]
    assert rejects and not [line for line in rejects if "secret-hash" in line]
    own = len([r for r in rejects if 'sw-leaf1/swss.rec"' in r])
    assert own and len([r for r in rejects if "swss.rec.inside" in r]) == own  # the inside link is read
    for path in (out / "rejects").rglob("*"):
        assert path.stat().st_mode & 0o077 == 0, (path, oct(path.stat().st_mode))


def test_a_truncated_or_false_gz_costs_that_file_only(
    spark: SparkSession, rec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rotated capture cut short (`head -c 300` of a .gz) and a file named .gz that is none: the
    false one is one note and one rejected file; the cut one gives the lines before its cut and one
    rejected line naming the file and the offset (issue 35: it was dropped whole); the rest
    replays as usual, with no traceback."""
    capture = tmp_path / "sw-leaf1"
    shutil.copytree(rec_dir, capture)
    whole = gzip.compress((FIXTURE / "swss.rec.2").read_bytes() * 50)
    (capture / "swss.rec.3.gz").write_bytes(whole[:300])
    (capture / "swss.rec.4.gz").write_bytes(b"not gzip at all\n")
    out = tmp_path / "out"
    assert run("state", str(capture), "--output", str(out)) == 0
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err and "Exception" not in printed.err, printed.err[-2000:]
    notes = [line for line in printed.err.splitlines() if "counted as a rejected" in line]
    assert len(notes) == 2, printed.err
    false_note, cut_note = sorted(notes, key=lambda n: "swss.rec.3.gz" in n)
    assert "swss.rec.4.gz: not a readable gzip file" in false_note and "rejected file" in false_note, notes
    assert "swss.rec.3.gz: gzip data cut or damaged at byte 300 of the file" in cut_note, notes
    assert by_table(spark.read.parquet(str(out / "state")).collect()) == EXPECTED_END
    rejects = [json.loads(line) for f in (out / "rejects").glob("*.json") for line in f.read_text().splitlines()]
    files = sorted(r["source"].rsplit("/", 1)[1] for r in rejects if r["value"] == "")
    assert files == ["swss.rec.3.gz", "swss.rec.4.gz"], rejects
    readable = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(whole[:300])
    lines = readable[: readable.rfind(b"\n") + 1].decode().splitlines()
    from_cut = [r["value"] for r in rejects if r["source"].endswith("swss.rec.3.gz") and r["value"]]
    assert set(from_cut) <= set(lines)
    assert f"{6 + len(from_cut)} rejected" in printed.out, printed.out  # the 4 lines, the 2 files, the cut's


async def test_one_daemon_is_one_host_in_its_swss_rec_and_its_json_lines(
    spark: SparkSession, rec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon's swss.rec names no host, and its folder is named otherwise (`capture`): the host
    it keeps beside the file names it as its JSON records do. SONiC's own swss.rec, with nothing of
    swssd's beside it, keeps its folder's name."""
    cap = tmp_path / "captures" / "capture"
    w = CaptureWriter(cap, host="vm", rec=True)
    await w.start()
    w.record("APPL_DB", "PORT_TABLE", ":", [KeyOpFieldsValues("Ethernet0", "SET", [("mtu", "9100")])])
    w.record("CONFIG_DB", "PORT", "|", [KeyOpFieldsValues("Ethernet0", "SET", [("speed", "1")])], kind="subscriber")
    await w.close()
    sonic = tmp_path / "captures" / "sw-leaf1"
    shutil.copytree(rec_dir, sonic)
    for paths in ([str(cap / "swss.rec")], [str(cap / "swssd.capture.jsonl")]):
        assert {r["host"] for r in load(spark, InputOptions(paths)).events.collect()} == {"vm"}, paths
    out = tmp_path / "out"
    assert run("state", str(cap / "swss.rec"), str(sonic / "swss.rec*"), "--output", str(out)) == 0
    capsys.readouterr()
    state = spark.read.parquet(str(out / "state"))
    assert {(r["host"], r["db"], r["table"]) for r in state.select("host", "db", "table").distinct().collect()} >= {
        ("vm", "APPL_DB", "PORT_TABLE"), ("vm", "CONFIG_DB", "PORT"), ("sw-leaf1", "APPL_DB", "PORT_TABLE")}
    assert {r["host"] for r in state.select("host").distinct().collect()} == {"vm", "sw-leaf1"}
    # --host still wins; and the folder given whole: the host file is not read as a capture file
    assert {r["host"] for r in load(spark, InputOptions([str(cap / "swss.rec")], host="h")).events.collect()} == {"h"}
    assert run("stats", str(cap), "--output", str(out)) == 0
    assert "read 2 lines: 2 events, 0 'recording started' markers, 0 blank, 0 rejected" in capsys.readouterr().out
