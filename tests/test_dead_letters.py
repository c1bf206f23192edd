"""Dead letters kept and actionable: every task the daemon gives up on is stored in Redis with its
reason (a capped stream), and `swssd dead-letters` lists, shows, retries and purges them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from daemon_harness import DaemonProcess, read_records, wait_until, write_config
from swssd import DBConnector, KeyOpFieldsValues, ProducerStateTable, Table
from swssd.orch.dead_letters import DeadLetterStore, stream_key
from swssd.redis.embedded_redis import EmbeddedRedis
from swssd.testing import DaemonRunner

CLI = [sys.executable, "-m", "swssd.cli"]


def _config(tmp_path: Path, server: EmbeddedRedis, **daemon: Any) -> Path:
    return write_config(tmp_path, server, {
        "daemon": {"shutdown_timeout": 2.0, **daemon},
        "orchs": [{
            "plugin": "orch_plugins:TroubleOrch", "name": "trouble", "options": {"record": str(tmp_path / "rec")},
            "retry": {"max_attempts": 3, "backoff_initial": 0.01, "backoff_max": 0.02},
            "tables": [{"db": "APPL_DB", "table": "DL"}],
        }],
    })


def dead_letters(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "dead-letters", *args, "--config", str(config)],
                          capture_output=True, text=True, timeout=60)


def listed(config: Path) -> list[dict[str, Any]]:
    out = dead_letters(config, "list", "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


async def test_a_dead_letter_is_listed_retried_after_the_fix_and_purged(
    clean_redis: EmbeddedRedis, db: DBConnector, tmp_path: Path,
) -> None:
    config = _config(tmp_path, clean_redis)
    daemon = DaemonProcess(config, tmp_path / "log")
    try:
        daemon.wait_ready()
        await ProducerStateTable(db, "DL").set("broken1", [("nexthop", "10.0.0.1")])
        assert wait_until(lambda: len(listed(config)) == 1, 20)
        [letter] = listed(config)
        assert (letter["db"], letter["table"], letter["key"], letter["op"]) == ("APPL_DB", "DL", "broken1", "SET")
        assert letter["fvs"] == [["nexthop", "10.0.0.1"]] and letter["attempts"] == 3
        assert letter["reason"] == "RuntimeError: no route to broken1's next hop"
        before = subprocess.run([*CLI, "dead-letters", "--config", str(config), "list"], capture_output=True,
                                text=True, timeout=60)
        assert before.returncode == 0 and "broken1" in before.stdout, before.stderr
        text = dead_letters(config, "list").stdout
        assert "broken1" in text and "no route to broken1's next hop" in text and "attempts=3" in text
        shown = json.loads(dead_letters(config, "show", letter["id"]).stdout)
        assert shown["reason"] == letter["reason"] and shown["fvs"] == [["nexthop", "10.0.0.1"]]

        # retried before the cause is fixed: dead-lettered again, with its reason
        assert dead_letters(config, "retry", letter["id"]).returncode == 0
        assert wait_until(lambda: [d["key"] for d in listed(config)] == ["broken1"]
                          and listed(config)[0]["id"] != letter["id"], 20)
        assert read_records(tmp_path / "rec") == []

        state = await DBConnector.from_url(clean_redis.url, db_id=6, separator="|", name="STATE_DB")
        await Table(state, "FIX").set("broken1", [("done", "1")])
        await state.close()
        out = dead_letters(config, "retry", "--table", "DL", "--key", "broken*")
        assert out.returncode == 0 and "1 sent to the daemon again" in out.stdout, out.stderr
        handled = [("DL", "broken1", "SET", [("nexthop", "10.0.0.1")])]
        assert wait_until(lambda: read_records(tmp_path / "rec") == handled, 20)
        assert listed(config) == []

        producer = ProducerStateTable(db, "DL")
        for i in range(4):
            await producer.set(f"fail{i}", [("f", str(i))])
        assert wait_until(lambda: len(listed(config)) == 4, 20)
        out = dead_letters(config, "purge", "--key", "fail0")
        assert out.returncode == 0 and "purged 1 dead letter" in out.stdout
        assert sorted(d["key"] for d in listed(config)) == ["fail1", "fail2", "fail3"]
        assert dead_letters(config, "purge", "--older-than", "1h").stdout.startswith("purged 0 ")
        assert dead_letters(config, "purge", "--all", "--table", "DL").returncode == 2
        assert dead_letters(config, "purge", "--all").returncode == 0
        assert listed(config) == []
    finally:
        assert daemon.stop() == 0


async def test_the_daemon_keeps_at_most_dead_letters_max_and_counts_them(
    clean_redis: EmbeddedRedis, db: DBConnector, tmp_path: Path,
) -> None:
    doc = {
        "daemon": {"dead_letters_max": 5},
        "metrics": {"enabled": True},
        "orchs": [{
            "plugin": "orch_plugins:TroubleOrch", "options": {"record": str(tmp_path / "rec")},
            "retry": {"max_attempts": 1}, "tables": [{"db": "APPL_DB", "table": "DL"}],
        }],
    }
    env = {"PYTHONPATH": str(Path(__file__).resolve().parent)}
    with DaemonRunner(doc, redis=clean_redis, directory=tmp_path, env=env) as daemon:
        producer = ProducerStateTable(db, "DL")
        for i in range(30):
            await producer.set(f"fail{i:02}", [("f", str(i))])
        daemon.wait_for("task dead-lettered", count=30)
        config = daemon.config
        assert wait_until(lambda: len(listed(config)) == 5, 20)  # the newest five (pops come in any order)
        keys = [d["key"] for d in listed(config)]
        assert len(set(keys)) == 5 and all(k.startswith("fail") for k in keys)
        assert daemon.metrics()['swssd_dead_letters{db="APPL_DB"}'] == 5
        url = daemon.events("serving metrics")[0]["url"]
        status = subprocess.run([*CLI, "status", "--metrics-url", url], capture_output=True, text=True, timeout=60)
        assert "dead letters kept: APPL_DB 5 (swssd dead-letters list)" in status.stdout, status.stdout
    assert daemon.exit_status == 0


async def test_the_store_stays_bounded_under_100000_failures(db: DBConnector) -> None:
    store = DeadLetterStore("bounded", max_entries=1000)
    task = KeyOpFieldsValues("k", "SET", [("f", "v")])
    for i in range(100_000):
        store.record(db, "APPL_DB", "T", "state", task, f"failure {i}", 5)
        assert len(store._queue) <= 1000
    await store.close(30)
    assert await db.redis.xlen(stream_key("bounded")) == 1000
    assert store.sizes == {"APPL_DB": 1000}
    newest = await db.redis.xrevrange(stream_key("bounded"), count=1)
    assert newest[0][1]["reason"] == "failure 99999"


def test_bad_selections_are_one_line_and_exit_2(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = _config(tmp_path, clean_redis)
    for args in (("purge", "--older-than", "soon"), ("retry", "nonsense")):
        out = dead_letters(config, *args)
        assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr
    out = dead_letters(config, "show", "APPL_DB/1-0")
    assert out.returncode == 1 and "no dead letter" in out.stderr


async def test_a_task_the_crash_loop_guard_sets_aside_is_kept(
    clean_redis: EmbeddedRedis, db: DBConnector, tmp_path: Path,
) -> None:
    """A task that kills the daemon each start is set aside by the crash-loop guard, and kept as a
    dead letter with that reason."""
    config = write_config(tmp_path, clean_redis, {"orchs": [{
        "plugin": "orch_plugins:PoisonOrch", "options": {"record": str(tmp_path / "r.jsonl")},
        "tables": [{"db": "APPL_DB", "table": "POISONED"}],
    }]})
    first = DaemonProcess(config, tmp_path / "log0")
    first.wait_ready()
    await ProducerStateTable(db, "POISONED").set("poison1", [("f", "v")])
    assert first.wait(30) == 1
    for start in range(1, 8):  # crashing again on the task taken over, until the guard sets it aside
        daemon = DaemonProcess(config, tmp_path / f"log{start}")
        if not wait_until(lambda d=daemon: bool(d.events("ready")) or d.proc.poll() is not None, 30):
            daemon.kill()
            raise AssertionError("the daemon neither got ready nor exited")
        if daemon.proc.poll() is None:
            break
        daemon.wait()
    try:
        assert wait_until(lambda: len(listed(config)) == 1, 20)
        [letter] = listed(config)
        assert (letter["table"], letter["key"], letter["op"]) == ("POISONED", "poison1", "SET")
        assert "crash" in letter["reason"], letter["reason"]
    finally:
        assert daemon.stop() == 0
