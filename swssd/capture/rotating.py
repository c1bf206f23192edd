"""An append-only file with size-based rotation (name -> name.1 -> name.2 ...) and reopen by name.

Used only from the capture writer thread, so it needs no locking. Errors (a full disk, a removed
directory) are raised to that thread, which counts them; the file recovers on the next write.
Files are created 0600 in 0700 directories, and a symbolic link at the path is refused, also on
reopen and after rotation (swssd/ops/files.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from ..ops.files import open_append


class RotatingFile:
    """`max_bytes` <= 0 or `backups` <= 0 disables rotation (as logging's RotatingFileHandler)."""

    def __init__(
        self,
        path: Path,
        max_bytes: int,
        backups: int,
        header: Callable[[], bytes] | None = None,
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._header = header
        self._file: BinaryIO | None = None
        self._size = 0
        # After a failed write the file may end in a partial line; the next write starts with a
        # newline so that partial line stays a line of its own (a reject for replay, not a merge).
        self._broken_line = False
        self.lines_done = 0
        self._opened_before = False

    def open(self) -> None:
        """Open for appending. The header is written to an empty file and, on this object's first
        open, also to a file that already has lines (a new run appending to an old file). A file
        that ends mid-line (the process was killed during a write) gets a newline first, so the
        next line is never glued to the partial one."""
        self._file = open_append(self.path)
        self._size = os.fstat(self._file.fileno()).st_size
        first_open = not self._opened_before
        self._opened_before = True
        if self._size == 0:
            self._broken_line = False
        elif not self._broken_line and not self._ends_with_newline(self._file):
            self._broken_line = True
        if self._size == 0 or first_open:
            if self._broken_line:
                self._write(b"\n")
                self._broken_line = False
            if self._header is not None:
                self._write(self._header())

    def _ends_with_newline(self, f: BinaryIO) -> bool:
        try:
            return os.pread(f.fileno(), 1, self._size - 1) == b"\n"
        except OSError:
            return True

    @property
    def is_open(self) -> bool:
        return self._file is not None

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None

    def reopen(self) -> None:
        """Close and open again by name: after logrotate moved the file, writing goes to a new one."""
        self.close()
        self.open()

    def write_lines(self, lines: Sequence[bytes]) -> None:
        """Append whole lines, rotating before a line that would overflow max_bytes.

        `lines_done` tells, also after an OSError, how many of the lines were written in full.
        """
        self.lines_done = 0
        if self._file is None:
            self.open()
        if self._broken_line:
            self._write(b"\n")
            self._broken_line = False
        chunk: list[bytes] = []
        chunk_size = 0
        for line in lines:
            if self._rotation_due(chunk_size + len(line)):
                if chunk:
                    self._write(b"".join(chunk))
                    self.lines_done += len(chunk)
                    chunk, chunk_size = [], 0
                if self._rotation_due(len(line)):
                    self.rotate()
            chunk.append(line)
            chunk_size += len(line)
        if chunk:
            self._write(b"".join(chunk))
            self.lines_done += len(chunk)

    def rotate(self) -> None:
        self.close()
        for i in range(self.backups - 1, 0, -1):
            older = self._backup(i)
            if older.exists():
                os.replace(older, self._backup(i + 1))
        if self.path.exists():
            os.replace(self.path, self._backup(1))
        self.open()

    def _backup(self, i: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{i}")

    def _rotation_due(self, extra: int) -> bool:
        return (
            self.max_bytes > 0
            and self.backups > 0
            and self._size > 0
            and self._size + extra > self.max_bytes
        )

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        view = memoryview(data)
        try:
            while view:
                n = self._file.write(view)
                self._size += n
                view = view[n:]
        except OSError:
            self._broken_line = True
            raise
