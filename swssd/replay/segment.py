"""Columnar capture segments: captures read once and kept as Parquet, so that a replay reads
their events without parsing JSON or swss.rec text again (issue 12: JSON parsing was most of a
large replay's time).

A segment is a local directory:

    _swssd_segment.json   the manifest (paths.SEGMENT_MARKER): format and version, the counts of
                          the lines read (lines, events, markers, blank, rejects), the source
                          paths and their bytes, the input options they were read with, the
                          schemas, and every Parquet file with its size
    events/               the parsed events, every column of inputs.EVENT_COLUMNS (`ord` included,
                          so that the order of equal timestamps, rotations and files is kept)
    rejects/              the rejected lines with their reasons (only when there were any)

`swssd replay compact` writes one; every replay command takes one as an input among capture
files. The manifest is written first marked incomplete and replaced once the Parquet is written,
so an interrupted compaction leaves a directory that is refused, not half read. A segment keeps
the events as its input options (--host, --host-pattern, --timezone, --rec-db) made them: a
replay with other options refuses it rather than give results the raw files would not.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from .inputs import COUNTS, EVENT_COLUMNS, REJECT_COLUMNS, InputOptions, Inputs, Stored
from .jvm import input_bytes
from .output import write_replacing
from .paths import SEGMENT_MARKER, is_segment

FORMAT = "swssd replay capture segment"
VERSION = 1
_OPTIONS = ("host", "host_pattern", "timezone", "rec_db")
_PARTS = {"events": EVENT_COLUMNS, "rejects": REJECT_COLUMNS}


class SegmentError(ValueError):
    """A segment that cannot be read or written as asked; the message names its path."""


@dataclass
class Segment:
    """A segment's manifest, checked."""

    path: Path
    counts: dict[str, int]
    sources: list[str]
    #: bytes of the sources as jvm.input_bytes counts them; None when one was not local
    input_bytes: int | None
    options: dict[str, str | None]
    #: per part (events, rejects): its Spark schema as JSON
    schemas: dict[str, dict[str, Any]]


def _options(opts: InputOptions) -> dict[str, str | None]:
    return {name: getattr(opts, name) for name in _OPTIONS}


def _parquet_files(directory: Path) -> dict[str, int]:
    """Relative path -> size of the data files Spark wrote under `directory` (not _SUCCESS, .crc)."""
    return {
        str(p.relative_to(directory.parent)): p.stat().st_size
        for p in sorted(directory.rglob("*")) if p.is_file() and not p.name.startswith((".", "_"))
    }


def open_segment(path: str | Path) -> Segment:
    """The segment at `path`, its manifest and files checked (no Spark needed); SegmentError
    when it is damaged, unfinished or of another version."""
    path = Path(path)
    marker = path / SEGMENT_MARKER
    try:
        m = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SegmentError(f"{path}: not a readable capture segment ({SEGMENT_MARKER}: {exc})") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise SegmentError(f"{path}: {SEGMENT_MARKER} is not a capture segment's manifest")
    if m.get("version") != VERSION:
        raise SegmentError(f"{path}: capture segment version {m.get('version')!r}, this swssd reads "
                           f"version {VERSION}: compact the captures again")
    if not m.get("complete"):
        raise SegmentError(f"{path}: an unfinished capture segment (its compaction did not complete)")
    try:
        files: dict[str, int] = m["files"]
        segment = Segment(
            path=path,
            counts={k: int(m["counts"][k]) for k in COUNTS},
            sources=[str(s) for s in m["sources"]],
            input_bytes=None if m["input_bytes"] is None else int(m["input_bytes"]),
            options={k: m["options"][k] for k in _OPTIONS},
            schemas={part: m["schemas"][part] for part in m["schemas"]},
        )
        columns = {part: [f["name"] for f in schema["fields"]] for part, schema in segment.schemas.items()}
        sizes = {name: int(size) for name, size in files.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SegmentError(f"{path}: a damaged capture segment manifest ({type(exc).__name__}: {exc})") from None
    if "events" not in columns or any(columns[p] != _PARTS.get(p) for p in columns):
        raise SegmentError(f"{path}: the manifest's columns are not those of version {VERSION}")
    for part in columns:
        if not (path / part).is_dir():
            raise SegmentError(f"{path}: the segment's {part}/ directory is missing")
    for name, size in sizes.items():
        try:
            actual = (path / name).stat().st_size
        except OSError:
            raise SegmentError(f"{path}: the segment's file {name} is missing") from None
        if actual != size:
            raise SegmentError(f"{path}: the segment's file {name} holds {actual} bytes, not {size}")
    return segment


def _shown(value: str | None) -> str:
    return "(none)" if value is None else repr(value)


def check_options(segment: Segment, opts: InputOptions) -> None:
    """SegmentError unless `opts` are the input options the segment was read with: its events
    keep those (hosts, swss.rec times and databases), so other options would not mean what
    they say."""
    given = _options(opts)
    for name in _OPTIONS:
        if given[name] != segment.options[name]:
            flag = "--" + name.replace("_", "-")
            raise SegmentError(
                f"{segment.path}: compacted with {flag} {_shown(segment.options[name])}, not {_shown(given[name])}: "
                f"its events keep the options they were read with (compact the captures again, or "
                f"give the same {flag})"
            )


def _absolute(path: str) -> str:
    local = path.removeprefix("file://")
    return path if "://" in local else os.path.abspath(local)


def check_sources(paths: Sequence[str], segments: Sequence[Segment]) -> None:
    """SegmentError when a capture file is read twice: as text and in a segment, or in two
    segments (a segment made beside its captures, then the directory replayed)."""
    seen: dict[str, str] = {_absolute(p): "the inputs hold" for p in paths}
    for segment in segments:
        for source in segment.sources:
            if source in seen:
                raise SegmentError(f"{segment.path}: holds {source}, which {seen[source]} too: "
                                   "give one of them, not both")
            seen[source] = f"segment {segment.path} holds"


def stored(spark: SparkSession, segment: Segment) -> Stored:
    """The segment's events and rejects as DataFrames over its Parquet, read with the schema
    they were written with (Spark does not run a job to read it from the files)."""

    def read(part: str) -> Any:
        return spark.read.schema(StructType.fromJson(segment.schemas[part])).parquet(str(segment.path / part))

    rejects = read("rejects") if "rejects" in segment.schemas else None
    return Stored(read("events"), rejects, dict(segment.counts))


def source_bytes(segments: Sequence[Segment]) -> int | None:
    """The bytes the segments' sources held (jvm.input_bytes); None when one was not local."""
    sizes = [s.input_bytes for s in segments]
    return None if None in sizes else sum(b for b in sizes if b is not None)


def sources_of(paths: Sequence[str], segments: Sequence[Segment]) -> list[str]:
    """The capture files a compaction reads (absolute), those of input segments included."""
    return [*map(_absolute, paths), *(s for seg in segments for s in seg.sources)]


def check_out(out: Path, paths: Sequence[str], segments: Sequence[Segment]) -> None:
    """SegmentError when `out` would overwrite something other than a segment, or an input."""
    if "://" in str(out).removeprefix("file://"):
        raise SegmentError(f"{out}: a capture segment is written to a local directory")
    if out.exists() and not out.is_dir():
        raise SegmentError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not is_segment(out):
        raise SegmentError(f"{out}: exists and is not a capture segment: choose a new or empty directory")
    target = out.resolve()
    for text in [*paths, *(str(s.path) for s in segments)]:
        local = text.removeprefix("file://")
        if "://" not in local and (target == Path(local).resolve() or target in Path(local).resolve().parents):
            raise SegmentError(f"{out}: holds the input {text}: write the segment elsewhere")


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    write_replacing(out / SEGMENT_MARKER, json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def compact(inputs: Inputs, opts: InputOptions, segments: Sequence[Segment], out: Path) -> dict[str, int]:
    """Write the inputs as a segment at `out` (check_out first); returns the counts.

    One pass over the text writes the events (the counts are observed on the way); the rejected
    lines take a second, only when there are any, as in the other commands."""
    out.mkdir(parents=True, exist_ok=True)
    head = {"format": FORMAT, "version": VERSION}
    _write_manifest(out, {**head, "complete": False})
    for part in _PARTS:
        shutil.rmtree(out / part, ignore_errors=True)
    events = inputs.events
    events.write.parquet(str(out / "events"))
    counts = inputs.counts()
    schemas = {"events": json.loads(events.schema.json())}
    if counts["rejects"]:
        rejects = inputs.rejects
        rejects.write.parquet(str(out / "rejects"))
        schemas["rejects"] = json.loads(rejects.schema.json())
    originals = dict(opts.replaced)  # a cut .gz file is recorded as itself, not its readable copy
    paths = [originals.get(p, p) for p in opts.paths]
    raw_bytes, seg_bytes = input_bytes(paths), source_bytes(segments)
    _write_manifest(out, {
        **head,
        "complete": True,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "counts": counts,
        "sources": sources_of(paths, segments),
        "input_bytes": None if raw_bytes is None or seg_bytes is None else raw_bytes + seg_bytes,
        "options": _options(opts),
        "schemas": schemas,
        "files": {name: size for part in schemas for name, size in _parquet_files(out / part).items()},
    })
    return counts
