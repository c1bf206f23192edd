"""CaptureWriter: record format, swss.rec form, rotation, reopen, a full disk, the bounded queue."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from swssd import KeyOpFieldsValues as K
from swssd.capture import HOST_FILE_NAME, CaptureWriter

TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
REC_TS = r"\d{4}-\d\d-\d\d\.\d\d:\d\d:\d\d\.\d{6}"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB file system of its own (a disk to fill, or to make read-only); needs root."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


async def test_records_are_lossless_json_lines(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="sw1")
    await w.start()
    odd_key = "Ethernet0:1|2\nnext é"
    w.record("APPL_DB", "PORT_TABLE", ":", [K(odd_key, "SET", [("mtu", "9100"), ("alias", "a:b|c")])])
    w.record("APPL_DB", "PORT_TABLE", ":", [K("Ethernet4", "DEL", [])])
    w.record("APPL_DB", "ROUTE_TABLE", ":", [K("10.0.0.0/8", "SET", [("nexthop", "x")])],
             dead_letter=True, reason="retries exhausted")
    await w.close()

    lines = (tmp_path / "swssd.capture.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 4
    assert "é".encode() in lines[0]  # not \u-escaped
    recs = read_jsonl(tmp_path / "swssd.capture.jsonl")
    assert [r["seq"] for r in recs] == [1, 2, 3]
    assert all(TS_RE.match(r["ts"]) for r in recs)
    assert [r["ts"] for r in recs] == sorted(r["ts"] for r in recs)
    first = recs[0]
    assert list(first) == ["ts", "host", "db", "table", "key", "op", "fvs", "seq"]
    assert (first["host"], first["db"], first["table"], first["key"], first["op"]) == (
        "sw1", "APPL_DB", "PORT_TABLE", odd_key, "SET")
    assert first["fvs"] == [["mtu", "9100"], ["alias", "a:b|c"]]
    assert recs[1]["op"] == "DEL" and recs[1]["fvs"] == []
    assert recs[2]["dead_letter"] is True and recs[2]["reason"] == "retries exhausted"
    assert "dead_letter" not in recs[0]
    assert (w.written, w.dropped, w.errors) == (3, 0, 0)


async def test_swss_rec_form(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="sw1", rec=True)
    await w.start()
    w.record("APPL_DB", "INTF_TABLE", ":", [K("PortChannel02:fc00::75/126", "SET", [("scope", "global")])])
    w.record("CONFIG_DB", "QUEUE", "|", [K("Ethernet0|0", "SET", [("scheduler", "scheduler.0")])])
    w.record("APPL_DB", "PORT_TABLE", ":", [K("Ethernet8", "DEL", [])])
    await w.close()
    lines = (tmp_path / "swss.rec").read_text().splitlines()
    assert re.fullmatch(REC_TS + r"\|recording started", lines[0])
    body = [line.split("|", 1) for line in lines[1:]]
    assert all(re.fullmatch(REC_TS, ts) for ts, _ in body)
    assert [rest for _, rest in body] == [
        "INTF_TABLE:PortChannel02:fc00::75/126|SET|scope:global",
        "QUEUE|Ethernet0|0|SET|scheduler:scheduler.0",
        "PORT_TABLE:Ethernet8|DEL",
    ]


async def test_delete_then_set_is_recorded_in_order(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="h")
    await w.start()
    w.record("APPL_DB", "T", ":", [K("k", "DEL", []), K("k", "SET", [("a", "1")])])
    await w.close()
    assert [(r["op"], r["seq"]) for r in read_jsonl(w.path)] == [("DEL", 1), ("SET", 2)]


async def test_swss_rec_has_the_host_of_the_json_records_beside_it(tmp_path: Path) -> None:
    """swss.rec lines name no host: the writer keeps it beside them, private, for a replay."""
    w = CaptureWriter(tmp_path / "capture", host="vm", rec=True)
    await w.start()
    w.record("APPL_DB", "PORT_TABLE", ":", [K("Ethernet0", "SET", [("mtu", "9100")])])
    await w.close()
    host = tmp_path / "capture" / HOST_FILE_NAME
    assert host.read_text() == "vm\n" and host.stat().st_mode & 0o777 == 0o600
    assert read_jsonl(w.path)[0]["host"] == "vm"
    # a link planted there is replaced, not followed
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("theirs\n")
    host.unlink()
    host.symlink_to(elsewhere)
    w = CaptureWriter(tmp_path / "capture", host="vm", rec=True)
    await w.start()
    await w.close()
    assert not host.is_symlink() and host.read_text() == "vm\n" and elsewhere.read_text() == "theirs\n"
    # no swss.rec, no host file
    plain = CaptureWriter(tmp_path / "plain", host="vm")
    await plain.start()
    await plain.close()
    assert not (tmp_path / "plain" / HOST_FILE_NAME).exists()


async def test_size_rotation_keeps_whole_lines(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="h", max_bytes=2000, backups=3, rec=True)
    await w.start()
    for i in range(200):
        w.record("APPL_DB", "T", ":", [K(f"key{i:03d}", "SET", [("f", "v" * 20)])])
        if i % 7 == 0:
            await w.flush()
    await w.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "_swssd_host", "swss.rec", "swss.rec.1", "swss.rec.2", "swss.rec.3",
        "swssd.capture.jsonl", "swssd.capture.jsonl.1", "swssd.capture.jsonl.2", "swssd.capture.jsonl.3",
    ]
    seqs = []
    for name in ["swssd.capture.jsonl.3", "swssd.capture.jsonl.2", "swssd.capture.jsonl.1", "swssd.capture.jsonl"]:
        path = tmp_path / name
        assert 0 < path.stat().st_size <= 2000
        seqs += [r["seq"] for r in read_jsonl(path)]  # every line parses
    assert seqs == list(range(seqs[0], 201))  # oldest backups dropped, order kept
    for name in ["swss.rec", "swss.rec.1"]:
        assert (tmp_path / name).read_text().splitlines()[0].endswith("|recording started")


async def test_reopen_after_logrotate_moves_the_file(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="h", rec=True)
    await w.start()
    w.record("APPL_DB", "T", ":", [K("a", "SET", [("f", "1")])])
    await w.flush()
    os.rename(w.path, tmp_path / "moved.jsonl")
    os.rename(tmp_path / "swss.rec", tmp_path / "swss.rec.moved")
    w.record("APPL_DB", "T", ":", [K("b", "SET", [("f", "2")])])  # still goes to the moved file
    w.reopen()
    w.record("APPL_DB", "T", ":", [K("c", "SET", [("f", "3")])])
    await w.close()
    assert [r["key"] for r in read_jsonl(tmp_path / "moved.jsonl")] == ["a", "b"]
    assert [r["key"] for r in read_jsonl(w.path)] == ["c"]
    rec = (tmp_path / "swss.rec").read_text().splitlines()
    assert rec[0].endswith("|recording started") and rec[1].endswith("|T:c|SET|f:3")


async def test_full_disk_is_counted_not_raised(tmpfs: Path) -> None:
    filler = tmpfs / "filler"
    with pytest.raises(OSError), open(filler, "wb") as f:  # fill it: every capture write fails with ENOSPC
        while True:
            f.write(b"x" * 4096)
            f.flush()
    w = CaptureWriter(tmpfs, host="h")
    with capture_logs() as logs:
        await w.start()
        w.record("APPL_DB", "T", ":", [K(f"k{i}", "SET", [("f", "v" * 8192)]) for i in range(5)])
        await w.flush()
    assert (w.written, w.dropped) == (0, 5) and w.errors >= 1
    assert any("No space left" in str(e.get("error")) for e in logs), logs
    filler.unlink()  # space again: the next write goes through
    w.record("APPL_DB", "T", ":", [K("after", "SET", [("f", "v")])])
    await w.close()
    assert (w.written, w.dropped) == (1, 5)
    lines = w.path.read_text().splitlines()  # what the full disk took of a line stays a line of its own
    assert [(r["key"], r["seq"]) for r in map(json.loads, lines[-1:])] == [("after", 6)]
    assert not any(line.endswith("}") for line in lines[:-1])


async def test_bounded_queue_drops_and_leaves_a_seq_gap(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="h", max_queue=3)
    w.record("APPL_DB", "T", ":", [K(f"k{i}", "SET", [("f", "v")]) for i in range(5)])  # not started yet
    await w.start()
    await w.flush()
    w.record("APPL_DB", "T", ":", [K("late", "SET", [("f", "v")])])
    await w.close()
    w.record("APPL_DB", "T", ":", [K("closed", "SET", [("f", "v")])])
    assert [r["seq"] for r in read_jsonl(w.path)] == [1, 2, 3, 6]
    assert (w.written, w.dropped) == (4, 3)


async def test_unusable_directory_at_start_is_one_warning_and_retried(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where a directory of the capture path must be
    w = CaptureWriter(blocker / "sub", host="h", retry_interval=0.05)
    with capture_logs() as logs:
        await w.start()  # capture is optional: no exception
        assert not w.writing
        w.record("APPL_DB", "T", ":", [K("lost", "SET", [("f", "v")])])
        await w.flush()
        await asyncio.sleep(0.3)  # several retries fail meanwhile: still one line
        assert [e["log_level"] for e in logs] == ["warning"], logs
        assert "Not a directory" in logs[0]["error"] and "retried every 0.05 s" in logs[0]["event"]
        blocker.unlink()
        for _ in range(100):
            if w.writing:
                break
            await asyncio.sleep(0.05)
        assert w.writing, "the capture directory was not retried"
        w.record("APPL_DB", "T", ":", [K("kept", "SET", [("f", "v")])])
        await w.close()
    assert [e["event"] for e in logs[1:]] == ["capture writing again"]
    assert [(r["key"], r["seq"]) for r in read_jsonl(w.path)] == [("kept", 2)]
    assert (w.written, w.dropped) == (1, 1)


async def test_read_only_directory_at_start_is_retried_until_writable(tmpfs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True, capture_output=True)
    w = CaptureWriter(tmpfs / "capture", host="h", rec=True, retry_interval=0.05)
    with capture_logs() as logs:
        await w.start()
        assert not w.writing
        assert "Read-only file system" in logs[0]["error"], logs
        subprocess.run(["mount", "-o", "remount,rw", str(tmpfs)], check=True, capture_output=True)
        for _ in range(100):
            if w.writing:
                break
            await asyncio.sleep(0.05)
        w.record("APPL_DB", "T", ":", [K("k", "SET", [("f", "v")])])
        await w.close()
    assert [r["key"] for r in read_jsonl(w.path)] == ["k"]
    assert (tmpfs / "capture" / "swss.rec").read_text().splitlines()[0].endswith("|recording started")


# -- table kinds --------------------------------------------------------------------------


async def test_kind_is_recorded_except_for_state(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="h")
    await w.start()
    w.record("APPL_DB", "PORT_TABLE", ":", [K("Ethernet0", "SET", [("mtu", "9100")])])  # default: state
    w.record("APPL_DB", "ROUTE_TABLE", ":", [K("10.0.0.0/8", "SET", [("nexthop", "x")])], kind="state")
    w.record("APPL_DB", "LLDP_TABLE", ":", [K("Ethernet0", "DEL", [])], kind="queue")
    w.record("CONFIG_DB", "PORT", "|", [K("Ethernet0", "SET", [("speed", "100000")])], kind="subscriber")
    w.record("APPL_DB", "NOTIFICATIONS", ":", [K('[{"port_id":"oid:0x1"}]', "port_state_change",
                                                 [("oper", "down")])], kind="notification")
    w.record("CONFIG_DB", "PORT", "|", [K("Ethernet4", "SET", [("speed", "x")])], kind="subscriber",
             dead_letter=True, reason="bad speed")
    await w.close()
    recs = read_jsonl(w.path)
    assert [r.get("kind") for r in recs] == [None, None, "queue", "subscriber", "notification", "subscriber"]
    base = ["ts", "host", "db", "table", "key", "op", "fvs", "seq"]
    assert list(recs[0]) == list(recs[1]) == base  # state lines are as they always were
    assert list(recs[3]) == [*base, "kind"]
    assert list(recs[5]) == [*base, "kind", "dead_letter", "reason"]
    note = recs[4]
    assert (note["table"], note["key"], note["op"], note["fvs"]) == (
        "NOTIFICATIONS", '[{"port_id":"oid:0x1"}]', "port_state_change", [["oper", "down"]])
    assert [r["seq"] for r in recs] == list(range(1, 7))


async def test_unknown_kind_is_refused_before_anything_is_queued(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="h")
    await w.start()
    with pytest.raises(ValueError, match="unknown capture kind 'keyspace'"):
        w.record("APPL_DB", "T", ":", [K("a", "SET", [("f", "1")])], kind="keyspace")  # type: ignore[arg-type]
    w.record("APPL_DB", "T", ":", [K("b", "SET", [("f", "1")])])
    await w.close()
    assert [(r["key"], r["seq"]) for r in read_jsonl(w.path)] == [("b", 1)]


async def test_swss_rec_form_per_kind(tmp_path: Path) -> None:
    """state, queue and subscriber tasks are SET/DEL lines (a subscriber's SET with the full
    entry, as orchagent records CONFIG_DB tables); notifications are not in swss.rec at all."""
    w = CaptureWriter(tmp_path, host="h", rec=True)
    await w.start()
    w.record("APPL_DB", "NOTIFICATIONS", ":", [K("data", "port_state_change", [("a", "b")])],
             kind="notification")  # alone in its batch: swss.rec gets nothing, not even an empty write
    await w.flush()
    assert len((tmp_path / "swss.rec").read_text().splitlines()) == 1  # just "recording started"
    w.record("APPL_DB", "PORT_TABLE", ":", [K("Ethernet0", "SET", [("mtu", "9100")])], kind="state")
    w.record("APPL_DB", "LLDP_TABLE", ":", [K("Ethernet0", "SET", [("port", "1")])], kind="queue")
    w.record("CONFIG_DB", "PORT", "|", [K("Ethernet0", "SET", [("speed", "1"), ("mtu", "2")]),
                                        K("Ethernet0", "SET", [("speed", "1")]),
                                        K("Ethernet4", "DEL", [])], kind="subscriber")
    w.record("APPL_DB", "NOTIFICATIONS", ":", [K("data", "SET", [("a", "b")])], kind="notification")
    w.record("APPL_DB", "PORT_TABLE", ":", [K("Ethernet8", "DEL", [])])
    await w.close()
    lines = (tmp_path / "swss.rec").read_text().splitlines()
    assert re.fullmatch(REC_TS + r"\|recording started", lines[0])
    assert [line.split("|", 1)[1] for line in lines[1:]] == [
        "PORT_TABLE:Ethernet0|SET|mtu:9100",
        "LLDP_TABLE:Ethernet0|SET|port:1",
        "PORT|Ethernet0|SET|speed:1|mtu:2",
        "PORT|Ethernet0|SET|speed:1",
        "PORT|Ethernet4|DEL",
        "PORT_TABLE:Ethernet8|DEL",
    ]
    assert len(read_jsonl(w.path)) == 8 and (w.written, w.dropped, w.errors) == (8, 0, 0)


async def test_file_ending_mid_line_gets_a_newline_and_rec_a_started_line(tmp_path: Path) -> None:
    """After a SIGKILL during a write: the partial last line stays a line of its own."""
    jsonl = tmp_path / "swssd.capture.jsonl"
    rec = tmp_path / "swss.rec"
    jsonl.write_bytes(b'{"ts":"2026-11-25T00:00:00.000000Z","seq":1}\n{"ts":"2026-11-25T00:0')
    rec.write_bytes(b"2026-11-25.00:00:00.000000|recording started\n"
                    b"2026-11-25.00:00:00.000001|PORT_TABLE:Ethernet0|SET|mt")
    w = CaptureWriter(tmp_path, host="h", rec=True)
    await w.start()
    w.record("APPL_DB", "PORT_TABLE", ":", [K("Ethernet4", "SET", [("mtu", "9100")])])
    await w.close()
    lines = jsonl.read_bytes().split(b"\n")
    assert lines[1] == b'{"ts":"2026-11-25T00:0' and lines[-1] == b""
    assert json.loads(lines[2])["key"] == "Ethernet4"
    rec_lines = rec.read_text().splitlines()
    assert rec_lines[1].endswith("|SET|mt")
    assert re.fullmatch(REC_TS + r"\|recording started", rec_lines[2])
    assert rec_lines[3].endswith("|PORT_TABLE:Ethernet4|SET|mtu:9100") and len(rec_lines) == 4


async def test_each_start_writes_recording_started_and_whole_files_stay_whole(tmp_path: Path) -> None:
    for run in range(3):
        w = CaptureWriter(tmp_path, host="h", rec=True)
        await w.start()
        w.record("APPL_DB", "T", ":", [K(f"k{run}", "SET", [("a", "1")])])
        await w.close()
    rec_lines = (tmp_path / "swss.rec").read_text().splitlines()
    assert [line.split("|", 1)[1] for line in rec_lines] == [
        "recording started", "T:k0|SET|a:1",
        "recording started", "T:k1|SET|a:1",
        "recording started", "T:k2|SET|a:1",
    ]
    assert [r["key"] for r in read_jsonl(tmp_path / "swssd.capture.jsonl")] == ["k0", "k1", "k2"]


async def test_dead_letters_stay_out_of_swss_rec_and_are_flagged_in_json(tmp_path: Path) -> None:
    w = CaptureWriter(tmp_path, host="h", rec=True)
    await w.start()
    w.record("APPL_DB", "T", ":", [K("good", "SET", [("a", "1")])])
    w.record("APPL_DB", "T", ":", [K("bad", "SET", [("a", "2")])], dead_letter=True,
             reason="handler failed")
    await w.close()
    rec_lines = (tmp_path / "swss.rec").read_text().splitlines()
    assert [line.split("|", 1)[1] for line in rec_lines] == ["recording started", "T:good|SET|a:1"]
    recs = read_jsonl(tmp_path / "swssd.capture.jsonl")
    assert [(r["key"], r.get("dead_letter")) for r in recs] == [("good", None), ("bad", True)]
    assert recs[1]["reason"] == "handler failed"
