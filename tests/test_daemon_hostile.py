"""Issue 25's must-hold, black-box: bytes that are not UTF-8, NUL, ESC, newlines and U+2028 in the
keys, fields and values of every table kind and in notification payloads, with each log sink
(stderr, a file, the journal) in each format (console, json): 0 crashes, 0 lost.

One daemon run per sink covers every case: valid entries carrying those bytes reach the handler
whole; a handler failing with them in its error text is logged (twice, then dead-lettered)
without its log line failing; the capture (JSON Lines and swss.rec) takes them; the log stays
valid UTF-8, one record a line, no control character in the console form. Last, a notification
whose handler kills the worker (a crash, not a failure): the crash line is written and the
daemon exits 1, never up with a dead worker; the next start serves and stops with 0.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import redis

from daemon_harness import DaemonProcess, read_records, wait_until, write_config
from swssd import DBConnector, NotificationProducer, ProducerStateTable, ProducerTable
from swssd.redis.embedded_redis import EmbeddedRedis

#: A byte that is not UTF-8 (0xff, as Python holds it: a surrogate escape), NUL, ESC with a
#: terminal sequence, a newline that would start a forged line, and the Unicode line separator.
H = "\udcff\x00\x1b[2J\n2026-01-01T00:00:00Z [info] forged\u2028"
#: What a notification may carry (C++ reads its payload up to a NUL, and refuses invalid UTF-8).
N = "\x1b[2J\n2026-01-01T00:00:00Z [info] forged\u2028"
#: Control characters that must not reach a console log (line ends aside).
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
Row = tuple[str, str, str, tuple[tuple[str, str], ...]]
#: A journal line's priority prefix.
PRIORITY = re.compile(r"^<[0-7]>")


def raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


@pytest.mark.parametrize("fmt", ["console", "json"])
@pytest.mark.parametrize("sink", ["stderr", "file", "journal"])
async def test_hostile_bytes_everywhere_cost_nothing(
    clean_redis: EmbeddedRedis, tmp_path: Path, fmt: str, sink: str
) -> None:
    r = redis.Redis(port=clean_redis.port)
    r.config_set("notify-keyspace-events", "AKE")
    records = tmp_path / "records.jsonl"
    stderr = tmp_path / "stderr"
    log = tmp_path / "swssd.log" if sink == "file" else stderr
    capture = tmp_path / "capture"
    config = write_config(tmp_path, clean_redis, {
        "logging": {"format": fmt, "level": "info", **({"file": str(log)} if sink == "file" else {})},
        "retry": {"max_attempts": 2, "backoff_initial": 0.05, "backoff_max": 0.05},
        "capture": {"enabled": True, "directory": str(capture), "rec": True},
        "orchs": [{"plugin": "orch_plugins:HostileOrch", "options": {"record": str(records)}, "tables": [
            {"db": "APPL_DB", "table": "HS"}, {"db": "APPL_DB", "table": "HQ", "kind": "queue"},
            {"db": "CONFIG_DB", "table": "HSUB"}, {"db": "APPL_DB", "table": "HNTF", "kind": "notification"}]}],
    })
    env = {}
    if sink == "journal":  # stderr is the journal's stream: systemd names it in $JOURNAL_STREAM
        stderr.touch()
        st = os.stat(stderr)
        env["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
    appl = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    daemon = DaemonProcess(config, stderr, env=env)
    try:
        assert wait_until(lambda: log.exists() and "ready" in log.read_text(errors="replace"), 30), (
            stderr.read_text(errors="replace")[-3000:])
        fvs = [(f"f{H}", f"v{H}"), ("plain", H)]
        await ProducerStateTable(appl, "HS").set(f"k{H}", fvs)
        await ProducerStateTable(appl, "HS").set(f"fail{H}", fvs)
        await ProducerTable(appl, "HQ").set(f"k{H}", fvs)
        await ProducerTable(appl, "HQ").set(f"fail{H}", fvs)
        config_db = redis.Redis(port=clean_redis.port, db=4)
        for key in (f"k{H}", f"fail{H}"):
            config_db.hset(raw(f"HSUB|{key}"), mapping={raw(f): raw(v) for f, v in fvs})
        notify = NotificationProducer(appl, "HNTF")
        await notify.send(f"op{N}", f"k{N}", [(f"f{N}", f"v{N}")])
        await notify.send("op", f"fail{N}", [(f"f{N}", f"v{N}")])
        r.publish("HNTF", b'["op","cut","f","v"]\x00' + raw(H))  # read up to the NUL, as C++ does
        r.publish("HNTF", raw(f'["op","bad{H}"]'))  # not UTF-8 (and NUL inside): refused as C++ does
        for table in ("HS", "HQ"):
            await (ProducerStateTable if table == "HS" else ProducerTable)(appl, table).set("good", [("f", "v")])
        config_db.hset("HSUB|good", "f", "v")
        await notify.send("op", "good", [("f", "v")])

        def row(table: str, key: str, op: str, fvs: list[tuple[str, str]]) -> Row:
            return table, key, op, tuple(sorted(map(tuple, fvs)))  # type: ignore[arg-type]

        wanted = {
            row("HS", f"k{H}", "SET", fvs), row("HQ", f"k{H}", "SET", fvs), row("HSUB", f"k{H}", "SET", fvs),
            row("HNTF", f"k{N}", f"op{N}", [(f"f{N}", f"v{N}")]), row("HNTF", "cut", "op", [("f", "v")]),
            *(row(t, "good", "SET", [("f", "v")]) for t in ("HS", "HQ", "HSUB")),
            row("HNTF", "good", "op", [("f", "v")]),
        }

        def handled() -> set[Row]:
            return {row(*record) for record in read_records(records)}

        assert wait_until(lambda: wanted <= handled() and len(events(log, fmt, "task dead-lettered")) >= 4, 30), (
            wanted - handled(), log.read_text(errors="replace")[-3000:])
        assert daemon.proc.poll() is None, "the daemon stopped"
        dead = events(log, fmt, "task dead-lettered")
        assert sorted(e["table"] for e in dead) == ["HNTF", "HQ", "HS", "HSUB"]
        assert len(events(log, fmt, "handler failed; will retry")) == 4
        assert len(events(log, fmt, "malformed notification dropped")) == 1
        assert all("cannot apply fail" in str(e.get("exception", e.get("reason"))) for e in dead)

        # The last one kills the worker: the crash is logged and the daemon exits 1.
        await notify.send("op", f"poison{N}", [(f"f{N}", f"v{N}")])
        assert daemon.wait(30) == 1
        assert events(log, fmt, "worker crashed; stopping")
    finally:
        daemon.kill()
        await appl.close()
    check_log(log, fmt, journal=sink == "journal")
    lines = [json.loads(line) for line in (capture / "swssd.capture.jsonl").read_bytes().split(b"\n")[:-1]]
    assert {(c["table"], c["key"]) for c in lines} >= {("HS", f"k{H}"), ("HQ", f"k{H}"), ("HSUB", f"k{H}")}
    rec = (capture / "swss.rec").read_bytes()  # the bytes as they are, a newline written \n (one line a task)
    assert b"|HS:" + raw(f"k{H}".replace("\n", "\\n")) + b"|SET|" in rec, rec[:2000]

    # The next start reads the subscriber table again (its bad entry fails again): it serves and
    # stops cleanly.
    again = DaemonProcess(config, stderr, env=env)
    try:
        assert wait_until(lambda: len(events(log, fmt, "ready")) == 2, 30), log.read_text(errors="replace")[-3000:]
    finally:
        assert again.stop() == 0
    check_log(log, fmt, journal=sink == "journal")


def log_lines(log: Path, journal: bool) -> list[str]:
    """The log's lines, decoded strictly (it must stay UTF-8), the journal's prefixes taken off."""
    lines = log.read_bytes().decode("utf-8").splitlines()
    if journal:
        assert all(PRIORITY.match(line) for line in lines), [line for line in lines if not PRIORITY.match(line)]
        lines = [PRIORITY.sub("", line) for line in lines]
    return lines


def events(log: Path, fmt: str, name: str) -> list[dict[str, Any]]:
    """The log records of one event: JSON objects, or for the console the table and the line."""
    if not log.exists():
        return []
    text = log.read_text(errors="replace")
    lines = [PRIORITY.sub("", line) for line in text.splitlines()]
    if fmt == "json":
        found = []
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("event") == name:
                found.append(record)
        return found
    out = []
    for line in lines:
        if f"] {name} " in line or line.endswith(f"] {name}"):
            table = re.search(r"\btable=(\S+)", line)
            out.append({"event": name, "table": table.group(1) if table else None, "reason": line})
    if name == "task dead-lettered":  # the console's reason is the rest of the record: its traceback
        for record in out:
            record["exception"] = text
    return out


def check_log(log: Path, fmt: str, journal: bool) -> None:
    """Valid UTF-8, one record a line (a JSON object each, or for the console no control
    character and nothing that passes for a forged record)."""
    lines = log_lines(log, journal)
    assert lines
    if fmt == "json":
        for line in lines:
            json.loads(line)
    else:
        text = "\n".join(lines)
        assert not CONTROL.search(text), repr(CONTROL.search(text))
        assert not any(line.startswith("2026-01-01T00:00:00Z") for line in lines)
