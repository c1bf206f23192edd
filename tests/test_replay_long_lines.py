"""Lines too long to read (issue 25, item 7): one 100 MB line costs that line, counted in rejects.

The scan that finds them (swssd/replay/readable.py) against a plain reading of Hadoop's line rule
on random text; Spark's reader with lines around the limit, split so that long lines straddle
split ends (where Hadoop hands over the start of a skipped line); and real 100 MB lines in a JSON
Lines capture, a gzipped one and a swss.rec, replayed by `python -m swssd.replay` in its own JVM
with the driver memory a replay has by default.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from fixtures.spark_session import SPARK_ARGS, spark  # noqa: F401 - spark is a fixture
from swssd.replay.inputs import InputOptions, load
from swssd.replay.readable import JSON_LINES, REC_LINES, InputCheck, LineScan, file_uri

TS = "2026-11-25T23:41:16.123456Z"


def hadoop_lines(data: bytes) -> list[tuple[int, int]]:
    """(line number by LF, bytes) of every line as Hadoop's reader delimits them (line_starts)."""
    return [(data.count(b"\n", 0, i) + 1, length) for i, length in line_starts(data)]


def line_starts(data: bytes) -> list[tuple[int, int]]:
    """(offset, bytes) of every line as Hadoop's reader delimits them: LF, CR or CR LF, one at a
    time, and a UTF-8 byte order mark at the start not part of the first line."""
    out = []
    i = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    while i < len(data):
        j = i
        while j < len(data) and data[j] not in b"\r\n":
            j += 1
        out.append((i, j - i))
        if j < len(data) and data[j:j + 2] == b"\r\n":
            j += 1
        i = j + 1
    return out


def scanned(data: bytes, limit: int, chunk: int | None = None) -> list[tuple[int, int]]:
    scan = LineScan(limit)
    size = chunk or scan.chunk_size()
    for i in range(0, len(data), size):
        scan.feed(data[i:i + size])
    scan.end()
    return scan.found


@pytest.mark.parametrize("seed", range(300))
def test_the_scan_finds_the_lines_hadoop_would_skip(seed: int) -> None:
    rng = random.Random(seed)
    limit = rng.choice([64, 65, 100, 200])
    parts = [rng.choice([b"\n", b"\r", b"\r\n", b"a" * rng.randint(0, 3 * limit), b"xy"]) for _ in range(40)]
    data = (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + b"".join(parts)
    expected = [(n, length) for n, length in hadoop_lines(data) if length > limit]
    assert scanned(data, limit) == expected
    # smaller chunks (gzip may hand over less) find the same
    assert scanned(data, limit, rng.randint(1, limit)) == expected


def kinds_of(data: bytes, chunk: int) -> frozenset[str]:
    scan = LineScan(1 << 20)
    for i in range(0, len(data), chunk):
        scan.feed(data[i:i + chunk])
    scan.end()
    return scan.kinds()


@pytest.mark.parametrize("seed", range(200))
def test_the_scan_never_misses_a_kind_of_line(seed: int) -> None:
    """inputs.py reads a file for JSON records only, or for swss.rec lines only, when the scan
    says it holds no line of the other kind: it may say both for less, never one for both."""
    rng = random.Random(seed)
    pieces = [b"\n", b"\r", b"\r\n", b"{x}", b"{", b"ab", b"a{b", b"\n{"]
    parts = [rng.choice(pieces) for _ in range(rng.randint(0, 12))]
    data = (b"\xef\xbb\xbf" if rng.random() < 0.2 else b"") + b"".join(parts)
    truth = {JSON_LINES if data[i:i + 1] == b"{" else REC_LINES for i, _ in line_starts(data)}
    for chunk in (1, 2, 3, 7, len(data) or 1):
        assert truth <= kinds_of(data, chunk)


def test_the_scan_knows_a_file_of_one_kind() -> None:
    records = b"".join(b'{"ts": "x"}\n' for _ in range(100))
    rec = b"".join(b"2026-11-27.10:00:00.000001|T:k|SET|a:b\n" for _ in range(100))
    for chunk in (3, 5, 4096):  # a byte order mark comes whole in the first chunk (reads are 1 MiB)
        assert kinds_of(records, chunk) == {JSON_LINES}
        assert kinds_of(b"\xef\xbb\xbf" + records, chunk) == {JSON_LINES}
        assert kinds_of(records.rstrip(b"\n"), chunk) == {JSON_LINES}
        assert kinds_of(rec, chunk) == {REC_LINES}
        assert kinds_of(records + rec, chunk) == kinds_of(rec + records, chunk) == {JSON_LINES, REC_LINES}
        assert kinds_of(records + b"\n", chunk) == {JSON_LINES, REC_LINES}  # a blank line is read as swss.rec
    assert kinds_of(b"", 1) == {REC_LINES}


def _record(key: str, size: int = 0) -> dict[str, object]:
    """A record whose line is `size` bytes long (at least its bare length)."""
    record: dict[str, object] = {"ts": TS, "host": "sw1", "db": "APPL_DB", "table": "PORT_TABLE", "key": key,
                                 "op": "SET", "fvs": [["pad", ""]]}
    bare = len(json.dumps(record))
    record["fvs"] = [["pad", "p" * max(0, size - bare)]]
    return record


def _line(key: str, size: int = 0) -> bytes:
    line = json.dumps(_record(key, size)).encode()
    assert not size or len(line) == size
    return line


@pytest.fixture
def small_splits(spark: SparkSession) -> Iterator[None]:
    """Splits of 700 bytes: long lines cross split ends, where Hadoop may hand over a skipped
    line's first bytes instead of skipping it."""
    spark.conf.set("spark.sql.files.maxPartitionBytes", "700")
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        yield
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
        spark.conf.unset("spark.sql.files.openCostInBytes")


def test_lines_around_the_limit_are_read_or_counted_never_both(
    spark: SparkSession, small_splits: None, tmp_path: Path
) -> None:
    limit = 300
    sizes = [160, limit - 1, limit, limit + 1, limit + 2, limit + 3, limit + 4, 2000, 150, limit, 5000, limit + 1]
    ends = [b"\n", b"\r\n", b"\r"]
    files, keep, drop = {}, set(), set()
    for f, end in enumerate(ends):
        lines = [_line(f"f{f}k{i}", size) for i, size in enumerate(sizes)]
        data = (b"\xef\xbb\xbf" if end == b"\r" else b"") + end.join(lines)  # no line end at the end
        for i, size in enumerate(sizes):
            (drop if size > limit else keep).add((f"f{f}k{i}", i + 1 if end != b"\r" else 1))
        files[f"c{f}.jsonl"] = data
    files["c3.jsonl.1.gz"] = gzip.compress(files["c0.jsonl"].replace(b"f0k", b"gzk"))
    keep |= {(k.replace("f0k", "gzk"), n) for k, n in keep if k.startswith("f0k")}
    drop |= {(k.replace("f0k", "gzk"), n) for k, n in drop if k.startswith("f0k")}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / name) for name in sorted(files)]
    inputs = load(spark, InputOptions(paths, max_line_bytes=limit))
    read = {r["key"] for r in inputs.events.select("key").collect()}
    assert read == {k for k, _ in keep}
    rejects = inputs.rejects.collect()
    assert all(r["value"] == "" for r in rejects)
    counted = {r["reason"].split(":")[0] for r in rejects}
    assert len(rejects) == len(drop) and counted <= {f"line {n}" for _, n in drop}
    assert inputs.counts() == {"lines": len(keep) + len(drop), "events": len(keep), "markers": 0, "blank": 0,
                               "rejects": len(drop)}


def test_the_check_names_the_file_line_and_length(tmp_path: Path) -> None:
    path = tmp_path / "sw1" / "swss.rec"
    path.parent.mkdir()
    path.write_bytes(b"short\n" + b"x" * 1000 + b"\nshort\n" + b"y" * 65)
    check = InputCheck([str(path), "hdfs://nowhere/file"], 64)
    assert check.unreadable() == {}
    found = check.long_lines()
    assert [(x.path, x.line, x.length) for x in found] == [(str(path), 2, 1000), (str(path), 4, 65)]
    assert found[0].reason(64) == "line 2: 1000 bytes, over the limit of 64 (--max-line-bytes); not read"
    # a glob or a directory (as a library caller may give `load`) stands for the files Spark reads
    (path.parent / "_swssd_host").write_bytes(b"h" * 1000)  # not an input
    for given in (str(path.parent / "swss.rec*"), str(path.parent), f"file://{path.parent}"):
        assert InputCheck([given], 64).long_lines() == found, given


def test_closing_the_check_early_leaves_no_repaired_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that ends before waiting for the check (its session failed) closes it at once:
    the copy of a cut `.gz` file's readable lines, written by the check afterwards, would stay."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    rng = random.Random(3)
    text = "".join(f"{TS}|ROUTE_TABLE:10.{rng.randrange(256)}.0.0/16|SET|nexthop:10.0.0.{i % 250}\n"
                   for i in range(400_000)).encode()
    packed = gzip.compress(text, 6)
    path = tmp_path / "sw1" / "swss.rec.2.gz"
    path.parent.mkdir()
    path.write_bytes(packed[: len(packed) * 2 // 3])  # cut short
    check = InputCheck([str(path)], 1 << 20)
    check.close()
    (cut,) = check.cuts().values()
    assert not os.path.exists(cut.copy) and os.listdir(tmp_path / "tmp") == []


# -- real 100 MB lines, a fresh replay process with the default driver memory -------------

BIG = 100 << 20


def _big_json(key: str) -> bytes:
    return json.dumps(_record(key)).replace('""', '"' + "a" * BIG + '"', 1).encode()


def _rec(us: int, key: str, mtu: str) -> bytes:
    return f"2026-11-25.23:41:16.{us:06d}|PORT_TABLE:{key}|SET|mtu:{mtu}".encode()


def test_a_100_mb_line_costs_that_line_only(tmp_path: Path) -> None:
    caps = tmp_path / "caps"
    jsonl_lines = [_line("Ethernet0"), _line("Ethernet4"), _big_json("Huge"), _line("Ethernet8")]
    (caps / "sw1").mkdir(parents=True)
    (caps / "sw1" / "swssd.capture.jsonl").write_bytes(b"\n".join(jsonl_lines) + b"\n")
    (caps / "sw1" / "swssd.capture.jsonl.1.gz").write_bytes(
        gzip.compress(b"\n".join([_big_json("HugeToo"), _line("Ethernet12")]) + b"\n", 1))
    (caps / "sw2").mkdir()
    rec = [_rec(1, "Ethernet0", "9100"), b"2026-11-25.23:41:16.000002|PORT_TABLE:Big|SET|x:" + b"z" * BIG,
           _rec(3, "Ethernet4", "1500")]
    (caps / "sw2" / "swss.rec").write_bytes(b"\n".join(rec) + b"\n")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "swssd.replay", "state", str(caps), "--output", str(out), "--show", "20",
         *SPARK_ARGS],
        capture_output=True, text=True, timeout=900,
        env={**env, "SWSSD_REPLAY_CDS": "0", "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "OutOfMemoryError" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "read 9 lines: 6 events, 0 'recording started' markers, 0 blank, 3 rejected" in proc.stdout
    assert "6 entries in 2 tables" in proc.stdout, proc.stdout
    rejects = [json.loads(line) for f in (out / "rejects").glob("*.json") for line in f.read_text().splitlines()]
    got = sorted((r["source"], r["reason"], r["value"]) for r in rejects)
    over = "over the limit of 16777216 (--max-line-bytes); not read"
    assert got == sorted([
        (file_uri(str(caps / "sw1" / "swssd.capture.jsonl")), f"line 3: {len(jsonl_lines[2])} bytes, {over}", ""),
        (file_uri(str(caps / "sw1" / "swssd.capture.jsonl.1.gz")), f"line 1: {len(_big_json('HugeToo'))} bytes, {over}",
         ""),
        (file_uri(str(caps / "sw2" / "swss.rec")), f"line 2: {len(rec[1])} bytes, {over}", ""),
    ])
    notes = [line for line in proc.stderr.splitlines() if "counted as a rejected line" in line]
    assert len(notes) == 3, proc.stderr
