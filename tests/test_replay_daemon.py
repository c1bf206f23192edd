"""End to end: random traffic into a running `swssd run` that captures; replay equals Redis.

The daemon pops with track_deletes, so its JSON capture holds DEL then SET where a key was
deleted and set again between two pops, and `replay state` must equal the consumer-side tables
key for key and field for field; `--as-of` an instant between two bursts must equal the
snapshot taken at that instant. Its swss.rec output, written the same way, replays equally.
A CONFIG_DB subscriber table (plain hash writes, HDELs among them) replays to the live table, as
its SETs replace entries; a notification channel shows in history and stats, never in state.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import random
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from daemon_harness import DaemonProcess, read_records, wait_until, write_config
from fixtures.spark_session import SPARK_ARGS, spark  # noqa: F401 - spark is a fixture
from swssd import DBConnector, NotificationProducer, ProducerStateTable, Table
from swssd.capture import iso_ts
from swssd.redis.embedded_redis import EmbeddedRedis
from swssd.replay.cli import main

APPL_TABLES = ["E2E_PORT", "E2E_ROUTE"]
STATE_TABLE = "E2E_STATE"  # STATE_DB, '|' separator, consumed as a key-set (kind "state") table
KEYS = [*(f"Ethernet{i}" for i in range(0, 40, 4)), "Vlan1000:fe80::1", "10.0.0.0/8", "é:x"]


async def burst(rng: random.Random, producers: dict[str, ProducerStateTable], ops: int, tag: str) -> None:
    for i in range(ops):
        table = rng.choice(list(producers))
        producer = producers[table]
        key = rng.choice(KEYS)
        roll = rng.random()
        value = f"{tag}{i}:a|b"
        if roll < 0.2:
            await producer.delete(key)
        elif roll < 0.35:  # deleted and set again, most likely before one pop
            await producer.delete(key)
            await producer.set(key, [(f"f{rng.randrange(4)}", value)])
        else:
            await producer.set(key, [(f"f{rng.randrange(4)}", value) for _ in range(rng.randint(1, 3))])
        if i % 25 == 0:
            await asyncio.sleep(0.005)  # let the daemon pop in between


async def settled(dbs: dict[str, DBConnector], daemon: DaemonProcess, timeout: float = 60.0) -> dict:
    """Once every key set is empty (all popped), the consumer-side tables."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        pending = 0
        for table, db in dbs.items():
            pending += int(await db.redis.execute_command("SCARD", f"{table}_KEY_SET"))
        if not pending:
            await asyncio.sleep(0.3)  # the daemon records right after its pop returns
            return {(db.name, table): await Table(db, table).dump() for table, db in dbs.items()}
        assert loop.time() < deadline and daemon.proc.poll() is None, daemon.log_path.read_text()[-2000:]
        await asyncio.sleep(0.1)


def replayed(spark: SparkSession, out: Path) -> dict:
    got: dict = {}
    for r in spark.read.parquet(str(out / "state")).collect():
        got.setdefault((r["db"], r["table"]), {})[r["key"]] = dict(r["fields"])
    return got


def nonempty(state: dict) -> dict:
    return {k: v for k, v in state.items() if v}


async def test_daemon_capture_replays_to_the_redis_tables(
    spark: SparkSession, clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    capture = tmp_path / "capture"
    config = {
        "capture": {"enabled": True, "directory": str(capture), "rec": True, "host": "sw-e2e"},
        "orchs": [{
            "plugin": "orch_plugins:RecordingOrch",
            "tables": [*({"db": "APPL_DB", "table": t} for t in APPL_TABLES),
                       {"db": "STATE_DB", "table": STATE_TABLE, "kind": "state"}],
            "options": {"record": str(tmp_path / "handled.jsonl")},
        }],
    }
    appl = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    state_db = await DBConnector.from_url(clean_redis.url, db_id=6, separator="|", name="STATE_DB")
    dbs = {**{t: appl for t in APPL_TABLES}, STATE_TABLE: state_db}
    producers = {t: ProducerStateTable(db, t) for t, db in dbs.items()}
    rng = random.Random(11)
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, config), tmp_path / "log")
    try:
        daemon.wait_ready()
        await burst(rng, producers, 400, "a")
        snapshot = await settled(dbs, daemon)
        middle_us = time.time_ns() // 1000
        await asyncio.sleep(0.05)
        await burst(rng, producers, 400, "b")
        final = await settled(dbs, daemon)
    finally:
        assert daemon.stop() == 0  # flushes the capture
        await appl.close()
        await state_db.close()
    assert snapshot != final
    records = [json.loads(line) for line in (capture / "swssd.capture.jsonl").read_text().splitlines()]
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert any(a["op"] == "DEL" and b["op"] == "SET" and a["key"] == b["key"] and a["ts"] == b["ts"]
               for a, b in itertools.pairwise(records)), "no delete-then-set in one pop: the test lost its point"

    out = tmp_path / "out"
    jsonl = str(capture / "swssd.capture.jsonl*")
    assert await asyncio.to_thread(main, ["state", jsonl, "--output", str(out), *SPARK_ARGS]) == 0
    got = replayed(spark, out)
    assert {r["host"] for r in spark.read.parquet(str(out / "state")).select("host").distinct().collect()} == {"sw-e2e"}
    assert got == nonempty(final)

    middle = iso_ts(middle_us)
    assert await asyncio.to_thread(
        main, ["state", jsonl, "--as-of", middle, "--output", str(out), *SPARK_ARGS]) == 0
    assert replayed(spark, out) == nonempty(snapshot)

    # swssd's swss.rec form of the same run (APPL_DB lines; STATE_DB's '|' lines read as CONFIG_DB)
    rec = str(capture / "swss.rec*")
    assert await asyncio.to_thread(
        main, ["state", rec, "--table", "E2E_*", "--db", "APPL_DB", "--output", str(out), *SPARK_ARGS]) == 0
    assert replayed(spark, out) == nonempty({k: v for k, v in final.items() if k[0] == "APPL_DB"})

    # Both forms named together (the directory, or the two globs): each event counted once, from
    # the JSON Lines capture, and the left-out swss.rec named in a note.
    for inputs in ([str(capture)], [rec, jsonl]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            assert await asyncio.to_thread(main, ["stats", *inputs, "--output", str(out), *SPARK_ARGS]) == 0
        assert "swss.rec file(s) in" in err.getvalue() and "left out" in err.getvalue()
        rows = spark.read.parquet(str(out / "stats" / "tables")).collect()
        assert sum(r["events"] for r in rows) == len(records)
        assert {r["host"] for r in rows} == {"sw-e2e"}


SUB_TABLE = "E2E_CONFIG_PORT"  # CONFIG_DB, written with plain hash writes: a subscriber table
CHANNEL = "E2E_EVENTS"  # APPL_DB pub/sub channel: a notification table


def merged(records: list[dict]) -> dict:  # type: ignore[type-arg]
    """The captured SETs merged as if they were a state table's (what replay must not do here)."""
    out: dict = {}
    for r in records:
        if r["op"] == "DEL":
            out.pop(r["key"], None)
        else:
            out.setdefault(r["key"], {}).update(r["fvs"])
    return out


async def test_daemon_capture_of_subscriber_tables_and_notifications_replays_exactly(
    spark: SparkSession, clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """Plain hash writes with HDELs on a CONFIG_DB table and notifications on a channel, consumed
    by `swssd run`: replay state equals the live table (no HDEL'd field comes back), notifications
    are in history and stats only, and swss.rec has no notification."""
    capture = tmp_path / "capture"
    handled = tmp_path / "handled.jsonl"
    config = {
        "capture": {"enabled": True, "directory": str(capture), "rec": True, "host": "sw-e2e"},
        "orchs": [{
            "plugin": "orch_plugins:RecordingOrch",
            "tables": [{"db": "CONFIG_DB", "table": SUB_TABLE, "kind": "subscriber"},
                       {"db": "APPL_DB", "table": CHANNEL, "kind": "notification"}],
            "options": {"record": str(handled)},
        }],
    }
    cfg = await DBConnector.from_url(clean_redis.url, db_id=4, separator="|", name="CONFIG_DB")
    appl = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    await cfg.redis.config_set("notify-keyspace-events", "AKE")
    table, producer = Table(cfg, SUB_TABLE), NotificationProducer(appl, CHANNEL)
    rng = random.Random(3)
    sent = 0
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, config), tmp_path / "log")
    try:
        daemon.wait_ready()
        for i in range(300):
            key = rng.choice(KEYS[:6])
            roll = rng.random()
            if roll < 0.1:
                await table.delete(key)
            elif roll < 0.35:
                await table.hdel(key, f"f{rng.randrange(4)}")
            elif roll < 0.5:
                await producer.send("port_state_change", key, [("state", str(i))])
                sent += 1
            else:
                await table.set(key, [(f"f{rng.randrange(4)}", f"v{i}") for _ in range(rng.randint(1, 3))])
            if i % 10 == 0:
                await asyncio.sleep(0.02)  # let the daemon pop in between
        await table.set("zz_end", [("done", "1")])  # popped after every key changed before it
        await producer.send("end", "zz_end", [])
        sent += 1

        def finished() -> bool:
            seen = {tuple(r[:3]) for r in read_records(handled)}
            return {(SUB_TABLE, "zz_end", "SET"), (CHANNEL, "zz_end", "end")} <= seen

        assert await asyncio.to_thread(wait_until, finished, 60.0), daemon.log_path.read_text()[-2000:]
        live = await table.dump()
    finally:
        assert daemon.stop() == 0
        await cfg.close()
        await appl.close()
    records = [json.loads(line) for line in (capture / "swssd.capture.jsonl").read_text().splitlines()]
    assert {(r["table"], r.get("kind")) for r in records} == {(SUB_TABLE, "subscriber"), (CHANNEL, "notification")}
    subscriber = [r for r in records if r["table"] == SUB_TABLE]
    assert merged(subscriber) != live, "no HDEL'd field would survive a merge: the test lost its point"

    out = tmp_path / "out"
    jsonl = str(capture / "swssd.capture.jsonl*")
    assert await asyncio.to_thread(main, ["state", jsonl, "--output", str(out), *SPARK_ARGS]) == 0
    assert replayed(spark, out) == {("CONFIG_DB", SUB_TABLE): live}

    assert await asyncio.to_thread(
        main, ["history", jsonl, "--table", CHANNEL, "--output", str(out), *SPARK_ARGS]) == 0
    history = spark.read.parquet(str(out / "history")).collect()
    assert len(history) == sent and {r["kind"] for r in history} == {"notification"}
    assert await asyncio.to_thread(main, ["stats", jsonl, "--output", str(out), *SPARK_ARGS]) == 0
    tables = {r["table"]: r for r in spark.read.parquet(str(out / "stats" / "tables")).collect()}
    assert (tables[CHANNEL]["kind"], tables[CHANNEL]["notifications"], tables[CHANNEL]["sets"]) == (
        "notification", sent, 0)
    assert (tables[SUB_TABLE]["kind"], tables[SUB_TABLE]["notifications"]) == ("subscriber", 0)

    # swss.rec: no notification; the subscriber's SETs merge there, so live fields are a subset
    rec_text = "".join(p.read_text() for p in capture.glob("swss.rec*"))
    assert CHANNEL not in rec_text and f"{SUB_TABLE}|zz_end|SET|done:1" in rec_text
    assert await asyncio.to_thread(
        main, ["state", str(capture / "swss.rec*"), "--output", str(out), *SPARK_ARGS]) == 0
    from_rec = replayed(spark, out)[("CONFIG_DB", SUB_TABLE)]
    assert from_rec.keys() == live.keys() and from_rec != live
    assert all(live[k].items() <= from_rec[k].items() for k in live)


async def test_daemon_capture_of_a_zmq_table_replays_as_its_persisted_table(
    spark: SparkSession, clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """A zmq table with db_persistence, consumed by `swssd run`: a ZMQ SET carries the fields the
    producer set and C++ persistence makes them the whole entry, so replay state equals the
    persisted Redis table (fields left out by a later SET are gone), not a merge of the SETs."""
    from swssd.channels.zmq import ZmqClient, ZmqProducerStateTable

    capture = tmp_path / "capture"
    handled = tmp_path / "handled.jsonl"
    endpoint = f"ipc://{tmp_path}/zmq.sock"
    config = {
        "capture": {"enabled": True, "directory": str(capture), "host": "sw-e2e"},
        "orchs": [{
            "plugin": "orch_plugins:RecordingOrch",
            "tables": [{"db": "APPL_DB", "table": "E2E_ZROUTE", "kind": "zmq", "endpoint": endpoint,
                        "db_persistence": True}],
            "options": {"record": str(handled)},
        }],
    }
    appl = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, config), tmp_path / "log")
    client = ZmqClient(endpoint)
    rng = random.Random(5)
    try:
        daemon.wait_ready()
        producer = ZmqProducerStateTable(appl, "E2E_ZROUTE", client, db_persistence=False)
        expected: dict[str, dict[str, str]] = {}
        for i in range(400):
            key = rng.choice(KEYS)
            if rng.random() < 0.15:
                await producer.delete(key)
                expected.pop(key, None)
            else:
                fvs = [(f"f{n}", f"v{i}") for n in rng.sample(range(4), rng.randint(1, 3))]
                await producer.set(key, fvs)
                expected[key] = dict(fvs)
        await producer.set("zz_end", [("done", "1")])
        expected["zz_end"] = {"done": "1"}
        table = Table(appl, "E2E_ZROUTE")

        async def persisted() -> bool:
            return await table.dump() == expected

        for _ in range(400):
            if await persisted():
                break
            await asyncio.sleep(0.05)
        assert await persisted()
        assert await asyncio.to_thread(
            wait_until, lambda: ("E2E_ZROUTE", "zz_end", "SET") in {tuple(r[:3]) for r in read_records(handled)}, 60.0
        )
    finally:
        client.close()
        assert daemon.stop() == 0
        await appl.close()
    records = [json.loads(line) for line in (capture / "swssd.capture.jsonl").read_text().splitlines()]
    assert {r.get("kind") for r in records} == {"zmq"}
    assert merged(records) != expected, "no SET dropped a field: the test lost its point"
    out = tmp_path / "out"
    jsonl = str(capture / "swssd.capture.jsonl*")
    assert await asyncio.to_thread(main, ["state", jsonl, "--output", str(out), *SPARK_ARGS]) == 0
    assert replayed(spark, out) == {("APPL_DB", "E2E_ZROUTE"): expected}
