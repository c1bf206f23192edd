"""Inputs checked before and while Spark reads them: damaged `.gz` files, and lines too long to read.

A `.gz` file that is truncated or not gzip at all fails Spark's whole job (hundreds of lines of
Java and Python traceback) at the first record past the damage. Each local `.gz` input is read
through once in a thread while the JVM starts (zlib works outside the GIL). One with no readable
text is left out and counted as a rejected file; one damaged after some text (a capture cut short
by a crash or a full disk) has its complete lines up to the damage compressed again into a private
temporary directory, which Spark reads in its place (inputs.py names the lines by the original
file), and the cut is counted as one rejected line naming the file and the offset. The other
inputs are replayed as usual.

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
import shutil
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .inputs_doc import DEFAULT_MAX_LINE_BYTES

_CHUNK = 1 << 20
#: the Hadoop setting that makes Spark's text source skip long lines without holding them
MAXLENGTH_OPTION = "mapreduce.input.linerecordreader.line.maxlength"
_BOM = b"\xef\xbb\xbf"
_CR_AS_LF = bytes.maketrans(b"\r", b"\n")
#: the two kinds of line a file may hold, which inputs.py reads apart: swssd's JSON records (a
#: line starting with `{`) and swss.rec lines (any other)
JSON_LINES, REC_LINES = "json", "rec"
#: what a file may hold when it is not known
ALL_LINE_KINDS = frozenset({JSON_LINES, REC_LINES})


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
    count in C, and lines within a chunk are never looked at one by one. Notes on the way which
    kinds of line the text may hold (`kinds`), with no more passes over a chunk than it needs:
    the lines' ends are counted once, and nothing more once both kinds are seen (at 8M events,
    the scan took as long as inflating the `.gz` files when it counted them three times)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._fed = 0
        self._start = 0  # where the current line's text starts
        self._start_line = 1
        self._newlines = 0
        #: (line number, length) of each line over the limit, in order
        self.found: list[tuple[int, int]] = []
        self._brace = False  # a `{` anywhere
        self._other_start = False  # a line (or what may be one) not starting with `{`
        self._at_line_start = True

    def kinds(self) -> frozenset[str]:
        """The kinds of line the text may hold: never fewer than it does. Without any `{` it holds
        no JSON record; it holds swss.rec lines only if some line does not start with `{` (a CR
        LF line end counts as a line that does not, so such a text is taken for both)."""
        kinds = {JSON_LINES} if self._brace else set()
        if self._other_start or not self._brace:
            kinds.add(REC_LINES)
        return frozenset(kinds)

    def chunk_size(self) -> int:
        """Lines inside one chunk are at most this long minus 2: never over the limit."""
        return min(_CHUNK, self.limit)

    def feed(self, chunk: bytes) -> None:
        body = chunk
        if self._fed == 0 and chunk.startswith(_BOM):
            self._start = len(_BOM)
            body = chunk[len(_BOM):]
        newlines = chunk.count(b"\n")
        # CR ends a line for Hadoop (CR LF leaves an empty one between, never too long)
        if b"\r" in chunk:
            ends = chunk.translate(_CR_AS_LF)
            self._note_kinds(body, ends, ends.count(b"\n"))
        else:
            ends = chunk
            self._note_kinds(body, ends, newlines)
        first = ends.find(b"\n")
        if first >= 0:
            self._close(self._fed + first)
            last = ends.rfind(b"\n")
            self._start = self._fed + last + 1
            self._start_line = self._newlines + newlines - chunk.count(b"\n", last + 1) + 1
        self._newlines += newlines
        self._fed += len(chunk)

    def _note_kinds(self, body: bytes, ends: bytes, line_ends: int) -> None:
        """`line_ends`: the line ends in `ends` (the chunk with CR as LF)."""
        if self._brace and self._other_start:
            return  # both kinds: nothing more to learn
        brace = b"{" in body
        self._brace = self._brace or brace
        if not self._other_start:
            if self._at_line_start and body and not body.startswith(b"{"):
                self._other_start = True
            else:
                # the lines starting inside this chunk (a line end closing it starts one in the
                # next), against those starting with `{`
                starts = line_ends - ends.endswith(b"\n")
                self._other_start = starts > (ends.count(b"\n{") if brace else 0)
        if body:
            self._at_line_start = ends.endswith(b"\n")

    def end(self) -> None:
        """The input is over: its last line may have no line end."""
        self._close(self._fed)

    def _close(self, end: int) -> None:
        if end - self._start > self.limit:
            self.found.append((self._start_line, end - self._start))


@dataclass(frozen=True)
class Cut:
    """A `.gz` input whose data ends or breaks before the end of its stream (a capture cut short
    by a crash or a full disk): its lines up to the cut are read from `copy` (the readable text,
    compressed again), and the cut is one rejected line."""

    path: str
    copy: str
    #: where the damage is: bytes of the file that could be read, and of text they held
    offset: int
    text_bytes: int
    error: str

    def reason(self) -> str:
        return (f"gzip data cut or damaged at byte {self.offset} of the file ({self.error}): the lines up to "
                f"byte {self.text_bytes} of its text were read, the rest is lost")


class _Gunzip:
    """A `.gz` file read in chunks as Spark's reader would (members one after another), noting
    where the readable data ends when it is damaged."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0  # bytes of the file the text so far came from
        self.text = 0  # bytes of text so far
        self.error: str | None = None

    def chunks(self) -> Iterator[bytes]:
        with open(self.path, "rb") as f:
            unzip = zlib.decompressobj(zlib.MAX_WBITS | 16)
            pending = b""  # data of the file not given to zlib yet
            started = False  # whether the member being read has begun
            while True:
                data = pending or f.read(_CHUNK)
                pending = b""
                if not data:
                    if started and not unzip.eof:
                        self.error = "the file ends inside a gzip stream"
                    return
                started = True
                try:
                    out = unzip.decompress(data, _CHUNK)
                except zlib.error as exc:
                    self.error = f"not gzip data: {exc}"
                    return
                used = len(data) - len(unzip.unused_data) - len(unzip.unconsumed_tail)
                self.offset += used
                self.text += len(out)
                if out:
                    yield out
                if unzip.eof:  # the next member, if any, starts after this one
                    pending = unzip.unused_data + unzip.unconsumed_tail
                    unzip = zlib.decompressobj(zlib.MAX_WBITS | 16)
                    started = False
                else:
                    pending = unzip.unconsumed_tail


def scan(path: str, limit: int, repair_dir: Callable[[], str] | None = None) -> tuple[
        list[LongLine], str | None, Cut | None, frozenset[str]]:
    """The lines of local file `path` over `limit`; why it cannot be read at all (a `.gz` file with
    no readable text, any file that cannot be opened), None when it can; for a `.gz` file damaged
    after some text, its Cut, the readable lines written again under `repair_dir()`; and the kinds
    of line it may hold (both when it cannot be read through)."""
    lines = LineScan(limit)
    gunzip = _Gunzip(path) if path.endswith(".gz") else None
    try:
        if gunzip is not None:
            for chunk in gunzip.chunks():
                for start in range(0, len(chunk), lines.chunk_size()):
                    lines.feed(chunk[start:start + lines.chunk_size()])
        else:
            with open(path, "rb") as f:
                while chunk := f.read(lines.chunk_size()):
                    lines.feed(chunk)
    except OSError as exc:
        if gunzip is not None:
            return [], f"not a readable gzip file: {exc}", None, ALL_LINE_KINDS
        return [], None, None, ALL_LINE_KINDS  # Spark reports a plain file it cannot read itself, as before
    if gunzip is not None and gunzip.error is not None:
        if gunzip.text == 0 or repair_dir is None:
            return [], f"not a readable gzip file: {gunzip.error}", None, ALL_LINE_KINDS
        cut = _repair(gunzip, repair_dir())
        found = [(n, length) for n, length in lines.found]  # the cut line itself is not read
        return [LongLine(path, n, length) for n, length in found if n < cut[1]], None, cut[0], lines.kinds()
    lines.end()
    return [LongLine(path, n, length) for n, length in lines.found], None, None, lines.kinds()



def _repair(damaged: _Gunzip, directory: str) -> tuple[Cut, int]:
    """The readable lines of a damaged `.gz` file (up to its last complete line) compressed again
    under `directory`, keeping the file's name (its rotation index); the Cut, and the number of the
    first line not read."""
    folder = tempfile.mkdtemp(dir=directory)
    copy = os.path.join(folder, os.path.basename(damaged.path))
    again = _Gunzip(damaged.path)
    written = newlines = 0
    with gzip.open(copy, "wb", compresslevel=1) as out:
        held = b""  # text after the last line end
        for chunk in again.chunks():
            if again.error is not None:
                break
            end = chunk.rfind(b"\n")
            if end < 0:
                held += chunk
                continue
            out.write(held + chunk[:end + 1])
            written += len(held) + end + 1
            newlines += (held + chunk[:end + 1]).count(b"\n")
            held = chunk[end + 1:]
    cut = Cut(damaged.path, copy, damaged.offset, written, damaged.error or "")
    return cut, newlines + 1


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


#: threads checking `.gz` inputs
GZ_THREADS = 2


class InputCheck:
    """The check of the local inputs among `paths`, running in two threads from construction: the
    `.gz` files (which Spark must not be given when damaged), and the others (which only the
    counts of rejects wait for)."""

    def __init__(self, paths: Sequence[str], limit: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.limit = limit
        local = [(p, f) for p in paths for f in _local_files(p)]
        self._found: dict[str, str] = {}
        self._cuts: dict[str, Cut] = {}
        self._repairs: str | None = None  # a private directory for the readable parts of cut files
        self._long: list[LongLine] = []
        self._kinds: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()
        packed = [x for x in local if x[1].endswith(".gz")]
        # the `.gz` files in GZ_THREADS threads (zlib lets go of the GIL while it inflates): the
        # command waits for them before Spark may read, and a fleet's are most of its text
        groups = [packed[i::GZ_THREADS] for i in range(GZ_THREADS)] + [[x for x in local if not x[1].endswith(".gz")]]
        self._threads = [
            threading.Thread(target=self._run, args=(group,), name=f"swssd-input-check-{i}", daemon=True)
            for i, group in enumerate(groups)
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, files: list[tuple[str, str]]) -> None:
        """`files`: (the input given, a local file it stands for)."""
        for given, path in files:
            # a cut file is read from its repaired copy in its place: only when given by itself
            long_lines, problem, cut, kinds = scan(path, self.limit, self._repair_dir if given == path else None)
            with self._lock:
                self._kinds[given] = self._kinds.get(given, frozenset()) | kinds
                if problem is not None:
                    self._found[given] = problem
                else:
                    self._long.extend(long_lines)
                if cut is not None:
                    self._cuts[given] = cut

    def _repair_dir(self) -> str:
        with self._lock:  # two threads may find a cut file
            if self._repairs is None:
                self._repairs = tempfile.mkdtemp(prefix="swssd-replay-cut-")
            return self._repairs

    def _packed_checked(self) -> None:
        for thread in self._threads[:GZ_THREADS]:
            thread.join()

    def unreadable(self) -> dict[str, str]:
        """Path -> why, once the `.gz` files are checked (waits for them)."""
        self._packed_checked()
        with self._lock:
            return dict(self._found)

    def cuts(self) -> dict[str, Cut]:
        """Path -> its Cut, for the `.gz` files damaged after some text (waits for them)."""
        self._packed_checked()
        with self._lock:
            return dict(self._cuts)

    def close(self) -> None:
        """Remove the repaired copies (once Spark no longer reads them), after the `.gz` files'
        check: a command that ends early (its session failed) does not wait for it otherwise."""
        self._packed_checked()
        if self._repairs is not None:
            shutil.rmtree(self._repairs, ignore_errors=True)

    def long_lines(self) -> tuple[LongLine, ...]:
        """The lines over the limit in the readable inputs, once every input is checked (waits)."""
        self._all_checked()
        with self._lock:
            return tuple(sorted(self._long, key=lambda x: (x.path, x.line)))

    def line_kinds(self) -> dict[str, frozenset[str]]:
        """Input -> the kinds of line it may hold (JSON_LINES, REC_LINES), once every input is
        checked (waits); an input that is not a local file is not there (it may hold both)."""
        self._all_checked()
        with self._lock:
            return dict(self._kinds)

    def _all_checked(self) -> None:
        for thread in self._threads:
            thread.join()


def file_uri(path: str) -> str:
    """How Spark names a local input file in a reject's `source`."""
    return path if "://" in path else Path(path).absolute().as_uri().replace("file:///", "file:/", 1)
