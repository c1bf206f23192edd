"""How one captured task is written: a JSON Lines object (lossless) and a swss.rec line (SONiC's form).

JSON record, one per line, keys in this order:
    {"ts": "2026-11-25T23:41:16.123456Z", "host": ..., "db": "APPL_DB", "table": "PORT_TABLE",
     "key": ..., "op": "SET"|"DEL", "fvs": [[field, value], ...], "seq": 1}
plus "dead_letter": true and "reason": "..." on tasks the daemon gave up on.

swss.rec line: `YYYY-MM-DD.HH:MM:SS.ffffff|TABLE<sep>key|OP|field:value|...`, in UTC. That form is
not escaped (and so not lossless); only CR and LF are written as `\\r`/`\\n` so that one task stays
one line.
"""

from __future__ import annotations

import json
from functools import lru_cache
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

REC_STARTED = "recording started"


class CapturedTask(NamedTuple):
    """What record() enqueues: everything needed to format the task later, off the hot path."""

    seq: int
    ts_us: int
    db: str
    table: str
    separator: str
    key: str
    op: str
    fvs: tuple[tuple[str, str], ...]
    dead_letter: bool
    reason: str | None


def _utc(ts_us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=ts_us)


@lru_cache(maxsize=16)  # a popped batch shares one stamp
def iso_ts(ts_us: int) -> str:
    """`2026-11-25T23:41:16.123456Z`: UTC, always six fraction digits."""
    return _utc(ts_us).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@lru_cache(maxsize=16)
def rec_ts(ts_us: int) -> str:
    """`2026-11-25.23:41:16.123456`, the swss.rec timestamp."""
    return _utc(ts_us).strftime("%Y-%m-%d.%H:%M:%S.%f")


def jsonl_line(task: CapturedTask, host: str) -> bytes:
    """One JSON object and its newline, UTF-8 (non-ASCII kept as is)."""
    obj: dict[str, object] = {
        "ts": iso_ts(task.ts_us),
        "host": host,
        "db": task.db,
        "table": task.table,
        "key": task.key,
        "op": task.op,
        "fvs": [list(fv) for fv in task.fvs],
        "seq": task.seq,
    }
    if task.dead_letter:
        obj["dead_letter"] = True
        obj["reason"] = task.reason or ""
    try:
        return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    except UnicodeEncodeError:
        # Surrogate-escaped bytes that are not UTF-8: \udcXX escapes keep the line valid JSON
        # and still decode back to the same Python string.
        return (json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n").encode()


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def rec_line(task: CapturedTask) -> bytes:
    """One swss.rec line and its newline (surrogate escapes written back as the original bytes)."""
    parts = [rec_ts(task.ts_us), f"{task.table}{task.separator}{task.key}", task.op]
    parts += [f"{f}:{v}" for f, v in task.fvs]
    return (_one_line("|".join(parts)) + "\n").encode("utf-8", "surrogateescape")


def rec_started_line(ts_us: int) -> bytes:
    """The first line of every swss.rec file."""
    return f"{rec_ts(ts_us)}|{REC_STARTED}\n".encode()
