"""Plugin timers, black-box: `swssd run` as a subprocess against a real redis-server, its log,
/health and metrics, and SIGTERM.

One daemon run: while a producer keeps its table busy, `tick` (its interval overridden by the
config) runs at its interval, `slow` (calls longer than its interval) never overlaps itself and
skips ticks, `flaky` raises on every other call and goes on (counted, logged with the
traceback); then `stuck` hangs, swallowing handler_timeout's cancellation, and /health names it
past its stall_after until it is released; at SIGTERM every timer ends before the plugin's stop().
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import time
from pathlib import Path

from daemon_harness import DaemonProcess, wait_until, write_config
from swssd import DBConnector, ProducerStateTable
from swssd.redis.embedded_redis import EmbeddedRedis, free_port
from test_daemon_ops import NotifySocket, scrape, swssd
from test_daemon_stall import gauge, health, pings

Note = tuple[str, str, float]


def read_notes(path: Path) -> list[Note]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [(n[0], n[1], n[2]) for n in (json.loads(line) for line in lines if line.endswith("]"))]


def calls(notes: list[Note], name: str) -> list[tuple[float, float | None]]:
    """(start, end or None) of each call of timer `name`, in order; fails on an overlap."""
    out: list[tuple[float, float | None]] = []
    for timer, what, at in notes:
        if timer != name:
            continue
        if what == "start":
            assert not out or out[-1][1] is not None, f"{name}: a call started while one ran"
            out.append((at, None))
        else:
            assert out and out[-1][1] is None, f"{name}: {what} without a start"
            out[-1] = (out[-1][0], at)
    return out


def timer_metric(text: str, family: str, name: str) -> float | None:
    return gauge(text, f'{family}{{orch="timers",timer="{name}"}}')


async def test_timers_run_at_their_interval_survive_errors_report_stalls_and_stop_before_stop(
    clean_redis: EmbeddedRedis, db: DBConnector, tmp_path: Path
) -> None:
    notes_path, hang, release = tmp_path / "notes.jsonl", tmp_path / "hang", tmp_path / "release"
    port = free_port()
    config = write_config(tmp_path, clean_redis, {
        "metrics": {"enabled": True, "address": "127.0.0.1", "port": port},
        "daemon": {"stall_after": 300.0},
        "orchs": [{
            "plugin": "timer_plugins:TimerOrch", "name": "timers",
            "tables": [{"db": "APPL_DB", "table": "TM_LOAD"}],
            "options": {"record": str(notes_path), "hang": str(hang), "release": str(release)},
            "retry": {"handler_timeout": 1.0},
            "timers": {"tick": {"interval": 0.2}, "stuck": {"stall_after": 2.0}},
        }],
    })
    notify = NotifySocket(tmp_path / "notify.sock")
    daemon = DaemonProcess(config, tmp_path / "log", env={"NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"})

    def answer() -> int:
        notify.drain()  # an unread notify socket would block the daemon's sendto, as systemd's never does
        return health(port)[0]

    try:
        daemon.wait_ready()
        # Load: a producer keeps the daemon's table busy for about 3 s.
        producer = ProducerStateTable(db, "TM_LOAD")
        await producer.set("first", [("v", "0")])  # loads the script once, before the calls at once
        loaded_from = time.time()
        written = 0
        while time.time() - loaded_from < 3.0:
            await asyncio.gather(*(producer.set(f"k{written + i}", [("v", str(written))]) for i in range(200)))
            written += 200
        loaded_until = time.time()
        await asyncio.sleep(0.3)
        notify.drain()

        notes = read_notes(notes_path)
        tick = [start for start, _ in calls(notes, "tick") if loaded_from <= start <= loaded_until]
        gaps = [b - a for a, b in itertools.pairwise(tick)]
        assert len(tick) >= 10, tick  # 0.2 s over 3 s of load: about 15 calls, not one a second
        assert max(gaps) < 0.9, gaps  # late under load, but never a missed second
        assert 0.15 < sum(gaps) / len(gaps) < 0.35, gaps
        slow = calls(notes, "slow")
        assert len(slow) >= 5 and all(end is None or end >= start for start, end in slow)  # calls() checks overlap
        flaky = calls(notes, "flaky")
        raised = sum(what == "raise" for timer, what, _ in notes if timer == "flaky")
        assert raised >= 5 and len(flaky) >= 2 * raised - 1  # it goes on after each exception
        text = scrape(port)
        raised_after = sum(what == "raise" for timer, what, _ in read_notes(notes_path) if timer == "flaky")
        assert raised <= (timer_metric(text, "swssd_timer_failed_total", "flaky") or 0) <= raised_after
        assert (timer_metric(text, "swssd_timer_skipped_total", "slow") or 0) >= 5
        assert (timer_metric(text, "swssd_timer_runs_total", "tick") or 0) >= 10
        failed_lines = daemon.events("timer failed")
        assert failed_lines and failed_lines[0]["timer"] == "flaky"
        trace = failed_lines[0]["exception"]
        assert "Traceback" in trace and "ValueError: flaky call 1" in trace
        assert health(port)[0] == 200

        # A call that swallows handler_timeout's cancellation: a stall once it has gone on 2 s.
        hang.touch()
        assert wait_until(lambda: answer() == 503, 10.0), health(port)
        body = health(port)[1]
        assert "timer stalled" in body and "timers stuck" in body, body
        text = scrape(port)
        assert timer_metric(text, "swssd_timer_stalled", "stuck") == 1.0
        assert gauge(text, "swssd_ready") == 0.0
        assert timer_metric(text, "swssd_timer_stalled", "tick") == 0.0
        assert daemon.events("timer stalled: one call has gone on past stall_after")
        status = swssd("status", "--metrics-url", f"127.0.0.1:{port}")
        assert status.returncode == 1 and "timer stalled" in status.stdout + status.stderr, status
        assert "timers stuck" in status.stdout + status.stderr, status
        ticks_while_stuck = len(calls(read_notes(notes_path), "tick"))
        since = len(notify.drain())
        await asyncio.sleep(1.0)
        assert len(calls(read_notes(notes_path), "tick")) > ticks_while_stuck  # the other timers go on
        assert pings(notify, since) == 0  # no systemd watchdog ping while stalled
        release.touch()
        assert wait_until(lambda: answer() == 200, 10.0), health(port)
        since = len(notify.drain())
        assert wait_until(lambda: pings(notify, since) >= 2, 5.0)  # pinged again
        assert timer_metric(scrape(port), "swssd_timer_timed_out_total", "stuck") == 1.0
        assert daemon.events("timer progressing again")

        # SIGTERM: no timer call starts after it, the running ones end, then stop().
        hang.unlink()
        release.unlink()
        await asyncio.sleep(0.3)
        daemon.signal(signal.SIGTERM)
        assert daemon.wait(30) == 0
        notes = read_notes(notes_path)
        assert notes[-1][:2] == ("", "stop")
        for name in ("tick", "flaky", "slow", "stuck"):
            assert all(end is not None for _, end in calls(notes, name)), name  # every call ended before stop()
    finally:
        daemon.kill()
