"""The minimal Redis ACL of docs/security.md's "Redis ACL" section, black-box: `swssd run` as that user
(state table with reconcile, queue, CONFIG_DB subscriber, notification channel; stopped and
started again) and `swssd dump`/`swssd watch` as the reader get every change and no refusal; Redis's
ACL LOG shows at most the optional commands the page leaves out (INFO, CONFIG GET). Without
`+subscribe` the daemon says so in one line, not a traceback every 50 ms."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from daemon_harness import DaemonProcess, read_records, to_toml, wait_until
from swssd import DBConnector, NotificationProducer, ProducerStateTable, ProducerTable
from swssd.redis.embedded_redis import EmbeddedRedis, free_port

PAGE = Path(__file__).resolve().parent.parent / "docs" / "security.md"
PASSWORD = "acl-test-pw"
#: What the page says a user may lack: the daemon and the tools go on without them.
OPTIONAL = {"info", "config|get"}


def readme_rules() -> dict[str, list[str]]:
    """user -> ACL SETUSER arguments, from the page's "Redis ACL" section."""
    text = PAGE.read_text()
    section = text[text.index("\n## Redis ACL\n"):]
    end = section.find("\n## ", 1)  # the next section, if any
    section = section if end < 0 else section[:end]
    rules = {}
    for line in section.splitlines():
        if line.startswith("ACL SETUSER "):
            _, _, user, *args = line.split()
            rules[user] = [f">{PASSWORD}" if a == ">PASSWORD" else a for a in args]
    return rules


@pytest.fixture
def server() -> Iterator[EmbeddedRedis]:
    """A private redis-server: the ACL users must not outlive the test."""
    with EmbeddedRedis() as srv:
        admin = redis.Redis(port=srv.port, decode_responses=True)
        admin.config_set("notify-keyspace-events", "AKE")
        for user, args in readme_rules().items():
            admin.execute_command("ACL", "SETUSER", user, "reset", *args)
        admin.execute_command("ACL", "LOG", "RESET")
        yield srv


def acl_refusals(srv: EmbeddedRedis, user: str) -> set[str]:
    """The commands (and keys, channels) Redis refused `user`, from ACL LOG."""
    admin = redis.Redis(port=srv.port, decode_responses=True)
    found = set()
    for entry in admin.execute_command("ACL", "LOG", "1000"):
        e = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2]))
        if e["username"] == user:
            found.add(e["object"] if e["reason"] == "command" else f"{e['reason']}:{e['object']}")
    return found


def daemon_config(tmp_path: Path, srv: EmbeddedRedis, user: str, records: Path) -> Path:
    doc: dict[str, Any] = {
        "redis": {"database_config": str(srv.write_database_config(tmp_path / "database_config.json")),
                  "username": user, "password": PASSWORD},
        "logging": {"format": "json", "level": "info"},
        "metrics": {"enabled": True, "address": "127.0.0.1", "port": free_port()},
        "orchs": [{
            "plugin": "orch_plugins:RecordingOrch", "options": {"record": str(records)},
            "tables": [{"db": "APPL_DB", "table": "ACL_S", "reconcile": True},
                       {"db": "APPL_DB", "table": "ACL_Q", "kind": "queue"},
                       {"db": "CONFIG_DB", "table": "ACL_C"},
                       {"db": "APPL_DB", "table": "ACL_N", "kind": "notification"}],
        }],
    }
    path = tmp_path / "swssd.toml"
    path.write_text(to_toml(doc))
    path.chmod(0o600)
    return path


def refusals_in(text: str) -> list[str]:
    return [line for line in text.splitlines() if re.search(r"NOPERM|no permissions", line)]


async def test_daemon_runs_as_the_readme_acl_user(server: EmbeddedRedis, tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    admin = redis.Redis(port=server.port, decode_responses=True)
    admin.hset("ACL_S:before", "f", "0")  # for reconcile
    # A staging value that is not a hash: set aside on the dead-letter list by the pop script.
    admin.sadd("ACL_S_KEY_SET", "bad")
    admin.set("_ACL_S:bad", "not a hash")
    config = daemon_config(tmp_path, server, "swssd", records)
    appl = await DBConnector.from_url(server.url, db_id=0, separator=":", name="APPL_DB")
    cfg = await DBConnector.from_url(server.url, db_id=4, separator="|", name="CONFIG_DB")
    daemon = DaemonProcess(config, tmp_path / "log")
    try:
        daemon.wait_ready()
        state, queue = ProducerStateTable(appl, "ACL_S"), ProducerTable(appl, "ACL_Q")
        await state.set("k1", [("a", "1")])
        await state.delete("before")
        await queue.set("q1", [("a", "1")])
        await queue.delete("q0")
        await cfg.redis.hset("ACL_C|c1", "a", "1")
        await NotificationProducer(appl, "ACL_N").send("op", "data", [("a", "1")])
        expected = [
            ["ACL_S", "before", "SET", [["f", "0"]]], ["ACL_S", "k1", "SET", [["a", "1"]]],
            ["ACL_S", "before", "DEL", []], ["ACL_Q", "q1", "SET", [["a", "1"]]], ["ACL_Q", "q0", "DEL", []],
            ["ACL_C", "c1", "SET", [["a", "1"]]], ["ACL_N", "data", "op", [["a", "1"]]],
        ]

        def handled() -> list[list[Any]]:
            return [[t, k, o, [list(fv) for fv in f]] for t, k, o, f in read_records(records)]

        assert wait_until(lambda: all(e in handled() for e in expected), 20), handled()
        assert daemon.stop() == 0
        # Started again: the lease is taken back and the in-flight records read.
        await state.set("k2", [("b", "2")])
        await queue.set("q3", [("b", "2")])
        daemon = DaemonProcess(config, tmp_path / "log")
        daemon.wait_ready()
        assert wait_until(lambda: ["ACL_S", "k2", "SET", [["b", "2"]]] in handled()
                          and ["ACL_Q", "q3", "SET", [["b", "2"]]] in handled(), 20), handled()
    finally:
        assert daemon.stop() == 0
        await appl.close()
        await cfg.close()
    log = (tmp_path / "log").read_text()
    assert admin.llen("_SWSSD_DEAD:swssd:ACL_S") == 1  # the bad staging value, set aside
    assert refusals_in(log) == []
    assert acl_refusals(server, "swssd") <= OPTIONAL


def test_read_only_tools_run_as_the_readme_reader(server: EmbeddedRedis, tmp_path: Path) -> None:
    admin = redis.Redis(port=server.port, decode_responses=True)
    admin.hset("PORT_TABLE:Ethernet0", mapping={"speed": "100000"})
    admin.select(4)
    admin.hset("PORT|Ethernet0", "mtu", "9100")
    url = f"redis://swssd-reader:{PASSWORD}@127.0.0.1:{server.port}"
    env = {k: v for k, v in os.environ.items() if k != "SWSSD_DB_CONFIG"}
    dump = subprocess.run([sys.executable, "-m", "swssd.cli", "dump", "--url", url, "--db", "APPL_DB"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert dump.returncode == 0, dump.stderr
    assert json.loads(dump.stdout) == {"PORT_TABLE": {"Ethernet0": {"speed": "100000"}}}
    # --count 1: the existing entry, then one change (the existing entries are not counted)
    watch = subprocess.Popen(
        [sys.executable, "-m", "swssd.cli", "watch", "--url", url, "--db", "CONFIG_DB", "--table", "PORT",
         "--count", "1", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert watch.stdout is not None
        assert json.loads(watch.stdout.readline())["fvs"] == {"mtu": "9100"}
        admin.hset("PORT|Ethernet0", "mtu", "1500")
        out, err = watch.communicate(timeout=60)
    finally:
        if watch.poll() is None:
            watch.kill()
    assert watch.returncode == 0, err
    assert json.loads(out)["fvs"] == {"mtu": "1500"}
    assert refusals_in(dump.stderr + err) == []
    assert acl_refusals(server, "swssd-reader") <= OPTIONAL


def test_refused_subscribe_is_one_line_not_a_traceback_loop(server: EmbeddedRedis, tmp_path: Path) -> None:
    admin = redis.Redis(port=server.port, decode_responses=True)
    admin.execute_command("ACL", "SETUSER", "swssd", "-subscribe", "-psubscribe")
    config = daemon_config(tmp_path, server, "swssd", tmp_path / "records.jsonl")
    daemon = DaemonProcess(config, tmp_path / "log")
    try:
        assert wait_until(lambda: daemon.events(REFUSED), 20), (tmp_path / "log").read_text()[-2000:]
        time.sleep(3)  # long enough for dozens of retries at the old 50 ms
        assert daemon.proc.poll() is None, "not running any more:\n" + (tmp_path / "log").read_text()[-3000:]
    finally:
        daemon.stop()
    log = (tmp_path / "log").read_text()
    (line,) = daemon.events(REFUSED)
    assert "'subscribe'" in line["error"] or "'psubscribe'" in line["error"]
    assert "Traceback" not in log and "pubsub reader failed" not in log
    assert len(log.splitlines()) < 20, log


REFUSED = ("Redis refused the pub/sub subscription: this user needs +subscribe +psubscribe and the "
           "channels (&*), see docs/security.md 'Redis ACL'; retrying")


def test_a_command_refused_at_connect_is_one_clear_line(server: EmbeddedRedis, tmp_path: Path) -> None:
    admin = redis.Redis(port=server.port, decode_responses=True)
    admin.execute_command("ACL", "SETUSER", "swssd", "-select")
    config = daemon_config(tmp_path, server, "swssd", tmp_path / "records.jsonl")
    daemon = DaemonProcess(config, tmp_path / "log")
    event = "Redis refused a command to this user: give it the ACL rule docs/security.md 'Redis ACL' lists (retrying)"
    try:
        assert wait_until(lambda: daemon.events(event), 20), (tmp_path / "log").read_text()[-2000:]
        time.sleep(2)
        assert daemon.proc.poll() is None, "still running, retrying"
    finally:
        daemon.stop()
    (line,) = daemon.events(event)
    assert "'select'" in line["error"]
    assert "Traceback" not in (tmp_path / "log").read_text()
