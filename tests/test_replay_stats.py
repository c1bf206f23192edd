"""`replay stats` against a plain Python count of the same capture: every table's, key's and
notification op's figures, and the files in their order. The capture is random (seeded): hosts,
both databases, every kind of record, notifications whose data is also a table's key, dead
letters, events over many minutes. Real Spark, local mode, through the command line."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import Row, SparkSession

from fixtures.spark_session import SPARK_ARGS, spark  # noqa: F401 - spark is a fixture
from swssd.replay import commands, jvm, stats
from swssd.replay.cli import main

START = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
KINDS = [None, "state", "queue", "subscriber", "zmq", "notification"]


def capture(seed: int, n: int = 3000, start: datetime = START, minutes: int = 40) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    records = []
    for _ in range(n):
        kind = rng.choice(KINDS)
        record = {
            "ts": (start + timedelta(microseconds=rng.randrange(minutes * 60 * 10**6)))
            .strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "host": rng.choice(["sw1", "sw2"]), "db": rng.choice(["APPL_DB", "CONFIG_DB"]),
            "table": rng.choice(["PORT_TABLE", "ROUTE_TABLE", "FDB_CHANNEL"]), "key": f"k{rng.randrange(12)}",
            "op": rng.choice(["flush", "SET", "clear"]) if kind == "notification" else rng.choice(["SET", "DEL"]),
            "fvs": [["f", "v"]], "dead_letter": rng.random() < 0.1,
        }
        if kind is not None:
            record["kind"] = kind
        records.append(record)
    return records


def expected(records: list[dict[str, Any]]) -> tuple[dict[tuple[str, ...], dict[str, Any]], ...]:
    """The figures by their definitions (stats.py), one record at a time."""
    tables: dict[tuple[str, ...], dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    keys: dict[tuple[str, ...], dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    ops: dict[tuple[str, ...], dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    table_minutes: dict[tuple[str, ...], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    op_minutes: dict[tuple[str, ...], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    table_keys: dict[tuple[str, ...], set[str]] = defaultdict(set)
    key_minutes: dict[tuple[str, ...], set[int]] = defaultdict(set)
    for r in records:
        ts = datetime.strptime(r["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        minute = (ts - EPOCH) // timedelta(minutes=1)  # floored, before 1970 too
        table = (r["host"], r["db"], r["table"])
        notification = r.get("kind") == "notification"
        targets = [tables[table]]
        table_minutes[table][minute] += 1
        table_keys[table].add(r["key"])
        if notification:
            op = (*table, r["op"])
            targets.append(ops[op])
            op_minutes[op][minute] += 1
        else:
            key = (*table, r["key"])
            targets.append(keys[key])
            key_minutes[key].add(minute)
        for figures in targets:
            figures["events"] += 1
            figures["dead_letters"] += r["dead_letter"]
            figures["first_ts"] = min(figures.get("first_ts") or ts, ts)
            figures["last_ts"] = max(figures.get("last_ts") or ts, ts)
            figures.setdefault("kinds", set()).add(r.get("kind") or "state")
        for figures in targets[:1] if notification else targets:
            figures["sets"] += (not notification) and r["op"] == "SET"
            figures["dels"] += (not notification) and r["op"] == "DEL"
        tables[table]["notifications"] += notification
    for at, figures in tables.items():
        figures["distinct_keys"] = len(table_keys[at])
        figures["active_minutes"] = len(table_minutes[at])
        figures["peak_per_minute"] = max(table_minutes[at].values())
        span_us = (figures["last_ts"] - figures["first_ts"]) // timedelta(microseconds=1)
        per_minute = figures["events"] / max(1.0, span_us / 60_000_000.0)
        # Spark rounds the double's shortest decimal form half up
        figures["events_per_minute"] = float(Decimal(repr(per_minute)).quantize(Decimal("0.1"), ROUND_HALF_UP))
    for at, figures in keys.items():
        figures["active_minutes"] = len(key_minutes[at])
    for at, figures in ops.items():
        figures["active_minutes"] = len(op_minutes[at])
        figures["peak_per_minute"] = max(op_minutes[at].values())
    return tables, keys, ops


def as_found(row: Any, columns: list[str]) -> dict[str, Any]:
    found = {c: row[c] for c in columns}
    if "kind" in found:
        found["kinds"] = set(found.pop("kind").split(","))
    for c in ("first_ts", "last_ts"):
        found[c] = found[c].replace(tzinfo=None)
    return found


def as_expected(figures: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    want = {c: figures[c] for c in columns if c != "kind"}
    if "kind" in columns:
        want["kinds"] = figures["kinds"]
    for c in ("first_ts", "last_ts"):  # Spark hands timestamps over in the local zone, naive
        want[c] = datetime.fromtimestamp(figures[c].timestamp())
    return want


@pytest.mark.parametrize(("seed", "start", "minutes"), [
    (1, START, 40), (2, START, 40),
    # keys active over several hours, and a capture across 1970 (minutes before it floored);
    # a key's minutes are counted as bits of blocks of 128 minutes: keys across many blocks
    (5, START, 5 * 60), (6, datetime(1969, 12, 31, 22, 59, 30, tzinfo=UTC), 3 * 60), (7, START, 3 * 24 * 60)])
def test_stats_count_what_a_plain_count_does(spark: SparkSession, tmp_path: Path, seed: int, start: datetime,
                                            minutes: int) -> None:
    records = capture(seed, start=start, minutes=minutes)
    path = tmp_path / "sw" / "capture.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    assert main(["stats", str(path), "--output", str(out), *SPARK_ARGS]) == 0
    tables, keys, ops = expected(records)
    read = {name: spark.read.parquet(str(out / "stats" / name)).collect()
            for name in ("tables", "keys", "notifications")}
    figures = [c for c in stats.TABLE_FIGURES if c not in ("host", "db", "table")]
    assert {(r["host"], r["db"], r["table"]): as_found(r, figures) for r in read["tables"]} == {
        t: as_expected(f, figures) for t, f in tables.items()}
    figures = [c for c in stats.KEY_FIGURES if c not in ("host", "db", "table", "key")]
    assert {(r["host"], r["db"], r["table"], r["key"]): as_found(r, figures) for r in read["keys"]} == {
        k: as_expected(f, figures) for k, f in keys.items()}
    figures = [c for c in stats.OP_FIGURES if c not in ("host", "db", "table", "op")]
    assert {(r["host"], r["db"], r["table"], r["op"]): as_found(r, figures) for r in read["notifications"]} == {
        o: as_expected(f, figures) for o, f in ops.items()}


@pytest.mark.parametrize("one_task_sort", [stats.ONE_TASK_SORT, 0])
def test_the_keys_file_holds_the_most_changed_first(spark: SparkSession, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, one_task_sort: int) -> None:
    """Sorted in one task, or across tasks past ONE_TASK_SORT keys: the file reads in order."""
    monkeypatch.setattr(stats, "ONE_TASK_SORT", one_task_sort)
    path = tmp_path / "sw" / "capture.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in capture(3)))
    out = tmp_path / "out"
    assert main(["stats", str(path), "--output", str(out), *SPARK_ARGS]) == 0
    files = sorted((out / "stats" / "keys").glob("part-*.parquet"))
    assert (len(files) == 1) == (one_task_sort > 0)
    rows = [r for f in files for r in spark.read.parquet(str(f)).collect()]
    order = [(-r["events"], -r["dels"], r["host"], r["db"], r["table"], r["key"]) for r in rows]
    assert order == sorted(order) and len(rows) > 50


def test_the_keys_file_starts_before_the_other_jobs_are_planned(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The keys file (the longest task) is planned alone: its job has started when the top keys
    are asked for. Twice in one session, each run waiting for its own job."""
    groups: list[str] = []
    seen: list[int] = []
    new_group, top_keys = commands._keys_group, stats.Stats.top_keys

    def keys_group() -> str:
        groups.append(new_group())
        return groups[-1]

    def top(self: stats.Stats, n: int) -> list[Any]:
        seen.append(len(spark.sparkContext.statusTracker().getJobIdsForGroup(groups[-1])))
        return top_keys(self, n)

    monkeypatch.setattr(commands, "_keys_group", keys_group)
    monkeypatch.setattr(stats.Stats, "top_keys", top)
    path = tmp_path / "sw" / "capture.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in capture(6, 300)))
    for run in range(2):
        assert main(["stats", str(path), "--output", str(tmp_path / f"out{run}"), *SPARK_ARGS]) == 0
    assert len(set(groups)) == 2 and len(seen) == 2 and min(seen) >= 1
    assert spark.read.parquet(str(tmp_path / "out1" / "stats" / "keys")).count() > 20


def parquet_columns(spark: SparkSession, directory: Path) -> dict[str, tuple[str, set[str]]]:
    """Each column of the one Parquet file in `directory`: its type as Parquet writes it, and the
    encodings of its first row group (read from the footer, through the session's JVM)."""
    (file,) = directory.glob("part-*.parquet")
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    source = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
        jvm.org.apache.hadoop.fs.Path(str(file)), spark.sparkContext._jsc.hadoopConfiguration())
    reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(source)
    try:
        chunks = reader.getFooter().getBlocks().get(0).getColumns()
        return {c.getPath().toDotString(): (c.getPrimitiveType().toString(), {e.name() for e in c.getEncodings()})
                for c in chunks}
    finally:
        reader.close()


@pytest.mark.parametrize("run", range(3))
def test_the_files_hold_instants_as_int64_microseconds_and_no_dictionaries(
    spark: SparkSession, tmp_path: Path, run: int,
) -> None:
    """INT64 microseconds, not INT96, and no dictionaries in every stats file, with the session's
    own setting back after. Three runs: the files are written side by side, and writes with other
    options took each other's a fourth of the time."""
    path = tmp_path / "sw" / "capture.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in capture(4 + run, 400)))
    out = tmp_path / "out"
    before = spark.conf.get("spark.sql.parquet.outputTimestampType")
    assert main(["stats", str(path), "--output", str(out), *SPARK_ARGS]) == 0
    assert spark.conf.get("spark.sql.parquet.outputTimestampType") == before
    files = {name: parquet_columns(spark, out / "stats" / name) for name in ("tables", "keys", "notifications")}
    for name, columns in files.items():
        for column in ("first_ts", "last_ts"):
            assert columns[column][0].startswith("optional int64 ") and "MICROS" in columns[column][0], (name, column)
        assert not any("DICTIONARY" in e for _, encodings in columns.values() for e in encodings), (name, columns)
    keys = spark.read.parquet(str(out / "stats" / "keys")).collect()
    assert len(keys) > 20 and all(r["first_ts"] <= r["last_ts"] for r in keys)
    assert min(r["first_ts"] for r in keys) >= START.replace(tzinfo=None)


@pytest.mark.parametrize(("given", "small", "expected"), [(None, False, None), ("3", False, "3"), (None, True, "1")])
def test_stats_aggregates_in_one_shuffle_partition_a_core(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str | None, small: bool,
    expected: str | None,
) -> None:
    """Locally, stats' aggregations run in one shuffle partition a core (None: the session's
    default parallelism), where the session has more (two a core by default), without adaptive
    execution: the session's own values are back after the command; a value given with --conf
    is the one used, and a small input keeps its one partition (jvm.SMALL_SQL_CONF)."""
    used = []
    adaptive = []
    figures = stats.Stats.figures

    def counted(self: stats.Stats) -> list[Row]:
        used.append(spark.conf.get("spark.sql.shuffle.partitions"))
        adaptive.append(spark.conf.get("spark.sql.adaptive.enabled"))
        return figures(self)

    monkeypatch.setattr(stats.Stats, "figures", counted)
    monkeypatch.setattr(jvm, "SMALL_INPUT_BYTES", 1 << 40 if small else -1)
    path = tmp_path / "sw" / "capture.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in capture(5, 200)))
    conf = ["--conf", f"spark.sql.shuffle.partitions={given}"] if given else []
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    try:
        assert main(["stats", str(path), "--output", str(tmp_path / "out"), *conf]) == 0
        after = spark.conf.get("spark.sql.shuffle.partitions")
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    assert used == [expected or str(spark.sparkContext.defaultParallelism)]
    assert after == (given or "4")
    assert adaptive == ["false"] and spark.conf.get("spark.sql.adaptive.enabled") == "true"


def summary_line(out: str) -> str:
    (line,) = [line for line in out.splitlines() if line.startswith("read ")]
    return line


@pytest.mark.parametrize("filters", [[], ["--table", "PORT_TABLE", "--since", "2026-11-27T10:20:00Z",
                                          "--only-host", "sw1", "--db", "APPL_DB"]])
def test_stats_counts_every_line_read_as_history_does(spark: SparkSession, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str], filters: list[str]) -> None:
    """stats counts the lines it reads by kind in its own aggregation (no observation in the read):
    the same summary as `history`, whose counts are observed, over JSON records, swss.rec lines,
    markers, blank and rejected lines; events the filters leave out are read all the same. The
    filtered figures are the plain count's of the events kept."""
    records = capture(4, 600)
    (tmp_path / "sw1").mkdir()
    (tmp_path / "sw1" / "capture.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records) + "\n\nnot json\n{\"ts\": 5}\n")
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "swss.rec").write_text(
        "2026-11-27.10:30:00.000001|recording started\n"
        "2026-11-27.10:30:00.000002|PORT_TABLE:Ethernet0|SET|mtu:9100\n"
        "2026-11-27.10:30:01.000000|PORT_TABLE:Ethernet4|DEL\n"
        "\n"
        "2026-11-27.10:30:02.000000|no op here\n")
    summaries = []
    for command in ("history", "stats"):
        out = tmp_path / f"out-{command}"
        assert main([command, str(tmp_path / "sw1"), str(tmp_path / "rec"), "--host", "sw1", "--output", str(out),
                     *filters, *SPARK_ARGS]) == 0
        summaries.append(summary_line(capsys.readouterr().out).replace(str(out), "OUT"))
    assert summaries[0] == summaries[1]
    assert summaries[1].startswith("read 609 lines: 602 events, 1 'recording started' markers, 3 blank, 3 rejected")
    kept = [r for r in records if not filters or (r["table"] == "PORT_TABLE" and r["db"] == "APPL_DB"
                                                  and r["ts"] >= "2026-11-27T10:20:00")]
    for r in kept:
        r["host"] = "sw1"
    tables, _, _ = expected(kept)
    want = {t[1:]: f["events"] for t, f in tables.items()}
    # the two swss.rec events: APPL_DB's PORT_TABLE (':'), after 10:20, kept by the filters too
    want[("APPL_DB", "PORT_TABLE")] = want.get(("APPL_DB", "PORT_TABLE"), 0) + 2
    tables_file = spark.read.parquet(str(tmp_path / "out-stats" / "stats" / "tables"))
    got = {(r["db"], r["table"]): r["events"] for r in tables_file.collect()}
    assert got == want
