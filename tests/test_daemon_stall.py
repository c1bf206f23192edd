"""A stalled table, black-box: `swssd run` against a private redis-server, its /health, metrics,
`swssd status` and systemd watchdog pings.

One daemon run, in two acts. First what must not count as a stall, with stall_after = 1 s: a
handler that takes 0.3 s a task and keeps finishing them, a task waiting on Retry for 3 s between
runs, a failing task waiting 2 s for its backoff. Then a handler that cannot go on (held until
the test writes a file; handler_timeout far away): within a few seconds of its table's
stall_after the daemon is unhealthy everywhere, naming the table, while its other table is still
handled; released, it is healthy again by itself and nothing is lost.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

from daemon_harness import DaemonProcess, health, read_records, wait_until, write_config
from swssd import DBConnector, ProducerStateTable, Table
from swssd.redis.embedded_redis import EmbeddedRedis, free_port
from test_daemon_ops import NotifySocket, scrape, swssd


def gauge(text: str, name: str) -> float | None:
    """The value of one sample line (`name` with its labels, as exposed)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return None


def stalled_gauge(port: int, table: str) -> float | None:
    return gauge(scrape(port), f'swssd_table_stalled{{db="APPL_DB",table="{table}"}}')


def pings(notify: NotifySocket, since: int) -> int:
    """WATCHDOG=1 datagrams among the messages from index `since` on."""
    return sum(m == "WATCHDOG=1" for m in notify.drain()[since:])


async def test_stall_is_seen_and_slow_or_waiting_tables_are_not(
    clean_redis: EmbeddedRedis, db: DBConnector, tmp_path: Path
) -> None:
    records = tmp_path / "records.jsonl"
    release = tmp_path / "release"
    port = free_port()
    config = write_config(tmp_path, clean_redis, {
        "metrics": {"enabled": True, "address": "127.0.0.1", "port": port},
        "daemon": {"stall_after": 1.0},
        "orchs": [
            {"plugin": "orch_plugins:RecordingOrch", "name": "slow",
             "tables": [{"db": "APPL_DB", "table": "ST_SLOW"}],
             "options": {"record": str(records), "delay": 0.3}},
            {"plugin": "orch_plugins:TroubleOrch", "name": "trouble",
             "tables": [{"db": "APPL_DB", "table": "ST_WAIT"}],
             "options": {"record": str(records)},
             "retry": {"retry_interval": 3.0, "backoff_initial": 2.0, "backoff_max": 2.0, "max_attempts": 3}},
            {"plugin": "orch_plugins:BlockingOrch", "name": "blocking",
             "tables": [{"db": "APPL_DB", "table": "ST_BLOCK", "stall_after": 2.0},
                        {"db": "APPL_DB", "table": "ST_OTHER", "stall_after": 2.0}],
             "options": {"record": str(records), "release": str(release)},
             "retry": {"handler_timeout": 600.0}},
        ],
    })
    notify = NotifySocket(tmp_path / "notify.sock")
    daemon = DaemonProcess(config, tmp_path / "log", env={"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"})

    def answer() -> tuple[int, str]:
        notify.drain()  # an unread notify socket would block the daemon's sendto, as systemd's never does
        return health(port)

    try:
        daemon.wait_ready()
        assert wait_until(lambda: answer()[0] == 200, 30), daemon.log_path.read_text()[-3000:]

        # Act 1: slow but steady, Retry waiting 3 s, a backoff of 2 s: each longer than stall_after.
        await ProducerStateTable(db, "ST_SLOW").set_many([(f"s{i}", [("f", "v")]) for i in range(20)])
        await ProducerStateTable(db, "ST_WAIT").set_many([("wait1", [("f", "v")]), ("fail1", [("f", "v")])])
        answers = []
        deadline = time.monotonic() + 6.5
        while time.monotonic() < deadline:
            answers.append(answer())
            time.sleep(0.2)
        assert all(code == 200 for code, _ in answers), [a for a in answers if a[0] != 200]
        text = scrape(port)
        assert gauge(text, "swssd_ready") == 1.0
        assert gauge(text, 'swssd_table_stalled{db="APPL_DB",table="ST_WAIT"}') == 0.0
        assert gauge(text, 'swssd_retried_total{db="APPL_DB",table="ST_WAIT"}') >= 2  # it did wait on Retry
        assert gauge(text, 'swssd_failed_total{db="APPL_DB",table="ST_WAIT"}') >= 2  # and on its backoff
        assert not daemon.events("table stalled: work pending and no handler call ended")
        state = await DBConnector.connect("STATE_DB", str(tmp_path / "database_config.json"))
        await Table(state, "GATE").set("wait1", [("open", "1")])
        await state.close()

        # Act 2: one handler held; its table stalls after its 2 s, the other table goes on.
        await ProducerStateTable(db, "ST_BLOCK").set_many([("block1", [("f", "v")]), ("after1", [("f", "v")])])
        blocked_at = time.monotonic()
        assert wait_until(lambda: answer()[0] == 503, 10), daemon.log_path.read_text()[-3000:]
        assert time.monotonic() - blocked_at >= 1.5  # not before its stall_after
        code, reason = answer()
        assert code == 503 and "table stalled" in reason and "APPL_DB ST_BLOCK" in reason, reason
        assert "ST_OTHER" not in reason and "ST_SLOW" not in reason
        assert stalled_gauge(port, "ST_BLOCK") == 1.0 and stalled_gauge(port, "ST_OTHER") == 0.0
        assert gauge(scrape(port), "swssd_ready") == 0.0
        status = swssd("status", "--metrics-url", f"127.0.0.1:{port}")
        assert status.returncode == 1, status.stdout + status.stderr
        assert "table stalled" in status.stdout and "APPL_DB ST_BLOCK" in status.stdout, status.stdout
        line = daemon.wait_for_log("table stalled: work pending and no handler call ended")[0]
        assert line["table"] == "ST_BLOCK" and line["level"] == "error", line
        since = len(notify.drain())
        for _ in range(6):  # 1.5 s, almost four watchdog intervals: systemd would restart it now
            time.sleep(0.25)
            notify.drain()
        assert pings(notify, since) == 0
        assert any(m.startswith("STATUS=stalled: APPL_DB ST_BLOCK") for m in notify.messages), notify.messages
        await ProducerStateTable(db, "ST_OTHER").set("other1", [("f", "v")])
        assert wait_until(lambda: ("ST_OTHER", "other1") in {(r[0], r[1]) for r in read_records(records)}, 10)
        assert answer()[0] == 503 and daemon.proc.poll() is None

        # Released: healthy again by itself, and what waited behind it is handled.
        release.write_text("go")
        assert wait_until(lambda: answer()[0] == 200, 10), answer()
        assert stalled_gauge(port, "ST_BLOCK") == 0.0 and gauge(scrape(port), "swssd_ready") == 1.0
        since = len(notify.drain())
        assert wait_until(lambda: pings(notify, since) >= 2, 5)
        daemon.wait_for_log("table progressing again")
        handled = {(r[0], r[1]) for r in read_records(records)}
        assert {("ST_BLOCK", "block1"), ("ST_BLOCK", "after1"), ("ST_WAIT", "wait1")} <= handled
        assert {("ST_SLOW", f"s{i}") for i in range(20)} <= handled
        status = swssd("status", "--metrics-url", f"127.0.0.1:{port}")
        assert status.returncode == 0 and "health: OK" in status.stdout, status.stdout
        assert daemon.stop() == 0
    finally:
        daemon.kill()


def test_a_task_that_stalls_every_start_is_set_aside_by_the_third_restart(
    clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """What systemd does with a stalled daemon: no watchdog ping, so SIGABRT. The next starts take
    the held task over from the in-flight record and stall again; the fourth start sets it aside
    (dead-lettered, named in one line) and serves, as for a task that crashes the daemon."""
    records = tmp_path / "records.jsonl"
    config = write_config(tmp_path, clean_redis, {"orchs": [{
        "plugin": "orch_plugins:BlockingOrch", "tables": [{"db": "APPL_DB", "table": "ST_HELD", "stall_after": 0.5}],
        "options": {"record": str(records), "release": str(tmp_path / "never")},
    }]})
    for start in (1, 2, 3):
        daemon = DaemonProcess(config, tmp_path / f"log{start}")
        try:
            daemon.wait_ready()
            if start == 1:
                async def produce() -> None:
                    db = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
                    await ProducerStateTable(db, "ST_HELD").set("block1", [("f", "v")])
                    await db.close()

                asyncio.run(produce())
            else:
                (taken,) = daemon.events("in-flight tasks taken over from the last run; they run first")
                assert taken["tasks"] == 1
            daemon.wait_for_log("table stalled: work pending and no handler call ended", timeout=15)
            daemon.signal(signal.SIGABRT)
            assert daemon.wait(30) != 0
        finally:
            daemon.kill()
    fourth = DaemonProcess(config, tmp_path / "log4")
    try:
        fourth.wait_ready()
        (aside,) = fourth.events("in-flight tasks set aside: in a handler when each of the last 3 runs ended "
                                 "abnormally (crashed, killed or stalled): it may be what ends the daemon")
        assert aside["keys"] == ["block1"] and aside["tasks"] == 1
        time.sleep(1.5)
        assert not fourth.events("table stalled: work pending and no handler call ended")
    finally:
        assert fourth.stop() == 0
    assert read_records(records) == []
