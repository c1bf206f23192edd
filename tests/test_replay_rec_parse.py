"""How a swss.rec line is taken apart (inputs.py): the op token found by byte searches, the text
cut by bytes, the timestamp cast in a UTC session; lines that look like the structure inside a
key or a value, timestamps that are no time, text that is not UTF-8. Real Spark, local mode."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from fixtures.spark_session import spark  # noqa: F401 - spark is a fixture
from swssd.replay.inputs import BAD_TS, InputOptions, _rec_ts, load

TS = "2026-11-27.10:00:00.000001"
#: the line -> (db, table, key, op, fvs) of its event, or the reason it is rejected
CASES: dict[str, tuple[str, str, str, str, list[list[str]]] | str] = {
    f"{TS}|PORT_TABLE:Ethernet0|SET|mtu:9100|admin_status:up":
        ("APPL_DB", "PORT_TABLE", "Ethernet0", "SET", [["mtu", "9100"], ["admin_status", "up"]]),
    f"{TS}|VLAN_MEMBER|Vlan10|Ethernet0|DEL": ("CONFIG_DB", "VLAN_MEMBER", "Vlan10|Ethernet0", "DEL", []),
    f"{TS}|PORT_TABLE:Ethernet0|SET": ("APPL_DB", "PORT_TABLE", "Ethernet0", "SET", []),
    f"{TS}|T:k|DEL|x:y": ("APPL_DB", "T", "k", "DEL", [["x", "y"]]),
    # token-like text inside a key: the first whole token wins
    f"{TS}|T:k|SETTINGS|SET|a:b": ("APPL_DB", "T", "k|SETTINGS", "SET", [["a", "b"]]),
    f"{TS}|T:k|DELAY|DEL": ("APPL_DB", "T", "k|DELAY", "DEL", []),
    f"{TS}|T:k|SET|a:b|DEL|c:d": ("APPL_DB", "T", "k", "SET", [["a", "b|DEL"], ["c", "d"]]),
    # a `|DEL|` sharing its last `|` with the `|SET|` after it comes first
    f"{TS}|T:k|DEL|SET|a:b": "field without ':'",
    f"{TS}|T:k|DEL|DEL": "field without ':'",
    f"{TS}|T:ké|SET|f:vé|g:ü": ("APPL_DB", "T", "ké", "SET", [["f", "vé"], ["g", "ü"]]),
    f"{TS}|T:k|SET|scheduler:[SCHEDULER|scheduler.0]":
        ("APPL_DB", "T", "k", "SET", [["scheduler", "[SCHEDULER|scheduler.0]"]]),
    # the timestamp's own `|` never starts a token
    f"{TS}|SET|SET|x": "no TABLE<sep>key before the op",
    f"{TS}|SET|T:k|SET|a:b": ("CONFIG_DB", "SET", "T:k", "SET", [["a", "b"]]),
    f"{TS}|DEL|SET|a:b": "no TABLE<sep>key before the op",
    f"{TS}|DEL": "no SET/DEL op token",
    f"{TS}|SET": "no SET/DEL op token",
    f"{TS}|T:k|GET|a:b": "no SET/DEL op token",
    f"{TS}|:k|SET|a:b": "no TABLE<sep>key before the op",
    # timestamps of the right form that are no time, or out of Python's years
    "2026-02-30.10:00:00.000001|T:k|DEL": "bad timestamp",
    "2026-13-01.10:00:00.000001|T:k|DEL": "bad timestamp",
    "2026-11-27.24:00:00.000001|T:k|DEL": "bad timestamp",
    "2026-11-27.23:59:60.000001|T:k|DEL": "bad timestamp",
    "0000-01-01.00:00:00.000000|T:k|DEL": BAD_TS,
    "2026-11-27 10:00:00.000001|T:k|DEL": "no swss.rec timestamp",
}


def parsed(spark: SparkSession, path: Path) -> dict[str, tuple[str, str, str, str, list[list[str]]] | str]:
    lines = load(spark, InputOptions([str(path)])).lines
    assert lines is not None
    rows = lines.selectExpr("value", "line_kind", "reason", "db", "`table`", "`key`", "op", "fvs").collect()
    return {
        r["value"]: (r["db"], r["table"], r["key"], r["op"], [list(p) for p in r["fvs"]])
        if r["line_kind"] == "event" else r["reason"]
        for r in rows
    }


def test_each_line_is_read_as_the_format_means(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "h1" / "swss.rec"
    path.parent.mkdir()
    path.write_text("\n".join(CASES) + "\n", encoding="utf-8")
    assert parsed(spark, path) == CASES


#: how swss.rec timestamps were read before the cast (in the session's zone, UTC here)
PATTERN = "try_to_timestamp(substring(value, 1, 26), 'yyyy-MM-dd.HH:mm:ss.SSSSSS')"


def test_the_cast_reads_every_timestamp_as_the_pattern_did(spark: SparkSession) -> None:
    """The same instants, the same nulls, for times of the right form and for some that are no time."""
    stamps = ["2026-11-27.10:00:00.000001", "2024-02-29.23:59:59.999999", "2023-02-29.00:00:00.000000",
              "0001-01-01.00:00:00.000000", "0000-01-01.00:00:00.000000", "9999-12-31.23:59:59.999999",
              "1969-12-31.23:59:59.500000", "2026-00-10.00:00:00.000000", "2026-01-00.00:00:00.000000",
              "2026-04-31.00:00:00.000000", "2026-11-27.23:60:00.000000", "2026-11-27.99:00:00.000000"]
    values = ", ".join(f"('{s}|T:k|DEL')" for s in stamps)
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    rows = spark.sql(
        f"SELECT value, unix_micros({_rec_ts(True)}) AS cast, unix_micros({_rec_ts(False)}) AS zoned,"
        f" unix_micros({PATTERN}) AS pattern FROM VALUES {values} AS t(value)"
    ).collect()
    found = [(r["value"], r["cast"], r["zoned"]) for r in rows]
    assert found == [(r["value"], r["pattern"], r["pattern"]) for r in rows]
    assert sum(r["cast"] is not None for r in rows) == 6


@pytest.mark.parametrize("session_zone", ["Europe/Paris", "America/New_York"])
def test_a_session_zone_does_not_shift_swss_rec_times(spark: SparkSession, tmp_path: Path, session_zone: str) -> None:
    """swss.rec times are in --timezone (UTC by default), whatever zone the session computes in."""
    path = tmp_path / "h1" / "swss.rec"
    path.parent.mkdir()
    path.write_text("2026-11-27.10:00:00.000001|T:k|DEL\n2026-07-01.10:00:00.000001|T:k|DEL\n")
    expected = [1795773600000001, 1782900000000001]  # 10:00 UTC on each day
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", session_zone)
    try:
        for zone, shift in (("UTC", 0), ("Asia/Kolkata", -(5 * 3600 + 1800) * 10**6)):
            events = load(spark, InputOptions([str(path)], timezone=zone)).events
            found = sorted(r["us"] for r in events.selectExpr("unix_micros(ts) AS us").collect())
            assert found == sorted(us + shift for us in expected), zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", str(before))


def test_a_line_that_is_not_utf8_is_cut_by_bytes(spark: SparkSession, tmp_path: Path) -> None:
    """A stray lead byte neither hides the `|` after it nor pulls bytes from past the line."""
    path = tmp_path / "h1" / "swss.rec"
    path.parent.mkdir()
    path.write_bytes(f"{TS}|T:k".encode() + b"\xf0|SET|f:v\n" + f"{TS}|T:".encode() + b"\xc3|DEL\n")
    lines = load(spark, InputOptions([str(path)])).lines
    assert lines is not None
    rows = lines.selectExpr("line_kind", "`table`", "octet_length(`key`) AS key_bytes", "op", "fvs").collect()
    assert sorted((r["line_kind"], r["table"], r["key_bytes"], r["op"], [list(p) for p in r["fvs"]]) for r in rows) == [
        ("event", "T", 1, "DEL", []),
        ("event", "T", 2, "SET", [["f", "v"]]),
    ]
