"""CaptureWriter: every task the daemon pops, written to JSON Lines (and optionally swss.rec) off the hot path.

`record()` runs on the event loop for each popped batch, so it only stamps each task (UTC time in
microseconds, never going backwards within a run, and `seq` from 1) and puts it on a queue. One
writer thread formats the lines and appends each drained batch with a single write() per file.
A full disk or any other OSError is logged and counted (`errors`, `dropped`) and never reaches
the caller; writing resumes by itself when the file can be written again. Capture is optional:
a directory that cannot be written at start (read-only, full, no permission, a symlink at a
file's path) is one warning line, and opening is retried every `retry_interval` seconds while
the daemon runs on.

swss.rec lines name no host, so beside its swss.rec the writer keeps HOST_FILE_NAME, the host name
its JSON records carry: a replay of that swss.rec names the same host as a replay of the JSON
Lines capture (swssd/replay/inputs.py). The name starts with `_`, so a replay of the directory does
not read it as a capture file (paths.py, and Spark, leave such names out).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from queue import Empty, SimpleQueue

import structlog

from ..fields import KeyOpFieldsValues
from ..ops.files import reason, replace_private
from .format import KINDS, CapturedTask, CaptureKind, jsonl_line, rec_line, rec_started_line
from .rotating import RotatingFile

log = structlog.get_logger(__name__)

MiB = 1024 * 1024
REC_FILE_NAME = "swss.rec"
#: beside swss.rec: the host name of the daemon writing it, and a newline
HOST_FILE_NAME = "_swssd_host"

_BATCH = 4096


class _Control:
    """A request for the writer thread, queued in line with the tasks so it applies in order."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.done = threading.Event()


class CaptureWriter:
    """Append captured tasks to `directory/file_name` (and `directory/swss.rec` when rec=True,
    notifications left out as orchagent leaves them out, and dead-lettered tasks left out as they
    were never applied; the JSON Lines capture keeps them, flagged).

    Each start writes a `recording started` line to swss.rec, and a file left ending mid-line
    (the daemon was killed during a write) gets a newline before the new records.

    Files rotate by size like logging's RotatingFileHandler (name.1 is the newest backup);
    `reopen()` closes and reopens them by name, for logrotate's SIGHUP. At most `max_queue`
    tasks wait for the disk; beyond that new tasks are dropped and counted (their `seq` numbers
    are still used, so a reader sees the gap).
    """

    def __init__(
        self,
        directory: str | Path,
        host: str | None = None,
        max_bytes: int = 64 * MiB,
        backups: int = 10,
        rec: bool = False,
        file_name: str = "swssd.capture.jsonl",
        max_queue: int = 100_000,
        retry_interval: float = 5.0,
    ) -> None:
        self.directory = Path(directory)
        self.host = host or socket.gethostname()
        self.max_queue = max_queue
        self.retry_interval = retry_interval
        self._jsonl = RotatingFile(self.directory / file_name, max_bytes, backups)
        self._rec = (
            RotatingFile(
                self.directory / REC_FILE_NAME,
                max_bytes,
                backups,
                header=lambda: rec_started_line(time.time_ns() // 1000),
            )
            if rec
            else None
        )
        self._queue: SimpleQueue[CapturedTask | _Control] = SimpleQueue()
        self._lock = threading.Lock()
        self._seq = 0
        self._last_us = 0
        self._thread: threading.Thread | None = None
        self._closed = False
        self._failing = False
        #: tasks written in full to the JSON Lines capture
        self.written = 0
        #: OSErrors met while writing either file
        self.errors = 0
        self._dropped_queue = 0
        self._dropped_io = 0

    @property
    def dropped(self) -> int:
        """Tasks not in the JSON Lines capture: queue full, write failed, or recorded after close."""
        return self._dropped_queue + self._dropped_io

    @property
    def path(self) -> Path:
        return self._jsonl.path

    @property
    def rec_path(self) -> Path | None:
        return self._rec.path if self._rec else None

    @property
    def writing(self) -> bool:
        """Whether every capture file is open (False while the directory cannot be used)."""
        return all(f.is_open for f in self._files())

    async def start(self) -> None:
        """Open the files and start the writer thread. Files that cannot be opened are reported in
        one warning and retried by the thread every `retry_interval` seconds; never raises OSError."""
        if self._thread is not None:
            return
        try:
            await asyncio.to_thread(self._open_files)
        except OSError as exc:
            self.errors += 1
            self._failing = True
            log.warning("capture files cannot be written; the daemon runs on, tasks are not captured "
                        f"until they can (retried every {self.retry_interval:g} s)",
                        directory=str(self.directory), error=reason(exc))
        self._thread = threading.Thread(target=self._run, name="swssd-capture", daemon=True)
        self._thread.start()

    def record(
        self,
        db: str,
        table: str,
        separator: str,
        tasks: Iterable[KeyOpFieldsValues],
        *,
        kind: CaptureKind = "state",
        dead_letter: bool = False,
        reason: str | None = None,
    ) -> None:
        """Stamp and enqueue popped tasks; never blocks and never raises for I/O.

        `kind` is the kind of table they were popped from, which decides how a replay applies
        them (see format.py); an unknown kind raises ValueError, as it could not be replayed.
        """
        if kind not in KINDS:
            raise ValueError(f"unknown capture kind {kind!r}; expected one of {sorted(KINDS)}")
        now = time.time_ns() // 1000
        with self._lock:
            if now < self._last_us:
                now = self._last_us
            self._last_us = now
            for key, op, fvs in tasks:
                self._seq += 1
                if self._closed or self._queue.qsize() >= self.max_queue:
                    self._dropped_queue += 1
                    continue
                self._queue.put(
                    CapturedTask(
                        self._seq, now, db, table, separator, key, op, tuple(fvs), dead_letter, reason,
                        kind,
                    )
                )

    def reopen(self) -> None:
        """Close and reopen the files by name once the tasks queued so far are written (SIGHUP)."""
        self._queue.put(_Control("reopen"))

    async def flush(self) -> None:
        """Wait until every task recorded so far is written (or counted as dropped)."""
        if self._thread is None or not self._thread.is_alive():
            return
        request = _Control("flush")
        self._queue.put(request)
        await asyncio.to_thread(request.done.wait)

    async def close(self, timeout: float = 30.0) -> None:
        """Write everything queued, close the files and stop the thread; later records are dropped."""
        with self._lock:
            self._closed = True
        if self._thread is None:
            return
        request = _Control("stop")
        self._queue.put(request)
        finished = await asyncio.to_thread(request.done.wait, timeout)
        if not finished:
            log.error("capture writer did not finish in time", path=str(self.path), timeout=timeout)
            return
        self._thread.join()
        self._thread = None

    # -- writer thread ------------------------------------------------------------------

    def _files(self) -> list[RotatingFile]:
        return [self._jsonl] + ([self._rec] if self._rec else [])

    def _open_files(self) -> None:
        for f in self._files():
            if not f.is_open:
                f.open()
        if self._rec is not None:
            self._write_host()

    def _write_host(self) -> None:
        """HOST_FILE_NAME, unless it already says this host."""
        path, text = self.directory / HOST_FILE_NAME, f"{self.host}\n".encode()
        try:
            if path.is_file() and not path.is_symlink() and path.read_bytes() == text:
                return
        except OSError:
            pass
        replace_private(path, text)

    def _retry_open(self) -> None:
        """Open what could not be opened (quietly while it still fails; one line when it works)."""
        try:
            self._open_files()
        except OSError:
            return
        if self._failing:
            self._failing = False
            log.warning("capture writing again", directory=str(self.directory), errors=self.errors,
                        dropped=self.dropped)

    def _run(self) -> None:
        while True:
            batch: list[CapturedTask] = []
            if self.writing:
                item = self._queue.get()
            else:
                try:
                    item = self._queue.get(timeout=self.retry_interval)
                except Empty:
                    self._retry_open()
                    continue
            while True:
                if isinstance(item, _Control):
                    self._write(batch)
                    batch = []
                    if self._control(item):
                        return
                else:
                    batch.append(item)
                    if len(batch) >= _BATCH:
                        self._write(batch)
                        batch = []
                try:
                    item = self._queue.get_nowait()
                except Empty:
                    break
            self._write(batch)

    def _control(self, request: _Control) -> bool:
        """Apply a control request; True when the thread must end."""
        try:
            if request.kind == "reopen":
                for f in self._files():
                    self._guarded(f, f.reopen)
            elif request.kind == "stop":
                for f in self._files():
                    self._guarded(f, f.close)
                return True
            return False
        finally:
            request.done.set()

    def _write(self, batch: list[CapturedTask]) -> None:
        if not batch:
            return
        host = self.host
        if self._guarded(self._jsonl, self._jsonl.write_lines, [jsonl_line(t, host) for t in batch]):
            self.written += len(batch)
        else:
            self.written += self._jsonl.lines_done
            self._dropped_io += len(batch) - self._jsonl.lines_done
        if self._rec is not None:
            rec_lines = [
                rec_line(t) for t in batch if t.kind != "notification" and not t.dead_letter
            ]
            if rec_lines:
                self._guarded(self._rec, self._rec.write_lines, rec_lines)

    def _guarded(self, f: RotatingFile, action: Callable[..., None], *args: object) -> bool:
        """Run one file operation; an OSError is logged once per failing spell and counted."""
        try:
            action(*args)
        except OSError as exc:
            self.errors += 1
            if not self._failing:
                self._failing = True
                log.error("capture write failed; tasks are dropped until it recovers",
                          path=str(f.path), error=reason(exc))
            return False
        if self._failing and args:
            self._failing = False
            log.warning("capture writing again", path=str(f.path), errors=self.errors,
                        dropped=self.dropped)
        return True
