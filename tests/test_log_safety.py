"""Hostile keys in log lines: in the console format a newline or an escape sequence in a key cannot
forge a line or reach the terminal; in both formats a 1 MB key or a 100k-field entry is cut (and
the example plugins log no more than that). Each case runs in a process of its own, as the
daemon configures logging for the whole process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from swssd.ops.logsafe import MAX_CHARS, MAX_EVENT_CHARS, MAX_ITEMS, escape_controls, truncated, truncated_traceback
from swssd.redis.embedded_redis import EmbeddedRedis

#: Every line the console format starts: an ISO timestamp.
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z \[")
#: Control characters that must never reach the output (line ends aside).
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
EVIL = "a\n2026-01-01T00:00:00.000000Z [info     ] forged\r\x1b[2J\x1b]0;title\x07\x7f\x85\u2028z"

SCRIPT = textwrap.dedent("""
    import logging, sys
    import structlog
    from swssd.ops import logs as swssd_logging

    evil = sys.argv[2]
    swssd_logging.configure(sys.argv[1], "info")
    log = structlog.get_logger("t")
    log.info("entry", key=evil, value="v" * 1_000_000, fvs=[(f"f{i}", "v") for i in range(100_000)])
    log.info("message " + evil, **{"field" + evil: 1})
    log.warning("nested", entry={"k": evil, "long": "x" * 5000}, pair=(evil, 2))
    try:
        raise ValueError("bad key " + evil)
    except ValueError:
        log.exception("handler failed", key=evil)
    logging.getLogger("redis").warning("stdlib %s", evil)
""")


def run(tmp_path: Path, fmt: str) -> str:
    err = tmp_path / f"stderr-{fmt}"
    with open(err, "w") as f:
        subprocess.run([sys.executable, "-c", SCRIPT, fmt, EVIL], stderr=f, timeout=60, check=True)
    return err.read_text(encoding="utf-8")


def test_console_escapes_control_characters_so_no_line_is_forged(tmp_path: Path) -> None:
    text = run(tmp_path, "console")
    assert not CONTROL.search(text), repr(CONTROL.search(text))
    lines = text.splitlines()
    records = [line for line in lines if STAMP.match(line)]
    # Five records; every other line is an indented traceback line.
    assert len(records) == 5, lines
    assert all(STAMP.match(line) or line.startswith("  ") for line in lines), lines
    assert not any("forged" in line and line.startswith("2026-01-01") for line in lines)
    assert "\\n2026-01-01" in records[0] and "\\x1b[2J" in records[0]  # shown escaped
    assert "message a\\n2026" in records[1] and "fielda\\n2026" in records[1]
    assert "\\x1b" in records[4] and "[redis]" in records[4]  # standard-library records too


def test_console_and_json_cut_long_values_and_field_lists(tmp_path: Path) -> None:
    console = run(tmp_path, "console").splitlines()
    assert max(len(line) for line in console) < 5000
    assert f"…({1_000_000 - MAX_CHARS} more)" in console[0]
    assert f"…({100_000 - MAX_ITEMS} more)" in console[0]
    events = [json.loads(line) for line in run(tmp_path, "json").splitlines()]
    assert len(events) == 5
    entry = events[0]
    assert entry["value"] == "v" * MAX_CHARS + f"…({1_000_000 - MAX_CHARS} more)"
    assert len(entry["fvs"]) == MAX_ITEMS + 1 and entry["fvs"][-1] == f"…({100_000 - MAX_ITEMS} more)"
    assert entry["key"] == EVIL  # short: kept whole, json escapes it
    assert events[2]["entry"]["long"].endswith(f"…({5000 - MAX_CHARS} more)")
    assert "Traceback" in events[3]["exception"]


def test_helpers() -> None:
    assert escape_controls("a\nb\tc\x1b\x7f\x85\u2028") == "a\\nb\\tc\\x1b\\x7f\\x85\\u2028"
    assert escape_controls("é ü 漢字") == "é ü 漢字"  # printable text stays as it is
    assert truncated("abc", 2) == "ab…(1 more)"
    assert truncated(list(range(40))) == [*range(MAX_ITEMS), f"…({40 - MAX_ITEMS} more)"]
    assert truncated({"k": "x" * 300})["k"].endswith("…(44 more)")
    assert truncated(7) == 7
    cut = truncated_traceback("Traceback\n" + "line\n" * 1000 + "x" * 5000).split("\n")
    assert len(cut) == 201 and cut[100] == "…(802 more lines)" and cut[0] == "Traceback"
    assert cut[-1] == "x" * MAX_EVENT_CHARS + f"…({5000 - MAX_EVENT_CHARS} more)"


EXAMPLES = textwrap.dedent("""
    import asyncio, sys
    from swssd.ops import logs as swssd_logging
    from swssd import DBConnector, KeyOpFieldsValues
    from swssd.orch.examples.port_mirror import PortMirrorOrch
    from swssd.orch.examples.route import RouteOrch

    async def main() -> None:
        swssd_logging.configure(sys.argv[2], "info")
        state = await DBConnector.from_url(sys.argv[1], db_id=6, separator="|", name="STATE_DB")
        key = "K" * 1_000_000
        fvs = [(f"f{i}", "v") for i in range(100_000)]
        ports, routes = PortMirrorOrch(), RouteOrch()
        for orch in (ports, routes):
            orch.attach(type(orch).__name__, {}, {"STATE_DB": state})
            await orch.start()
        await ports.handle("PORT_TABLE", KeyOpFieldsValues(key, "SET", fvs))
        await ports.handle("PORT_TABLE", KeyOpFieldsValues(key, "DEL", []))
        await routes.handle("ROUTE_TABLE", KeyOpFieldsValues(key, "SET", [("nexthop", "n" * 100_000), *fvs]))
        await routes.handle("ROUTE_TABLE", KeyOpFieldsValues(key, "DEL", []))
        await state.redis.flushdb()
        await state.close()

    asyncio.run(main())
""")


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_example_plugins_log_hostile_entries_cut(clean_redis: EmbeddedRedis, tmp_path: Path, fmt: str) -> None:
    err = tmp_path / "stderr"
    with open(err, "w") as f:
        subprocess.run([sys.executable, "-c", EXAMPLES, clean_redis.url, fmt], stderr=f, timeout=120, check=True)
    lines = err.read_text().splitlines()
    assert len(lines) == 4, lines  # mirrored, removed, installed, removed
    assert all(len(line) < 5000 for line in lines), [len(line) for line in lines]
    assert all("more)" in line for line in lines)


async def test_daemon_logs_cut_while_the_capture_keeps_the_whole_task(
    clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """Failing handlers' tasks, one with a 300k-character key (newline and escape inside), one with
    50k fields: the console log stays short and clean, the capture has both tasks whole. (Two
    tasks: the set script sends the key once per field, as the C++ library does.)"""
    from daemon_harness import DaemonProcess, to_toml, wait_until
    from swssd import DBConnector, ProducerStateTable

    capture = tmp_path / "capture"
    doc = {
        "redis": {"database_config": str(clean_redis.write_database_config(tmp_path / "database_config.json"))},
        "logging": {"format": "console", "level": "info"},
        "capture": {"enabled": True, "directory": str(capture)},
        "retry": {"max_attempts": 1},
        "orchs": [{"plugin": "orch_plugins:TroubleOrch", "options": {"record": str(tmp_path / "records")},
                   "tables": [{"db": "APPL_DB", "table": "HOSTILE"}]}],
    }
    config = tmp_path / "swssd.toml"
    config.write_text(to_toml(doc))
    tasks = {"fail" + EVIL + "k" * 300_000: [("f", "v" + EVIL)],
             "fail-wide": [(f"f{i}", "v" + EVIL) for i in range(50_000)]}
    daemon = DaemonProcess(config, tmp_path / "log")
    appl = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    jsonl = capture / "swssd.capture.jsonl"

    def dead_lettered() -> list[dict[str, object]]:
        if not jsonl.exists():
            return []
        # JSON Lines end at "\n" only (\u2028 is no line end); the last line may be half written,
        # even cut inside a character: split the bytes, and decode only the whole lines.
        lines = [line.decode("utf-8") for line in jsonl.read_bytes().split(b"\n")[:-1]]
        return [r for r in map(json.loads, lines) if r.get("dead_letter")]

    try:
        assert wait_until(lambda: "ready" in daemon.log_path.read_text(), 30)
        for key, fvs in tasks.items():
            await ProducerStateTable(appl, "HOSTILE").set(key, fvs)
        assert wait_until(lambda: len(dead_lettered()) == 2, 30)
    finally:
        assert daemon.stop() == 0
        await appl.close()
    captured = {str(r["key"]): sorted(map(tuple, r["fvs"])) for r in dead_lettered()}  # type: ignore[call-overload]
    assert captured == {key: sorted(fvs) for key, fvs in tasks.items()}
    log = daemon.log_path.read_text(encoding="utf-8")
    assert log.count("task dead-lettered") == 2  # both failures were logged
    assert not CONTROL.search(log)
    assert max(len(line) for line in log.splitlines()) < 5000


def test_a_key_that_is_not_utf8_cannot_stop_a_daemon_logging_to_a_file(
    clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """A key with the byte 0xff (Python's surrogate escape) logged to a file in the console
    format: the log line is written with the byte escaped, and the daemon goes on."""
    import asyncio

    from daemon_harness import DaemonProcess, wait_until, write_config
    from swssd import DBConnector, ProducerStateTable

    log_file = tmp_path / "swssd.log"
    config = write_config(tmp_path, clean_redis, {
        "logging": {"format": "console", "level": "info", "file": str(log_file)},
        "orchs": [{"plugin": "swssd.orch.examples.port_mirror:PortMirrorOrch",
                   "options": {"state_table": "MIRRORED"}, "tables": [{"db": "APPL_DB", "table": "PORTS_IN"}]}],
    })
    daemon = DaemonProcess(config, tmp_path / "stderr")
    try:
        assert wait_until(lambda: log_file.exists() and " ready " in log_file.read_text(errors="replace"), 30)

        async def produce(key: str) -> None:
            db = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
            await ProducerStateTable(db, "PORTS_IN").set(key, [("admin_status", "up")])
            await db.close()

        asyncio.run(produce("Ethernet\udcff"))
        asyncio.run(produce("Ethernet4"))
        assert wait_until(lambda: "Ethernet4" in log_file.read_text(errors="replace"), 30), log_file.read_text()
        text = log_file.read_bytes().decode("utf-8")  # still valid UTF-8: the byte is escaped
        assert "Ethernet\\udcff" in text or "Ethernet\\xff" in text, text[-2000:]
        assert daemon.proc.poll() is None, "the daemon stopped"
    finally:
        assert daemon.stop() == 0


@pytest.mark.parametrize(("fmt", "to_file"), [("console", True), ("json", True), ("console", False)])
def test_hostile_bytes_in_every_kind_and_log_sink(
    clean_redis: EmbeddedRedis, tmp_path: Path, fmt: str, to_file: bool
) -> None:
    """Issue 25's cases, in each log format, to a file and to stderr: a non-hash `SUB|Eth\\xff` under a
    subscriber table, a queue entry whose value is `\\xffnotjson`, a notification that is not
    JSON with 0xff, NUL, ESC and a newline in it. The daemon stays up, the valid changes after
    them arrive, nothing crashes at the next start either (exit 0 both times)."""
    import asyncio

    import redis

    from daemon_harness import DaemonProcess, read_records, wait_until, write_config
    from swssd import DBConnector, NotificationProducer, ProducerTable

    raw = redis.Redis(port=clean_redis.port)
    raw.config_set("notify-keyspace-events", "AKE")
    records = tmp_path / "records.jsonl"
    log_file = tmp_path / "swssd.log" if to_file else tmp_path / "stderr"
    logging = {"format": fmt, "level": "info", **({"file": str(log_file)} if to_file else {})}
    config = write_config(tmp_path, clean_redis, {
        "logging": logging,
        "orchs": [{"plugin": "orch_plugins:RecordingOrch", "options": {"record": str(records)}, "tables": [
            {"db": "CONFIG_DB", "table": "SUB"}, {"db": "APPL_DB", "table": "HQ", "kind": "queue"},
            {"db": "APPL_DB", "table": "HNTF", "kind": "notification"}]}],
    })
    raw.execute_command("SELECT", 4)
    raw.set(b"SUB|Eth\xff\x00\x1b[31m\n", b"not a hash")
    daemon = DaemonProcess(config, tmp_path / "stderr")
    try:
        assert wait_until(lambda: log_file.exists() and "ready" in log_file.read_text(errors="replace"), 30)
        raw.rpush(b"HQ_KEY_VALUE_OP_QUEUE", b"k\xff", b"\xffnotjson", b"Sset")
        raw.publish(b"HQ_CHANNEL@0", b"G")
        raw.publish(b"HNTF", b"\xff\x00\x1b[2J\nnot json")

        async def valid() -> None:
            db = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
            await ProducerTable(db, "HQ").set("good", [("f", "1")])
            await NotificationProducer(db, "HNTF").send("op", "data\xe9", [("f", "v")])
            await db.close()

        asyncio.run(valid())
        r = redis.Redis(port=clean_redis.port, db=4)
        r.hset("SUB|good", "f", "1")

        def arrived() -> set[str]:
            return {f"{t}/{k}" for t, k, _op, _fvs in read_records(records)}

        assert wait_until(lambda: {"HQ/good", "HNTF/data\xe9", "SUB/good"} <= arrived(), 30), arrived()
        assert daemon.proc.poll() is None, "the daemon stopped"
    finally:
        assert daemon.stop() == 0
    again = DaemonProcess(config, tmp_path / "stderr")
    try:
        ready = '"event": "ready"' if fmt == "json" else " ready "
        assert wait_until(lambda: log_file.read_text(errors="replace").count(ready) == 2, 30)
    finally:
        assert again.stop() == 0
    log_file.read_bytes().decode("utf-8")  # the log stays valid UTF-8
