"""End to end: random traffic into a running `swssd run` that captures; replay equals Redis.

The daemon pops with track_deletes, so its JSON capture holds DEL then SET where a key was
deleted and set again between two pops, and `replay state` must equal the consumer-side tables
key for key and field for field; `--as-of` an instant between two bursts must equal the
snapshot taken at that instant. Its swss.rec output, written the same way, replays equally.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from daemon_harness import DaemonProcess, write_config  # noqa: E402
from swssd import DBConnector, ProducerStateTable, Table  # noqa: E402
from swssd.capture import iso_ts  # noqa: E402
from swssd.embedded_redis import EmbeddedRedis  # noqa: E402
from swssd.replay.cli import main  # noqa: E402

from fixtures.spark_session import SPARK_ARGS, spark  # noqa: E402,F401

APPL_TABLES = ["E2E_PORT", "E2E_ROUTE"]
STATE_TABLE = "E2E_STATE"  # STATE_DB, '|' separator
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
    spark: SparkSession, clean_redis: EmbeddedRedis, tmp_path: Path  # noqa: F811
) -> None:
    capture = tmp_path / "capture"
    config = {
        "capture": {"enabled": True, "directory": str(capture), "rec": True, "host": "sw-e2e"},
        "orchs": [{
            "plugin": "orch_plugins:RecordingOrch",
            "tables": [*({"db": "APPL_DB", "table": t} for t in APPL_TABLES),
                       {"db": "STATE_DB", "table": STATE_TABLE}],
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
               for a, b in zip(records, records[1:])), "no delete-then-set in one pop: the test lost its point"

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
