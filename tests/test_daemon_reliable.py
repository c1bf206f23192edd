"""The daemon with reliable pops: poison entries, refused pops, the instance lease, shutdown that
keeps what it could not finish, take-over at the next start (in-process, and `swssd run`)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from daemon_harness import DaemonProcess, read_records, wait_until, write_config
from swssd import ConsumerStateTable, DBConnector, KeyOpFieldsValues, Orch, ProducerStateTable, ProducerTable, Retry
from swssd.errors import ConfigError
from swssd.orch.daemon import Daemon
from swssd.orch.pending import PendingMap
from swssd.orch.reliable_pop import ReliablePop, dead_key, inflight_key
from swssd.redis.embedded_redis import EmbeddedRedis
from test_daemon_core import db_config, eventually, make_config, start_daemon, table  # noqa: F401 - fixtures

MODULE = __name__


class KeepingOrch(Orch):
    """Keeps every task; keys starting with `hold` raise Retry until `release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.handled: list[tuple[str, KeyOpFieldsValues]] = []
        self.release = False

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if task.key.startswith("hold") and not (self.release or self.options.get("release")):
            raise Retry("held")
        self.handled.append((table, task))


def orch_of(daemon: Daemon) -> KeepingOrch:
    return daemon.runtimes[0].orch  # type: ignore[return-value]


async def test_one_bad_queue_entry_among_1000_costs_that_entry(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    config = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": [table("PQ", kind="queue")]}])
    producer = ProducerTable(db, "PQ", buffered=True)
    bad = (["junk"], ["k-null", "null", "Sset"], ["k-x", '[["x"]]', "Sset"], ["k-op", "[]", "Sbogus"])
    for i in range(1000):
        await producer.set(f"k{i}", [("f", str(i))])
        if i % 250 == 100:
            await producer.flush()
            await db.redis.lpush("PQ_KEY_VALUE_OP_QUEUE", *bad[i // 250])
    await producer.flush()
    with capture_logs() as logs:
        daemon = await start_daemon(config)
        await eventually(lambda: len(orch_of(daemon).handled) >= 1000)
    keys = [t.key for _, t in orch_of(daemon).handled]
    assert keys == [f"k{i}" for i in range(1000)], "every valid op, once, in order"
    worker = daemon.workers[0]
    assert worker.stats.set_aside == 4
    aside = [e for e in logs if e["event"] == "entry set aside: not a valid change"]
    assert len(aside) == 4 and all(e["table"] == "PQ" and len(e["value"]) <= 512 for e in aside)
    assert await db.redis.llen(dead_key("swssd", "PQ")) == 4
    assert not [e for e in logs if "unreachable" in e["event"]]


async def test_wrong_type_staging_key_costs_that_key(db: DBConnector, db_config: Path, start_daemon: Any) -> None:
    config = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": [table("PORT_TABLE")]}])
    await ProducerStateTable(db, "PORT_TABLE").set_many([(f"Ethernet{i}", [("mtu", "9100")]) for i in range(100)])
    await db.redis.delete("_PORT_TABLE:x")
    await db.redis.sadd("PORT_TABLE_KEY_SET", "x")
    await db.redis.set("_PORT_TABLE:x", "str")
    daemon = await start_daemon(config)
    await eventually(lambda: len(orch_of(daemon).handled) == 100)
    await asyncio.sleep(0.1)
    assert {t.key for _, t in orch_of(daemon).handled} == {f"Ethernet{i}" for i in range(100)}
    assert daemon.workers[0].stats.set_aside == 1
    assert await db.redis.scard("PORT_TABLE_KEY_SET") == 0


async def test_wrong_type_key_set_pauses_that_table_only_until_fixed(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    config = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch",
                                      "tables": [table("BROKEN"), table("FINE", kind="queue")]}])
    await db.redis.set("BROKEN_KEY_SET", "not a set")
    with capture_logs() as logs:
        daemon = await start_daemon(config)
        await ProducerTable(db, "FINE").set("a", [("f", "v")])
        await eventually(lambda: ("FINE", ("a", "SET", [("f", "v")])) in orch_of(daemon).handled)
        await eventually(lambda: daemon.workers[0].stats.pop_errors >= 2)
        refused = [e for e in logs if e["event"].startswith("pop refused by Redis")]
        assert refused and refused[0]["table"] == "BROKEN" and "WRONGTYPE" in refused[0]["error"]
        assert len(refused) == 1, "logged once per health_interval"
        assert daemon.redis_up, "a refused pop is not an unreachable Redis"
        await db.redis.delete("BROKEN_KEY_SET")
        await ProducerStateTable(db, "BROKEN").set("k", [("f", "v")])
        await eventually(lambda: ("BROKEN", ("k", "SET", [("f", "v")])) in orch_of(daemon).handled, timeout=15)
    assert any(e["event"] == "table popped again" for e in logs)
    assert not [e for e in logs if "unreachable" in e["event"]]


async def test_a_second_daemon_with_the_same_instance_is_refused(
    db: DBConnector, db_config: Path, start_daemon: Any, tmp_path: Path
) -> None:
    capture = {"enabled": True, "directory": str(tmp_path / "capture"), "rec": True}
    config = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": [table("LEASED")]}],
                         capture=capture)
    first = await start_daemon(config)
    assert first.ready.is_set()
    second = Daemon(config, handle_signals=False)
    with pytest.raises(ConfigError, match=r"daemon\.instance.*in use by"):
        await asyncio.wait_for(second.run(), 20)
    # the refused daemon wrote nothing into the running one's capture files
    rec = (tmp_path / "capture" / "swss.rec").read_text()
    assert rec.count("recording started") == 1, rec
    other = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": [table("OTHER")]}],
                        daemon={"instance": "second"})
    assert (await start_daemon(other)).ready.is_set()


async def test_shutdown_keeps_what_it_could_not_finish_and_the_next_start_runs_it_first(
    db: DBConnector, db_config: Path
) -> None:
    tables = [table("HELD", reconcile=True), table("HELDQ", kind="queue")]
    config = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": tables}],
                         daemon={"shutdown_timeout": 2.0})
    daemon = Daemon(config, handle_signals=False)
    run = asyncio.ensure_future(daemon.run())
    await asyncio.wait_for(daemon.ready.wait(), 20)
    state, queue = ProducerStateTable(db, "HELD"), ProducerTable(db, "HELDQ")
    await state.set("hold1", [("f", "1")])
    await state.set("ok", [("f", "1")])
    await queue.set("hold2", [("f", "2")])
    await queue.delete("holdq")
    await eventually(lambda: len(orch_of(daemon).handled) == 1 and daemon.pending_count == 3)
    await state.delete("hold1")  # a DEL popped but not handled: reconcile could never bring it back
    await eventually(lambda: daemon.workers[0].stats.popped == 3)
    with capture_logs() as logs:
        daemon.stop()
        assert await asyncio.wait_for(run, 30) == 0
    (left,) = [e for e in logs if e["event"].startswith("stopped with tasks not handled")]
    assert "in-flight record" in left["event"] and left["tasks"] == 3
    assert not [e for e in logs if "reconcile = true" in e["event"]]
    assert len(await db.redis.hkeys(inflight_key("swssd", "HELD"))) >= 2

    await db.redis.hset("HELD:zz", "f", "1")  # written while the daemon is down: only reconcile has it
    released = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": tables,
                                        "options": {"release": True}}])
    again = Daemon(released, handle_signals=False)
    run = asyncio.ensure_future(again.run())
    with capture_logs() as logs:
        await asyncio.wait_for(again.ready.wait(), 20)
    orch = orch_of(again)
    await eventually(lambda: len(orch.handled) == 5)
    handled = [(t, task.key, task.op) for t, task in orch.handled]
    assert ("HELD", "hold1", "DEL") in handled and ("HELD", "hold1", "SET") not in handled
    assert [h for h in handled if h[0] == "HELDQ"] == [("HELDQ", "hold2", "SET"), ("HELDQ", "holdq", "DEL")]
    assert handled.index(("HELD", "hold1", "DEL")) < handled.index(("HELD", "zz", "SET")), "taken over first"
    assert [e for e in logs if e["event"].startswith("in-flight tasks taken over")]
    again.stop()
    assert await asyncio.wait_for(run, 30) == 0
    for name in ("HELD", "HELDQ"):
        assert await db.redis.hkeys(inflight_key("swssd", name)) == ["seq"]


async def test_a_clean_stop_does_not_hand_over_again_what_was_handled(db: DBConnector, db_config: Path) -> None:
    """At-least-once is for crashes: after a clean stop the next start runs only the tasks not done,
    not the handled tasks that shared their batches."""
    tables = [table("MIXED"), table("MIXEDQ", kind="queue")]
    config = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": tables}])
    daemon = Daemon(config, handle_signals=False)
    run = asyncio.ensure_future(daemon.run())
    await asyncio.wait_for(daemon.ready.wait(), 20)
    state, queue = ProducerStateTable(db, "MIXED", buffered=True), ProducerTable(db, "MIXEDQ", buffered=True)
    for producer in (state, queue):  # one batch each: a held task and handled ones
        await producer.set("ok1", [("f", "1")])
        await producer.set("hold1", [("f", "1")])
        await producer.set("ok2", [("f", "1")])
        await producer.flush()
    await eventually(lambda: len(orch_of(daemon).handled) == 4 and daemon.pending_count == 2)
    daemon.stop()
    assert await asyncio.wait_for(run, 30) == 0

    released = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": tables,
                                        "options": {"release": True}}])
    again = Daemon(released, handle_signals=False)
    run = asyncio.ensure_future(again.run())
    await asyncio.wait_for(again.ready.wait(), 20)
    await eventually(lambda: len(orch_of(again).handled) >= 2)
    await asyncio.sleep(0.3)
    assert sorted((t, task.key) for t, task in orch_of(again).handled) == [("MIXED", "hold1"), ("MIXEDQ", "hold1")]
    again.stop()
    assert await asyncio.wait_for(run, 30) == 0


def test_sigterm_then_start_runs_only_the_task_not_done(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """Issue 25 item 4 as it was found, with `swssd produce` and SIGTERM: `wait1` waits on Retry,
    `ok1` of the same pop is handled; the stop line counts one task kept, the next start takes
    over one, and `ok1` is handled once in all."""
    import subprocess
    import sys

    records = tmp_path / "records.jsonl"
    config = write_config(tmp_path, clean_redis, {"orchs": [{
        "plugin": "orch_plugins:TroubleOrch", "options": {"record": str(records)},
        "tables": [{"db": "APPL_DB", "table": "CLEAN"}]}]})
    first = DaemonProcess(config, tmp_path / "log1")
    try:
        first.wait_ready()
        produced = subprocess.run(
            [sys.executable, "-m", "swssd.cli", "produce", "--db-config", str(tmp_path / "database_config.json"),
             "--db", "APPL_DB", "--table", "CLEAN", "set", "wait1", "a=1", "set", "ok1", "a=1"],
            capture_output=True, text=True, timeout=60)
        assert produced.returncode == 0, produced.stderr
        assert wait_until(lambda: ("CLEAN", "ok1") in {(t, k) for t, k, _o, _f in read_records(records)}, 10)
        first.wait_for_log("task waits")
    finally:
        assert first.stop() == 0
    (kept,) = first.events("stopped with tasks not handled: they stay in the in-flight record in Redis and run "
                           "first at the next start of this instance")
    assert kept["tasks"] == 1, kept
    again = DaemonProcess(config, tmp_path / "log2")
    try:
        again.wait_ready()
        (taken,) = again.events("in-flight tasks taken over from the last run; they run first")
        assert taken["tasks"] == 1, taken
        again.wait_for_log("task waits")
    finally:
        assert again.stop() == 0
    assert [k for _t, k, _o, _f in read_records(records)] == ["ok1"]


async def test_clean_restarts_never_set_a_held_task_aside(db: DBConnector, db_config: Path) -> None:
    """The take-over count that sets a crashing task aside is reset by every clean stop: a task
    held by Retry across many clean restarts is handed over each time."""
    config = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch", "tables": [table("HELDLONG")]}])
    await ProducerStateTable(db, "HELDLONG").set("hold1", [("f", "1")])
    for _ in range(4):
        daemon = Daemon(config, handle_signals=False)
        run = asyncio.ensure_future(daemon.run())
        await asyncio.wait_for(daemon.ready.wait(), 20)
        await eventually(lambda d=daemon: d.pending_count == 1)
        assert daemon.workers[0].stats.dead_lettered == 0
        daemon.stop()
        assert await asyncio.wait_for(run, 30) == 0
    assert await db.redis.hget(inflight_key("swssd", "HELDLONG"), "takeovers") is None
    # A clean stop says nothing was in a handler: no key stays blamed.
    assert await db.redis.hmget(inflight_key("swssd", "HELDLONG"), ["handler", "blamed"]) == [None, None]


# -- as a process ---------------------------------------------------------------------------


def test_wrong_type_keys_at_start_are_logged_and_the_daemon_keeps_running(
    clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    import redis

    r = redis.Redis.from_url(clean_redis.url, db=0, decode_responses=True)
    r.set("BADSET_KEY_SET", "not a set")
    r.hset("RECON:good", "f", "v")
    r.set("RECON:bad", "not a hash")
    records = tmp_path / "records.jsonl"
    config = {"orchs": [{"plugin": "orch_plugins:RecordingOrch", "options": {"record": str(records)},
                         "tables": [{"db": "APPL_DB", "table": "BADSET"},
                                    {"db": "APPL_DB", "table": "RECON", "reconcile": True}]}]}
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, config), tmp_path / "log")
    try:
        daemon.wait_ready()
        (skipped,) = daemon.wait_for_log("reconcile: keys skipped, not hashes")
        assert skipped["first"] == "RECON:bad" and skipped["skipped"] == 1
        refused = daemon.wait_for_log("pop refused by Redis; the table is not popped until this is fixed")
        assert refused[0]["table"] == "BADSET" and "WRONGTYPE" in refused[0]["error"]
        assert wait_until(lambda: ["RECON", "good", "SET", [["f", "v"]]] in
                          [[t, k, o, [list(fv) for fv in f]] for t, k, o, f in read_records(records)], 10)
        assert daemon.proc.poll() is None, "still running"
    finally:
        assert daemon.stop() == 0


def test_second_daemon_of_one_instance_exits_2_with_one_line(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    config = {"orchs": [{"plugin": "orch_plugins:RecordingOrch", "options": {"record": str(records)},
                         "tables": [{"db": "APPL_DB", "table": "ONE"}]}]}
    first = DaemonProcess(write_config(tmp_path, clean_redis, config), tmp_path / "log1")
    try:
        first.wait_ready()
        second = DaemonProcess(write_config(tmp_path, clean_redis, config, "second.toml"), tmp_path / "log2")
        assert second.wait(30) == 2
        lines = [line for line in (tmp_path / "log2").read_text().splitlines() if "error" in line]
        assert len(lines) == 1 and "daemon.instance" in lines[0] and "in use by" in lines[0], lines
    finally:
        assert first.stop() == 0
    # After SIGKILL the lease names a dead process: the next start takes it over at once.
    third = DaemonProcess(write_config(tmp_path, clean_redis, config, "third.toml"), tmp_path / "log3")
    third.wait_ready()
    third.signal(signal.SIGKILL)
    third.wait(10)
    fourth = DaemonProcess(write_config(tmp_path, clean_redis, config, "fourth.toml"), tmp_path / "log4")
    try:
        fourth.wait_ready()
        assert fourth.events("instance lease taken over from a process that is gone")
    finally:
        assert fourth.stop() == 0


async def test_a_task_held_back_for_ever_does_not_grow_the_record(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    config = make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch",
                                      "tables": [table("HOLDQ", kind="queue", pop_batch_size=1)]}])
    daemon = await start_daemon(config)
    producer = ProducerTable(db, "HOLDQ")
    await producer.set("hold-forever", [("f", "0")])
    for i in range(400):
        await producer.set(f"k{i}", [("f", str(i))])
    await eventually(lambda: len(orch_of(daemon).handled) == 400, timeout=30)
    await asyncio.sleep(0.3)
    fields = await db.redis.hkeys(inflight_key("swssd", "HOLDQ"))
    assert len(fields) <= 258, len(fields)
    assert daemon.reliable[daemon.workers[0]].compactions >= 1


# -- its own keys, hostile -------------------------------------------------------------------


def _produce(server: EmbeddedRedis, table_name: str, key: str, value: str) -> None:
    async def produce() -> None:
        db = await DBConnector.from_url(server.url, db_id=0, separator=":", name="APPL_DB")
        await ProducerStateTable(db, table_name).set(key, [("f", value)])
        await db.close()

    asyncio.run(produce())


def _recording_config(tmp_path: Path, server: EmbeddedRedis, records: Path, *tables: str) -> Path:
    return write_config(tmp_path, server, {"orchs": [{
        "plugin": "orch_plugins:RecordingOrch", "options": {"record": str(records)},
        "tables": [{"db": "APPL_DB", "table": t} for t in tables],
    }]})


@pytest.mark.parametrize("case", ["malformed-fields", "record-not-a-hash", "lease-not-a-string", "lease-garbage"])
def test_a_malformed_own_key_is_set_aside_and_the_daemon_starts(
    clean_redis: EmbeddedRedis, tmp_path: Path, case: str
) -> None:
    import redis

    raw = redis.Redis(port=clean_redis.port, decode_responses=True)
    record = inflight_key("swssd", "OWN")
    if case == "malformed-fields":  # one good batch among junk: it is still handed over
        raw.hset(record, mapping={"seq": "abc", "bogus": "x", "3": "notjson\xff", "4": '[["good", ["f", "v"], 0]]'})
    elif case == "record-not-a-hash":
        raw.set(record, "not a hash")
    elif case == "lease-not-a-string":
        raw.hset("_SWSSD_INSTANCE:swssd", "holder", "x")
    else:
        raw.set("_SWSSD_INSTANCE:swssd", "garbage")
    records = tmp_path / "records.jsonl"
    daemon = DaemonProcess(_recording_config(tmp_path, clean_redis, records, "OWN"), tmp_path / "log")
    try:
        daemon.wait_ready()
        (aside,) = daemon.events("own key unreadable: set aside")
        assert aside["set_aside_as"].startswith(aside["key"] + ":set-aside:") and raw.exists(aside["set_aside_as"])
        if case == "malformed-fields":
            assert wait_until(lambda: ("OWN", "good", "SET", [("f", "v")]) in read_records(records), 10)
            assert "not a batch number" in aside["reason"] and "not a sequence number" in aside["reason"]
        _produce(clean_redis, "OWN", "later", "1")
        assert wait_until(lambda: ("OWN", "later", "SET", [("f", "1")]) in read_records(records), 10)
        assert not [line for line in (tmp_path / "log").read_text().splitlines() if "Traceback" in line]
    finally:
        assert daemon.stop() == 0


def test_a_sequence_jump_written_into_the_record_costs_nothing(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """`HSET <record> seq 1000000000` under a running daemon: the next pop reads the record's
    fields instead of a billion numbers (it ran out of memory), and changes keep coming."""
    import redis

    raw = redis.Redis(port=clean_redis.port, decode_responses=True)
    records = tmp_path / "records.jsonl"
    daemon = DaemonProcess(_recording_config(tmp_path, clean_redis, records, "JUMP"), tmp_path / "log")
    try:
        daemon.wait_ready()
        for i in range(3):
            if i == 1:
                raw.hset(inflight_key("swssd", "JUMP"), "seq", "1000000000")
            _produce(clean_redis, "JUMP", f"k{i}", str(i))
            assert wait_until(lambda i=i: ("JUMP", f"k{i}", "SET", [("f", str(i))]) in read_records(records), 10)
        assert daemon.proc.poll() is None
    finally:
        assert daemon.stop() == 0


async def test_keys_blamed_by_the_last_abnormal_end_run_first(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    """A run that ended abnormally left 20 changes in flight and named one key in a handler: the
    next start runs that key first (alone), then the rest. Run in its place, the same key was in
    its handler again when kills in a row came as long after each start (a restart loop redoing
    the same work at the same speed: the campaign's seed 67), and was set aside though innocent."""
    producer = ProducerStateTable(db, "BLAMED")
    for i in range(20):
        await producer.set(f"k{i:02d}", [("f", str(i))])
    crashed = ReliablePop(ConsumerStateTable(db, "BLAMED", 128, track_deletes=True), PendingMap(), instance="swssd")
    (batch,) = await crashed.pop()  # popped into the in-flight record, never handled
    last = batch.tasks[-1].key
    await db.redis.hset(inflight_key("swssd", "BLAMED"), "handler", json.dumps([last]))  # its marks when it died
    daemon = await start_daemon(make_config(db_config, [{"plugin": f"{MODULE}:KeepingOrch",
                                                         "tables": [table("BLAMED")]}]))
    orch = orch_of(daemon)
    await eventually(lambda: len(orch.handled) == 20)
    assert [task.key for _, task in orch.handled][:2] == [last, batch.tasks[0].key]
