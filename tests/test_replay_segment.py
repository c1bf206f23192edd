"""Columnar capture segments (swssd/replay/segment.py): `replay compact`, and every command reading
a segment, alone or among capture files, with the results of the captures it was made from."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from fixtures.spark_session import SPARK_ARGS, spark  # noqa: F401 - spark is a fixture
from swssd.replay import jvm
from swssd.replay.cli import main
from swssd.replay.paths import SEGMENT_MARKER, resolve_inputs

REC_FIXTURE = Path(__file__).parent / "fixtures" / "swss_rec" / "sw-leaf1"


def record(ts: str, key: str, op: str, fvs: list[list[str]], **extra: object) -> str:
    return json.dumps({"ts": f"2026-03-01T10:{ts}Z", "db": "APPL_DB", "table": "PORT_TABLE", "key": key,
                       "op": op, "fvs": fvs, **extra})


# sw2's capture, rotated once: the last record of .1 and the first of the live file share an
# instant (the live one is newer); DEL then SET at one instant; a subscriber's SET replaces the
# entry; a notification and a dead letter are never state; two lines are rejected, one is blank.
OLDER = [
    record("00:00.000000", "Ethernet0", "SET", [["mtu", "9100"], ["fec", "rs"]], seq=1),
    record("00:01.000000", "Ethernet4", "SET", [["mtu", "9100"]], seq=2),
    record("00:01.000000", "Ethernet4", "DEL", [], seq=3),
    record("00:01.000000", "Ethernet4", "SET", [["speed", "1000"]], seq=4),
    "{not json",
    record("00:02.000000", "Ethernet8", "SET", [["mtu", "1500"]], seq=5),
]
LIVE = [
    record("00:02.000000", "Ethernet8", "SET", [["mtu", "9100"]], seq=6),
    "",
    json.dumps({"ts": "2026-03-01T10:00:03Z", "db": "CONFIG_DB", "table": "PORT", "key": "Ethernet0",
                "op": "SET", "fvs": [["speed", "1"], ["alias", "a"]], "kind": "subscriber", "host": "sw2"}),
    json.dumps({"ts": "2026-03-01T10:00:04Z", "db": "CONFIG_DB", "table": "PORT", "key": "Ethernet0",
                "op": "SET", "fvs": [["speed", "2"]], "kind": "subscriber", "host": "sw2"}),
    record("00:05.000000", "[]", "port_state_change", [["oper", "up"]], kind="notification"),
    record("00:06.000000", "Ethernet0", "SET", [["mtu", "1"]], dead_letter=True, reason="handler failed"),
    record("bad", "Ethernet0", "SET", [["mtu", "2"]]),
    record("00:07.000000", "Ethernet0", "SET", [["admin_status", "up"]], seq=7),
]


@pytest.fixture(scope="module")
def caps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sw-leaf1: the swss.rec fixture as logrotate leaves it (.2.gz, .1, live); sw2: a JSON capture."""
    base = tmp_path_factory.mktemp("segment-caps") / "caps"
    rec = base / "sw-leaf1"
    rec.mkdir(parents=True)
    shutil.copy(REC_FIXTURE / "swss.rec", rec / "swss.rec")
    shutil.copy(REC_FIXTURE / "swss.rec.1", rec / "swss.rec.1")
    (rec / "swss.rec.2.gz").write_bytes(gzip.compress((REC_FIXTURE / "swss.rec.2").read_bytes()))
    sw2 = base / "sw2"
    sw2.mkdir()
    (sw2 / "swssd.capture.jsonl.1").write_text("\n".join(OLDER) + "\n")
    (sw2 / "swssd.capture.jsonl").write_text("\n".join(LIVE) + "\n")
    return base


@pytest.fixture(scope="module")
def segment(caps: Path, spark: SparkSession) -> Path:
    """caps compacted once."""
    out = caps.parent / "segment"
    assert main(["compact", str(caps), "--out", str(out), *SPARK_ARGS]) == 0
    return out


def rows(spark: SparkSession, path: Path) -> list[tuple[Any, ...]]:
    """Every row, comparable: maps as sorted items."""
    def plain(v: object) -> object:
        if isinstance(v, dict):
            return tuple(sorted(v.items()))
        if isinstance(v, list):
            return tuple(plain(x) for x in v)
        return v
    return sorted((tuple(plain(v) for v in r) for r in spark.read.parquet(str(path)).collect()), key=repr)


def replay(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main([*argv, *SPARK_ARGS])
    return code, capsys.readouterr().out


def rejects(out: Path) -> list[tuple[str, str, str]]:
    found = [json.loads(line) for f in sorted((out / "rejects").glob("*.json")) for line in f.read_text().splitlines()]
    return sorted((r["source"], r["reason"], r["value"]) for r in found)


def test_compact_writes_a_segment_and_reports_the_counts(
    caps: Path, spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "seg"
    code, printed = replay(capsys, "compact", str(caps), "--out", str(out))
    assert code == 0
    assert "read 41 lines: 30 events, 3 'recording started' markers, 2 blank, 6 rejected" in printed
    assert f"segment of 5 capture file(s): 30 events -> {out}" in printed
    manifest = json.loads((out / SEGMENT_MARKER).read_text())
    assert manifest["counts"] == {"lines": 41, "events": 30, "markers": 3, "blank": 2, "rejects": 6}
    assert manifest["complete"] and sorted(Path(s).name for s in manifest["sources"]) == [
        "swss.rec", "swss.rec.1", "swss.rec.2.gz", "swssd.capture.jsonl", "swssd.capture.jsonl.1"]
    assert spark.read.parquet(str(out / "events")).count() == 30
    assert spark.read.parquet(str(out / "rejects")).count() == 6
    # compacted again into the same place: replaced, not added to
    assert replay(capsys, "compact", str(caps), "--out", str(out))[0] == 0
    assert spark.read.parquet(str(out / "events")).count() == 30


@pytest.mark.parametrize("command, extra", [
    ("state", []),
    ("state", ["--as-of", "2026-03-01T10:00:02Z"]),  # the instant shared by sw2's two files
    ("history", ["--limit", "100"]),
    ("stats", ["--top", "50"]),
    ("diff", ["--only-host", "sw2", "--dump", "DUMP"]),
])
def test_a_segment_replays_as_its_captures(
    command: str, extra: list[str], caps: Path, segment: Path, spark: SparkSession, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same printed output (counts, tables, history in order), exit status and Parquet results."""
    out = tmp_path / "out"
    outputs = {"state": ["state"], "history": ["history"], "diff": ["diff"],
               "stats": ["stats/tables", "stats/keys", "stats/notifications"]}[command]
    dump = tmp_path / "live.json"
    dump.write_text(json.dumps({"PORT_TABLE": {"Ethernet0": {"mtu": "9100"}, "Ethernet12": {"mtu": "1"}}}))
    extra = [str(dump) if arg == "DUMP" else arg for arg in extra]
    got = {}
    for source in (caps, segment):
        code, printed = replay(capsys, command, str(source), "--output", str(out), *extra)
        assert code == (1 if command == "diff" else 0)
        got[source] = (printed, [rows(spark, out / name) for name in outputs], rejects(out))
    assert got[segment] == got[caps]
    printed, results, rejected = got[caps]
    assert "read 41 lines: 30 events, 3 'recording started' markers, 2 blank, 6 rejected" in printed
    assert len(rejected) == 6 and all(r[0].startswith("file:") for r in rejected)
    assert results[0]  # something to compare
    if command == "history":  # in order: equal instants across sw2's rotation, DEL then SET
        ops = [line.split()[4:6] for line in printed.splitlines() if "sw2" in line and "PORT_TABLE" in line]
        assert ops[:5] == [["Ethernet0", "SET"], ["Ethernet4", "SET"], ["Ethernet4", "DEL"],
                           ["Ethernet4", "SET"], ["Ethernet8", "SET"]]
        assert [line for line in printed.splitlines() if "Ethernet8" in line and "sw2" in line][-1].endswith("mtu=9100")
    if command == "state" and not extra:
        state = {(r[1], r[2], r[3]): dict(r[4]) for r in results[0] if r[0] == "sw2"}
        assert state == {
            ("APPL_DB", "PORT_TABLE", "Ethernet0"): {"mtu": "9100", "fec": "rs", "admin_status": "up"},
            ("APPL_DB", "PORT_TABLE", "Ethernet4"): {"speed": "1000"},
            ("APPL_DB", "PORT_TABLE", "Ethernet8"): {"mtu": "9100"},
            ("CONFIG_DB", "PORT", "Ethernet0"): {"speed": "2"},
        }


def test_segments_mix_with_capture_files(
    caps: Path, spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The older of sw2's files as a segment, the live one and swss.rec as text: the order across
    them (an instant both sw2 files hold) and the counts are those of the files alone."""
    older = tmp_path / "older"
    assert replay(capsys, "compact", str(caps / "sw2" / "swssd.capture.jsonl.1"), "--out", str(older))[0] == 0
    out = tmp_path / "out"
    got = {}
    for inputs in ([str(caps)], [str(older), str(caps / "sw2" / "swssd.capture.jsonl"), str(caps / "sw-leaf1")]):
        code, printed = replay(capsys, "state", *inputs, "--output", str(out))
        assert code == 0
        got[len(inputs)] = (printed, rows(spark, out / "state"), rejects(out))
    assert got[3] == got[1]
    assert "read 41 lines: 30 events" in got[1][0]
    sw2 = {r[3]: dict(r[4]) for r in got[3][1] if r[0] == "sw2" and r[2] == "PORT_TABLE"}
    assert sw2["Ethernet8"] == {"mtu": "9100"}  # the live file's SET at the shared instant wins


def test_segments_are_found_among_directories(caps: Path, segment: Path, tmp_path: Path) -> None:
    """A segment under a directory input is one input, never walked into as text."""
    tree = tmp_path / "tree"
    shutil.copytree(caps / "sw2", tree / "sw2")
    shutil.copytree(segment, tree / "archive" / "seg")
    got = resolve_inputs([str(tree)])
    assert got.segments == [str(tree / "archive" / "seg")]
    assert sorted(Path(p).name for p in got.paths) == ["swssd.capture.jsonl", "swssd.capture.jsonl.1"]
    assert resolve_inputs([str(segment)]).paths == []
    # the start-up settings weigh a segment as the bytes it was read from
    assert jvm.is_small([], segment_bytes=1000) and not jvm.is_small([], segment_bytes=None)
    assert not jvm.is_small([], segment_bytes=jvm.SMALL_INPUT_BYTES + 1)


def _damage(segment: Path, tmp_path: Path, how: str) -> Path:
    bad = tmp_path / how
    shutil.copytree(segment, bad)
    manifest = bad / SEGMENT_MARKER
    m = json.loads(manifest.read_text())
    part = next(p for p in sorted((bad / "events").glob("part-*")) if p.stat().st_size > 0)
    if how == "garbage":
        manifest.write_text("{half a manifest")
    elif how == "version":
        manifest.write_text(json.dumps({**m, "version": 99}))
    elif how == "unfinished":
        manifest.write_text(json.dumps({**m, "complete": False}))
    elif how == "fields":
        manifest.write_text(json.dumps({k: v for k, v in m.items() if k != "counts"}))
    elif how == "missing":
        part.unlink()
    elif how == "truncated":
        part.write_bytes(part.read_bytes()[:100])
    elif how == "no-events":
        shutil.rmtree(bad / "events")
    return bad


@pytest.mark.parametrize("how, says", [
    ("garbage", "not a readable capture segment"),
    ("version", "capture segment version 99"),
    ("unfinished", "unfinished capture segment"),
    ("fields", "damaged capture segment manifest"),
    ("missing", "is missing"),
    ("truncated", "holds 100 bytes"),
    ("no-events", "events/ directory is missing"),
])
def test_a_damaged_segment_is_a_one_line_error(
    how: str, says: str, segment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _damage(segment, tmp_path, how)
    for command in ("state", "history", "compact"):
        target = ["--out", str(tmp_path / "new")] if command == "compact" else ["--output", str(tmp_path / "o")]
        assert main([command, str(bad), *target, *SPARK_ARGS]) == 2
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and captured.err.startswith(f"swssd replay: {bad}: ")
        assert says in captured.err and "Traceback" not in captured.err


def test_options_and_out_are_checked_before_spark(
    caps: Path, segment: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import swssd.replay.session

    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("a session was started")

    monkeypatch.setattr(swssd.replay.session, "get_session", no_spark)
    if not (segment.parent / "copy").exists():
        shutil.copytree(segment, segment.parent / "copy")
    cases = [
        (["state", str(segment), "--timezone", "Europe/Paris"], "compacted with --timezone 'UTC', not 'Europe/Paris'"),
        (["state", str(segment), "--host", "sw9"], "compacted with --host (none), not 'sw9'"),
        (["state", str(segment), str(caps / "sw2" / "swssd.capture.jsonl")], "which the inputs hold too"),
        (["state", str(segment), str(segment.parent / "copy")], "which segment"),
        (["compact", str(caps), "--out", str(caps / "sw2")], "exists and is not a capture segment"),
        (["compact", str(segment), "--out", str(segment)], "holds the input"),
        (["compact", str(caps), "--out", str(caps / "sw2" / "swssd.capture.jsonl")], "not a directory"),
    ]
    for argv, says in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, (argv, err)
