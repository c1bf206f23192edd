"""Which files a replay reads, decided on the local file system before Spark starts.

An input that matches nothing is an error at once (not after the JVM's start-up); a directory
stands for every file under it, and a glob for what it matches (names starting with `.` or `_`
left out, as Spark does: `_SUCCESS`, `.crc`); inputs
with a scheme (`hdfs://`, `s3a://`, ...) are handed to Spark as they are.

A directory holding SEGMENT_MARKER is a columnar capture segment (segment.py), wherever it is met
(named, matched by a glob, or under a directory named): it is one input, read as Parquet, and
nothing under it is read as text. Segments are recognised on the local file system only.

The host of a swss.rec written by swssd: the daemon keeps its host name beside the file
(swssd.capture.HOST_FILE_NAME); `recorded_hosts` reads it for the directories of the inputs.

One stream, counted once: the daemon with `capture.rec = true` writes the same events twice into
one directory, as JSON Lines (lossless) and as swss.rec. When the files to read hold both kinds in
one directory, that directory's swss.rec files are left out and named in a note; naming swss.rec
files alone reads them.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .readable import file_uri

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: swss.rec, rotated (swss.rec.1) and compressed (swss.rec.1.gz)
_REC = re.compile(r"^swss\.rec(\.\d+)?(\.gz)?$")
#: a JSON Lines capture, rotated and compressed likewise
_JSONL = re.compile(r"\.jsonl(\.\d+)?(\.gz)?$")
#: what a HOST_FILE_NAME may hold: one host name (no control characters, no `/`)
_HOST_NAME = re.compile(r"^[^\x00-\x1f\x7f/]{1,255}$")
_HOST_FILE_BYTES = 1024


#: the file that makes a directory a capture segment (its manifest, segment.py)
SEGMENT_MARKER = "_swssd_segment.json"


class NoInputError(ValueError):
    """An input names nothing that exists."""


@dataclass
class ResolvedInputs:
    """The files to read, and what was decided on the way."""

    paths: list[str]
    #: capture segment directories (read as Parquet, not as text)
    segments: list[str] = field(default_factory=list)
    #: swss.rec files left out: a JSON Lines capture beside them holds the same events
    skipped: dict[str, list[str]] = field(default_factory=dict)
    #: symbolic links under an input directory that lead out of it: not read
    links: list[str] = field(default_factory=list)

    def notes(self) -> list[str]:
        """What to tell the user before the job runs."""
        notes = [
            f"note: {len(names)} swss.rec file(s) in {directory} left out: the JSON Lines capture there "
            "holds the same events (name the swss.rec files alone to read them)"
            for directory, names in sorted(self.skipped.items())
        ]
        if self.links:
            shown = ", ".join(self.links[:3]) + (", ..." if len(self.links) > 3 else "")
            notes.append(f"note: {len(self.links)} symbolic link(s) leading out of the input directory not "
                         f"followed: {shown} (name a file itself to read it)")
        return notes


def _is_hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def is_segment(path: Path) -> bool:
    return (path / SEGMENT_MARKER).is_file()


def _inside(path: Path, directory: Path) -> bool:
    """Whether `path`, its links resolved, lies in `directory` (resolved)."""
    return path.resolve().is_relative_to(directory.resolve())


def _under(directory: Path, links: list[str]) -> tuple[list[Path], list[Path]]:
    """The files under `directory` and the segments met on the way (not walked into). A symbolic
    link that leads out of `directory` is not followed (a capture folder must not make a replay
    read, and copy into its rejects, a file it points at elsewhere): it goes to `links`."""
    found: list[Path] = []
    segments: list[Path] = []
    for root, dirs, files in os.walk(directory):
        if is_segment(Path(root)):
            segments.append(Path(root))
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
        for name in sorted(files):
            path = Path(root) / name
            if _is_hidden(name):
                continue
            if path.is_symlink() and not _inside(path, directory):
                links.append(str(path))
                continue
            found.append(path)
    return found, segments


def _expand(text: str, links: list[str]) -> tuple[list[Path], list[Path]]:
    local = text.removeprefix("file://")
    if glob.has_magic(local):
        matches = [Path(p) for p in sorted(glob.glob(local)) if not _is_hidden(Path(p).name)]
    else:
        matches = [Path(local)] if os.path.exists(local) else []
    if not matches:
        raise NoInputError(f"no file matches {text!r}")
    files: list[Path] = []
    segments: list[Path] = []
    for path in matches:
        if not path.is_dir():
            files.append(path)
            continue
        found, met = _under(path, links)
        segments.extend(met)
        # an empty directory stays itself: Spark reads it as no lines (and the user is warned)
        files.extend(found or ([] if met else [path]))
    return files, segments


def _drop_rec_beside_jsonl(files: list[Path]) -> tuple[list[Path], dict[str, list[str]]]:
    jsonl_dirs = {f.parent for f in files if _JSONL.search(f.name)}
    kept: list[Path] = []
    skipped: dict[str, list[str]] = {}
    for f in files:
        if f.parent in jsonl_dirs and _REC.match(f.name):
            skipped.setdefault(str(f.parent), []).append(f.name)
        else:
            kept.append(f)
    return kept, skipped


def resolve_inputs(inputs: Sequence[str]) -> ResolvedInputs:
    """The files and segments to read for the command line's INPUTs; NoInputError when one
    matches nothing."""
    remote = [text for text in inputs if _SCHEME.match(text) and not text.startswith("file://")]
    local: dict[Path, None] = {}  # in order, once each
    segments: dict[Path, None] = {}
    links: list[str] = []
    for text in inputs:
        if text not in remote:
            found, met = _expand(text, links)
            local.update(dict.fromkeys(found))
            segments.update(dict.fromkeys(met))
    files, skipped = _drop_rec_beside_jsonl(list(local))
    return ResolvedInputs([*map(str, files), *remote], list(map(str, segments)), skipped, links)


def recorded_host(directory: Path) -> str | None:
    """The host name swssd's capture writer keeps in `directory` (HOST_FILE_NAME); None when there
    is none, or what is there is not one host name (a link, a FIFO, several lines: not read)."""
    # here, not at the top: the command line resolves its inputs before the JVM starts, and
    # swssd.capture's imports would delay that start
    from ..capture import HOST_FILE_NAME

    path = directory / HOST_FILE_NAME
    try:
        if path.is_symlink() or not path.is_file():
            return None
        with path.open("rb") as f:
            text = f.read(_HOST_FILE_BYTES).decode("utf-8").removesuffix("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return text if _HOST_NAME.match(text) else None


def recorded_hosts(paths: Sequence[str]) -> dict[str, str]:
    """Directory (as Spark names it in a file's path) -> the host swssd recorded there, for the
    directories of the local files among `paths` that have one."""
    found: dict[str, str] = {}
    local = [Path(p.removeprefix("file://")) for p in paths if not _SCHEME.match(p) or p.startswith("file://")]
    for directory in dict.fromkeys(p if p.is_dir() else p.parent for p in local):
        host = recorded_host(directory)
        if host is not None:
            found[file_uri(str(directory))] = host
    return found
