"""Files swssd writes (captures, the log): 0600 in 0700 directories, and a symlink at the path is
refused (not followed, its target unchanged) at open, on reopen (SIGHUP) and after rotation."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from structlog.testing import capture_logs

from swssd import KeyOpFieldsValues as K
from swssd.capture import CaptureWriter
from swssd.capture.rotating import RotatingFile
from swssd.ops import logs as swssd_logging
from swssd.ops.files import UnsafeFileError, open_append

TARGET_TEXT = "a file the daemon must never write to\n"


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """What an attacker's symlink points at."""
    path = tmp_path / "victim"
    path.write_text(TARGET_TEXT)
    return path


@pytest.fixture
def open_umask() -> Iterator[None]:
    """umask 0: the modes must come from swssd, not from the umask."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_files_are_0600_in_new_0700_directories(tmp_path: Path, open_umask: None) -> None:
    path = tmp_path / "a" / "b" / "file"
    with open_append(path) as f:
        f.write(b"x\n")
    assert mode(path) == 0o600
    assert mode(tmp_path / "a") == 0o700 and mode(tmp_path / "a" / "b") == 0o700
    assert path.read_bytes() == b"x\n"


def test_a_symlink_is_refused_with_one_line_and_its_target_unchanged(tmp_path: Path, target: Path) -> None:
    link = tmp_path / "log"
    link.symlink_to(target)
    with pytest.raises(UnsafeFileError) as info:
        open_append(link)
    assert str(info.value) == f"{link} is a symbolic link; swssd does not follow it"
    assert target.read_text() == TARGET_TEXT


def test_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFileError, match="is not a regular file"):
        open_append(fifo)


def test_rotation_does_not_follow_symlinks(tmp_path: Path, target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = RotatingFile(tmp_path / "cap", max_bytes=10, backups=3)
    f.write_lines([b"0123456\n"])
    (tmp_path / "cap.1").symlink_to(target)  # a link among the backups is renamed, never written through
    real_replace = os.replace

    def replace_then_plant(src: str | Path, dst: str | Path) -> None:
        real_replace(src, dst)
        if Path(src) == tmp_path / "cap":  # someone quick puts a link where the new file is to be opened
            (tmp_path / "cap").symlink_to(target)

    monkeypatch.setattr(os, "replace", replace_then_plant)
    with pytest.raises(UnsafeFileError):
        f.write_lines([b"789abcd\n"])  # rotates, then opens cap again: refused
    f.close()
    assert target.read_text() == TARGET_TEXT
    assert (tmp_path / "cap.2").is_symlink() and (tmp_path / "cap.1").read_bytes() == b"0123456\n"


async def test_capture_reopen_refuses_a_symlink_and_writes_again_once_it_is_gone(
    tmp_path: Path, target: Path
) -> None:
    w = CaptureWriter(tmp_path / "capture", host="h")
    await w.start()
    w.record("APPL_DB", "T", ":", [K("a", "SET", [("f", "1")])])
    await w.flush()
    assert mode(w.path) == 0o600 and mode(w.path.parent) == 0o700
    os.rename(w.path, tmp_path / "rotated")  # logrotate moved it; someone plants a link
    w.path.symlink_to(target)
    with capture_logs() as logs:
        w.reopen()
        w.record("APPL_DB", "T", ":", [K("b", "SET", [("f", "2")])])
        await w.flush()
        assert target.read_text() == TARGET_TEXT
        assert [e["error"] for e in logs if e["log_level"] == "error"] == [
            f"{w.path} is a symbolic link; swssd does not follow it"
        ]
        w.path.unlink()
        w.record("APPL_DB", "T", ":", [K("c", "SET", [("f", "3")])])
        await w.close()
    assert [json.loads(line)["key"] for line in w.path.read_text().splitlines()] == ["c"]
    assert [json.loads(line)["key"] for line in (tmp_path / "rotated").read_text().splitlines()] == ["a"]
    assert (w.written, w.dropped) == (2, 1)


async def test_capture_start_with_a_symlink_is_a_warning_not_an_error(tmp_path: Path, target: Path) -> None:
    (tmp_path / "swssd.capture.jsonl").symlink_to(target)
    w = CaptureWriter(tmp_path, host="h", retry_interval=0.05)
    with capture_logs() as logs:
        await w.start()
        w.record("APPL_DB", "T", ":", [K("a", "SET", [("f", "1")])])
        await w.close()
    assert [(e["log_level"], e["error"]) for e in logs] == [
        ("warning", f"{tmp_path / 'swssd.capture.jsonl'} is a symbolic link; swssd does not follow it")
    ]
    assert target.read_text() == TARGET_TEXT


@pytest.fixture
def restore_logging() -> Iterator[None]:
    yield
    swssd_logging.configure("console", "info")
    structlog.reset_defaults()


def test_log_file_is_0600_and_a_symlink_is_refused_at_start_and_on_reopen(
    tmp_path: Path, target: Path, open_umask: None, restore_logging: None
) -> None:
    log_file = tmp_path / "logs" / "swssd.log"
    log = structlog.get_logger("t")
    swssd_logging.configure("json", "info", log_file)
    log.info("first")
    assert mode(log_file) == 0o600 and mode(log_file.parent) == 0o700
    os.rename(log_file, tmp_path / "logs" / "swssd.log.1")
    log_file.symlink_to(target)
    with pytest.raises(UnsafeFileError):
        swssd_logging.reopen()
    log.info("second")  # still to the file open before
    assert target.read_text() == TARGET_TEXT
    events = [json.loads(line)["event"] for line in (tmp_path / "logs" / "swssd.log.1").read_text().splitlines()]
    assert events == ["first", "second"]
    with pytest.raises(UnsafeFileError):
        swssd_logging.configure("json", "info", log_file)
    assert target.read_text() == TARGET_TEXT
