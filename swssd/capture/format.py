"""How one captured task is written: a JSON Lines object (lossless) and a swss.rec line (SONiC's form).

JSON record, one per line, keys in this order:
    {"ts": "2026-11-25T23:41:16.123456Z", "host": ..., "db": "APPL_DB", "table": "PORT_TABLE",
     "key": ..., "op": "SET"|"DEL", "fvs": [[field, value], ...], "seq": 1}
then, when they apply:
    "kind": "queue"|"subscriber"|"notification"|"zmq"   the kind of table the task came from;
    "dead_letter": true, "reason": "..."          on tasks the daemon gave up on.

`kind` says how a replay applies the record, and is left out for `state` (the key-set channel,
most of the traffic) so that those lines stay as they always were. A record without `kind`,
including every record written before kinds were recorded, replays as state:
- state, queue: a SET carries the changed fields only; replay merges them into the entry.
- subscriber (keyspace events of CONFIG_DB/STATE_DB): a SET carries the entry's full fields as
  read when popped; replay replaces the entry with them, so a field removed by HDEL is gone.
- zmq (the ZMQ channel): a SET carries the fields the producer set, and C++'s db persistence
  writes it as the whole entry (DEL, then HSET); replay replaces the entry with them too.
- notification (pub/sub messages): `table` is the channel, `key` the data, `op` the message's
  op (any text, not only SET/DEL) and `fvs` its values. Not table state: replay shows it in
  history and stats, never in a table's contents.

swss.rec line: `YYYY-MM-DD.HH:MM:SS.ffffff|TABLE<sep>key|OP|field:value|...`, in UTC. That form is
not escaped (and so not lossless); only CR and LF are written as `\\r`/`\\n` so that one task stays
one line. It has no kind: subscriber tasks are SET/DEL lines as orchagent's swss.rec has them
for CONFIG_DB tables, and a replay of them merges, so a field removed by HDEL survives there
(the JSON capture is the exact one). Notifications are not written to swss.rec: they are not
table changes, orchagent does not record them, and a replay of swss.rec would apply them as
table entries.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Literal, NamedTuple, get_args

from ..schema import REC_STARTED

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


CaptureKind = Literal["state", "queue", "subscriber", "notification", "zmq"]
KINDS: frozenset[str] = frozenset(get_args(CaptureKind))
#: The kind a record without "kind" has.
DEFAULT_KIND: CaptureKind = "state"


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
    kind: CaptureKind = DEFAULT_KIND


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
    if task.kind != DEFAULT_KIND:
        obj["kind"] = task.kind
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
    """One swss.rec line and its newline (surrogate escapes written back as the original bytes).

    The caller leaves notifications out (see the module docstring)."""
    parts = [rec_ts(task.ts_us), f"{task.table}{task.separator}{task.key}", task.op]
    parts += [f"{f}:{v}" for f, v in task.fvs]
    return (_one_line("|".join(parts)) + "\n").encode("utf-8", "surrogateescape")


def rec_started_line(ts_us: int) -> bytes:
    """The first line of every swss.rec file, and a line of its own each time a run opens it."""
    return f"{rec_ts(ts_us)}|{REC_STARTED}\n".encode()
