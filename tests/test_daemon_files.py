"""`swssd run` and its files: a capture directory it cannot write at start is one warning and
retried while changes are delivered (capture is optional); symlinks planted at the capture or
log path are refused, at start and on SIGHUP, and their targets stay unchanged."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from daemon_harness import DaemonProcess, read_records, wait_until, write_config
from swssd import DBConnector, ProducerStateTable
from swssd.redis.embedded_redis import EmbeddedRedis

TARGET_TEXT = "a file the daemon must never write to\n"


@pytest.fixture
async def appl(clean_redis: EmbeddedRedis) -> AsyncIterator[DBConnector]:
    db = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    yield db
    await db.close()


def config(tmp_path: Path, capture_dir: Path, **logging: str) -> dict[str, Any]:
    return {
        "logging": {"format": "json", "level": "info", **logging},
        "capture": {"enabled": True, "directory": str(capture_dir), "retry_interval": 0.2},
        "orchs": [{"plugin": "orch_plugins:RecordingOrch", "tables": [{"table": "FILES"}],
                   "options": {"record": str(tmp_path / "r.jsonl")}}],
    }


def captured_keys(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["key"] for line in path.read_text().splitlines() if line.endswith("}")]


async def test_unwritable_capture_directory_at_start_is_a_warning_and_retried(
    clean_redis: EmbeddedRedis, appl: DBConnector, tmp_path: Path
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")  # the capture directory cannot be made while this file is in its path
    capture_dir = blocker / "capture"
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, config(tmp_path, capture_dir)), tmp_path / "log")
    try:
        daemon.wait_ready()
        producer = ProducerStateTable(appl, "FILES")
        await producer.set("before", [("f", "1")])
        assert wait_until(lambda: len(read_records(tmp_path / "r.jsonl")) == 1, 20)  # delivered all the same
        warnings = [e for e in daemon.logs() if e.get("level") == "warning" and "capture" in e.get("event", "")]
        assert len(warnings) == 1 and "Not a directory" in warnings[0]["error"], warnings
        blocker.unlink()
        daemon.wait_for_log("capture writing again", timeout=20)
        await producer.set("after", [("f", "2")])
        assert wait_until(lambda: captured_keys(capture_dir / "swssd.capture.jsonl") == ["after"], 20)
        assert daemon.stop() == 0
        assert [r[1] for r in read_records(tmp_path / "r.jsonl")] == ["before", "after"]
    finally:
        daemon.kill()


async def test_symlinks_at_capture_and_log_paths_are_refused_at_start_and_on_sighup(
    clean_redis: EmbeddedRedis, appl: DBConnector, tmp_path: Path
) -> None:
    target = tmp_path / "victim"
    target.write_text(TARGET_TEXT)
    capture_dir = tmp_path / "capture"
    capture_dir.mkdir()
    capture_file = capture_dir / "swssd.capture.jsonl"
    capture_file.symlink_to(target)
    log_file = tmp_path / "swssd.log"
    daemon = DaemonProcess(
        write_config(tmp_path, clean_redis, config(tmp_path, capture_dir, file=str(log_file))), tmp_path / "stderr"
    )
    daemon.log_path = log_file
    try:
        daemon.wait_ready()
        warning = next(e for e in daemon.logs() if e.get("level") == "warning" and "capture" in e["event"])
        assert warning["error"] == f"{capture_file} is a symbolic link; swssd does not follow it"
        producer = ProducerStateTable(appl, "FILES")
        await producer.set("k1", [("f", "1")])
        assert wait_until(lambda: len(read_records(tmp_path / "r.jsonl")) == 1, 20)
        capture_file.unlink()
        daemon.wait_for_log("capture writing again", timeout=20)

        # logrotate moves both files away; someone plants links before the SIGHUP
        log_file.rename(tmp_path / "swssd.log.1")
        capture_file.rename(capture_dir / "rotated.jsonl")
        log_file.symlink_to(target)
        capture_file.symlink_to(target)
        daemon.log_path = tmp_path / "swssd.log.1"  # the log goes on there
        daemon.signal(signal.SIGHUP)
        errors = daemon.wait_for_log("log file not reopened; logging goes on to the file open before")
        assert errors[0]["error"] == f"{log_file} is a symbolic link; swssd does not follow it"
        daemon.wait_for_log("reopened log and capture files")
        await producer.set("k2", [("f", "2")])
        assert wait_until(lambda: len(read_records(tmp_path / "r.jsonl")) == 2, 20)
        daemon.wait_for_log("capture write failed; tasks are dropped until it recovers")
        assert daemon.stop() == 0
        assert target.read_text() == TARGET_TEXT
        assert log_file.is_symlink() and capture_file.is_symlink()
    finally:
        daemon.kill()
