"""Replay against hostile inputs (issue 35): timestamps Python cannot hold, a tiny gzip of millions
of rejected lines, a capture cut short. Real Spark local mode, through the command line."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from fixtures.spark_session import SPARK_ARGS, spark  # noqa: F401 - spark is a fixture
from swssd.replay.cli import main


def run(*argv: str) -> int:
    return main([*argv, *SPARK_ARGS])


def rejects_of(out: Path) -> list[dict[str, str]]:
    return [json.loads(line) for f in sorted((out / "rejects").glob("*.json")) for line in f.read_text().splitlines()]


def record(ts: str, key: str) -> str:
    return json.dumps({"ts": ts, "host": "h1", "db": "APPL_DB", "table": "PORT_TABLE", "key": key, "op": "SET",
                       "fvs": [["mtu", "9100"]]})


def test_a_timestamp_python_cannot_hold_is_a_rejected_line(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Year 0, year -1 and year 10000 among valid lines, in JSON Lines and in swss.rec: each is a
    rejected line (`bad ts`), and stats, history, report and state replay every valid event."""
    capture = tmp_path / "h1"
    capture.mkdir()
    (capture / "swssd.capture.jsonl").write_text("\n".join([
        record("2026-01-01T00:00:00.000000Z", "good1"),
        record("0000-01-01T00:00:00.000000Z", "year0"),
        record("-0001-01-01T00:00:00.000000Z", "minus1"),
        record("+10000-01-01T00:00:00.000000Z", "year10000"),
        record("2026-01-01T00:00:01.000000Z", "good2"),
    ]) + "\n")
    rec = tmp_path / "h2"  # a folder apart: swssd's swss.rec beside its JSON Lines would be left out
    rec.mkdir()
    (rec / "swss.rec").write_text("0000-01-01.00:00:00.000000|PORT_TABLE:recyear0|SET|mtu:1\n"
                                  "2026-01-01.00:00:02.000000|PORT_TABLE:good3|SET|mtu:1\n")
    good = {"good1", "good2", "good3"}
    for command in ("stats", "history", "report", "state"):
        out = tmp_path / command
        extra = ["--out", str(tmp_path / "r.html")] if command == "report" else []
        assert run(command, str(capture), str(rec), "--output", str(out), *extra) == 0, command
        printed = capsys.readouterr()
        assert "out of range" not in printed.err and "Traceback" not in printed.err, printed.err
        assert "read 7 lines: 3 events" in printed.out and "4 rejected" in printed.out, printed.out
        bad = [r for r in rejects_of(out) if r["reason"].startswith("bad ts")]
        assert len(bad) == 4, rejects_of(out)
        if command == "history":
            assert all(key in printed.out for key in good), printed.out
        if command == "state":
            keys = {r["key"] for r in spark.read.parquet(str(out / "state")).collect()}
            assert keys == good


def test_a_tiny_gzip_of_rejected_lines_writes_bounded_rejects(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """629 bytes of gzip, 300,000 lines of `x`: 36 MB of rejects before; now the first 10,000,
    the rest counted, and the summary says so."""
    capture = tmp_path / "h1"
    capture.mkdir()
    (capture / "swss.rec.1.gz").write_bytes(gzip.compress(b"x\n" * 300_000, 9))
    assert (capture / "swss.rec.1.gz").stat().st_size < 1024
    (capture / "swss.rec").write_text("2026-01-01.00:00:02.000000|PORT_TABLE:Ethernet0|SET|mtu:1\n")
    out = tmp_path / "out"
    assert run("stats", str(capture), "--output", str(out)) == 0
    printed = capsys.readouterr().out
    assert "read 300001 lines: 1 events" in printed and "300000 rejected" in printed, printed
    assert "290000 of them not written" in printed and "first 10,000 of each input file" in printed, printed
    written = sum(f.stat().st_size for f in (out / "rejects").rglob("*") if f.is_file())
    assert written < 2 << 20, written
    assert len(rejects_of(out)) == 10_000


def test_a_cut_gz_yields_the_events_of_its_readable_part(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rotated capture cut in the middle (a crashed switch): its complete lines up to the cut
    are replayed, named by the file and its folder's host, and the cut is one rejected line
    naming the file and the offset."""
    capture = tmp_path / "sw-cut"
    capture.mkdir()
    text = "".join(f"2026-01-01.00:00:{i % 60:02d}.{i:06d}|PORT_TABLE:Ethernet{i}|SET|mtu:{i}\n"
                   for i in range(20_000)).encode()
    whole = gzip.compress(text)
    cut = whole[: len(whole) // 2]
    (capture / "swss.rec.1.gz").write_bytes(cut)
    (capture / "swss.rec").write_text("2026-01-02.00:00:00.000000|PORT_TABLE:Ethernet0|SET|mtu:1\n")
    readable = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(cut)
    complete = readable[: readable.rfind(b"\n") + 1].count(b"\n")
    assert 1000 < complete < 20_000
    out = tmp_path / "out"
    assert run("state", str(capture), "--output", str(out)) == 0
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err, printed.err
    assert f"read {complete + 2} lines: {complete + 1} events" in printed.out, printed.out
    state = {(r["host"], r["key"]): dict(r["fields"]) for r in spark.read.parquet(str(out / "state")).collect()}
    assert len(state) == complete and {host for host, _ in state} == {"sw-cut"}
    assert state[("sw-cut", "Ethernet0")] == {"mtu": "1"}  # swss.rec is newer than swss.rec.1.gz
    assert state[("sw-cut", f"Ethernet{complete - 1}")] == {"mtu": str(complete - 1)}
    [reject] = rejects_of(out)
    assert reject["source"].endswith("/sw-cut/swss.rec.1.gz") and f"byte {len(cut)} " in reject["reason"], reject
    assert not list(Path("/tmp").glob("swssd-replay-cut-*/*/swss.rec.1.gz"))  # the copy is removed


def test_py4j_replacing_a_reset_connection_says_nothing(spark: SparkSession) -> None:
    """py4j logs a retried send (a pooled connection the JVM reset) at INFO with a traceback
    through the root logger: a replay's session drops that line, and only that one."""
    import logging

    import py4j.java_gateway

    from swssd.replay.session import get_session

    get_session()  # the running session, quieted
    seen: list[str] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    try:
        for path, message in [(py4j.java_gateway.__file__, "Exception while sending command."),
                              (__file__, "Exception while sending command."), (py4j.java_gateway.__file__, "other")]:
            root.handle(logging.LogRecord("root", logging.INFO, path, 1, message, None, None))
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert seen == ["Exception while sending command.", "other"]


def test_an_analysis_error_prints_no_json_stack_trace(spark: SparkSession, capfd: pytest.CaptureFixture[str]) -> None:
    """PySpark logs each analysis error with a query context (JSON, with the JVM's stack trace)
    before raising it; a replay's session keeps that off stderr (the command prints one line)."""
    from pyspark.errors import AnalysisException

    from swssd.replay.session import get_session

    session = get_session()
    with pytest.raises(AnalysisException):
        session.sql("SELECT no_such_column")
    with pytest.raises(AnalysisException):
        session.range(1).select("no_such_column")
    err = capfd.readouterr().err
    assert "QueryContextLogger" not in err and "at org.apache" not in err, err
