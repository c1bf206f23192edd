"""Inputs checked before and while Spark reads them: damaged `.gz` files, and lines too long to read.

A `.gz` file that is truncated or not gzip at all fails Spark's whole job (hundreds of lines of
Java and Python traceback) at the first record past the damage. Each local `.gz` input is read
through once in a thread while the JVM starts (zlib works outside the GIL); one that cannot be
read is left out and counted as a rejected file, and the other inputs are replayed as usual.

A line longer than the limit (`--max-line-bytes`, 16 MiB by default) would be held whole by
Spark's line reader: one 100 MB line ran the driver out of memory and ended the replay. Hadoop's
line reader skips such lines without holding them when told a maximum length (MAXLENGTH_OPTION,
given to Spark's text source by inputs.load), but silently, and at the end of a split it may still
hand over the first bytes of the line it skipped (inputs.load drops what is longer than the
limit). So every local input is also read through here, in a second thread that Spark does not
wait for, to find those lines: where they are (file, line number) and how long, never their
content. Lines are delimited as Hadoop's reader delimits them (LF, CR or CR LF; a UTF-8 byte
order mark at the start of a file is not part of its first line), so that both agree on which
lines are over the limit; line numbers count LF as an editor does. An input with a scheme
(`hdfs://`) is not read here: a line of it over the limit is left out uncounted.
"""

from __future__ import annotations

import glob
import gzip
import os
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .inputs_doc import DEFAULT_MAX_LINE_BYTES

_CHUNK = 1 << 20
#: the Hadoop setting that makes Spark's text source skip long lines without holding them
MAXLENGTH_OPTION = "mapreduce.input.linerecordreader.line.maxlength"
_BOM = b"\xef\xbb\xbf"
_CR_AS_LF = bytes.maketrans(b"\r", b"\n")


def hadoop_max_length(limit: int) -> int:
    """MAXLENGTH_OPTION for `limit`: Hadoop skips a line when its bytes with the line end (up to
    2) reach its maximum, so every line of up to `limit` bytes is read, and what is longer is
    either skipped or reaches Spark longer than `limit` (and is dropped there)."""
    return limit + 3


@dataclass(frozen=True)
class LongLine:
    """A line over the limit: the file, its line number (from 1) and its bytes without the line end."""

    path: str
    line: int
    length: int

    def reason(self, limit: int) -> str:
        return f"line {self.line}: {self.length} bytes, over the limit of {limit} (--max-line-bytes); not read"


class LineScan:
    """Finds the lines longer than `limit` in text fed to it in chunks of at most `chunk_size()`
    bytes: a line that long spans a chunk boundary, so each chunk costs a translate, a find and a
    count in C, and lines within a chunk are never looked at one by one."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._fed = 0
        self._start = 0  # where the current line's text starts
        self._start_line = 1
        self._newlines = 0
        #: (line number, length) of each line over the limit, in order
        self.found: list[tuple[int, int]] = []

    def chunk_size(self) -> int:
        """Lines inside one chunk are at most this long minus 2: never over the limit."""
        return min(_CHUNK, self.limit)

    def feed(self, chunk: bytes) -> None:
        if self._fed == 0 and chunk.startswith(_BOM):
            self._start = len(_BOM)
        # CR ends a line for Hadoop (CR LF leaves an empty one between, never too long)
        ends = chunk.translate(_CR_AS_LF) if b"\r" in chunk else chunk
        newlines = chunk.count(b"\n")
        first = ends.find(b"\n")
        if first >= 0:
            self._close(self._fed + first)
            last = ends.rfind(b"\n")
            self._start = self._fed + last + 1
            self._start_line = self._newlines + newlines - chunk.count(b"\n", last + 1) + 1
        self._newlines += newlines
        self._fed += len(chunk)

    def end(self) -> None:
        """The input is over: its last line may have no line end."""
        self._close(self._fed)

    def _close(self, end: int) -> None:
        if end - self._start > self.limit:
            self.found.append((self._start_line, end - self._start))


def scan(path: str, limit: int) -> tuple[list[LongLine], str | None]:
    """The lines of local file `path` over `limit`, and why it cannot be read to its end (a `.gz`
    file that is not gzip or is cut short, or any file that cannot be opened); None when it can."""
    lines = LineScan(limit)
    try:
        with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
            while chunk := f.read(lines.chunk_size()):
                lines.feed(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        if path.endswith(".gz"):
            return [], f"not a readable gzip file: {exc}"
        return [], None  # Spark reports a plain file it cannot read itself, as before
    lines.end()
    return [LongLine(path, n, length) for n, length in lines.found], None


def _local_files(path: str) -> list[str]:
    """The local files `path` stands for, as Spark reads them: itself, what a glob matches, the
    files in a directory (names starting with `.` or `_` left out); none for a path with a scheme."""
    local = path.removeprefix("file://")
    if "://" in local:
        return []
    matches = sorted(glob.glob(local)) if glob.has_magic(local) else [local]
    files = []
    for match in matches:
        if os.path.isdir(match):
            files += sorted(e.path for e in os.scandir(match) if e.is_file() and not e.name.startswith((".", "_")))
        else:
            files.append(match)
    return files


class InputCheck:
    """The check of the local inputs among `paths`, running in two threads from construction: the
    `.gz` files (which Spark must not be given when damaged), and the others (which only the
    counts of rejects wait for)."""

    def __init__(self, paths: Sequence[str], limit: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.limit = limit
        local = [(p, f) for p in paths for f in _local_files(p)]
        self._found: dict[str, str] = {}
        self._long: list[LongLine] = []
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(group,), name=f"swssd-input-check-{i}", daemon=True)
            for i, group in enumerate(([x for x in local if x[1].endswith(".gz")],
                                       [x for x in local if not x[1].endswith(".gz")]))
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, files: list[tuple[str, str]]) -> None:
        """`files`: (the input given, a local file it stands for)."""
        for given, path in files:
            long_lines, problem = scan(path, self.limit)
            with self._lock:
                if problem is not None:
                    self._found[given] = problem
                else:
                    self._long.extend(long_lines)

    def unreadable(self) -> dict[str, str]:
        """Path -> why, once the `.gz` files are checked (waits for them)."""
        self._threads[0].join()
        return dict(self._found)

    def long_lines(self) -> tuple[LongLine, ...]:
        """The lines over the limit in the readable inputs, once every input is checked (waits)."""
        for thread in self._threads:
            thread.join()
        with self._lock:
            return tuple(sorted(self._long, key=lambda x: (x.path, x.line)))


def file_uri(path: str) -> str:
    """How Spark names a local input file in a reject's `source`."""
    return path if "://" in path else Path(path).absolute().as_uri().replace("file:///", "file:/", 1)
