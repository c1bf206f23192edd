"""Dead letters kept: every task the daemon gave up on, with why, in Redis where an operator can
list it and send it through again (`swssd dead-letters`).

A daemon instance keeps one Redis stream per database it consumes, `_SWSSD_DEAD_LETTERS:<instance>`
in that database (beside the table the task came from), capped at `[daemon] dead_letters_max`
entries: the oldest go first, so a flood of failures costs a bounded amount of memory. An entry
holds the table's db, namespace, table, kind, key, op, fields (JSON pairs), reason, attempts and
time (Unix seconds). Written for every task dead-lettered after max_attempts and every task the
take-over's crash-loop guard set aside.

The daemon's hook must not wait for Redis: records are queued and written by a background task,
a pipeline at a time; while Redis fails they wait (the newest `dead_letters_max` of them) and are
written when it answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from redis.exceptions import RedisError

from ..fields import FieldValues, KeyOpFieldsValues
from ..redis.connector import DBConnector
from .orch import connector_key

log = structlog.get_logger("swssd.daemon")

#: The default cap of a dead-letter stream ([daemon] dead_letters_max).
DEFAULT_MAX = 10_000
#: seconds between attempts to write while Redis fails them
_RETRY_DELAY = 1.0


def stream_key(instance: str) -> str:
    """The dead-letter stream of daemon instance `instance` (one in each database it consumes)."""
    return f"_SWSSD_DEAD_LETTERS:{instance}"


@dataclass(frozen=True)
class DeadLetter:
    """One stored dead letter: the task, where it came from, why it was given up."""

    id: str
    db: str
    namespace: str
    table: str
    kind: str
    key: str
    op: str
    fvs: FieldValues
    reason: str
    attempts: int
    time: float

    @property
    def task(self) -> KeyOpFieldsValues:
        return KeyOpFieldsValues(self.key, self.op, list(self.fvs))

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "db": self.db, "namespace": self.namespace, "table": self.table, "kind": self.kind,
                "key": self.key, "op": self.op, "fvs": [list(fv) for fv in self.fvs], "reason": self.reason,
                "attempts": self.attempts, "time": self.time}


def encode(db_name: str, namespace: str, table: str, kind: str, task: KeyOpFieldsValues, reason: str,
           attempts: int, now: float) -> dict[str, str]:
    """A stream entry's fields for a dead-lettered task."""
    return {"db": db_name, "namespace": namespace, "table": table, "kind": kind, "key": task.key, "op": task.op,
            "fvs": json.dumps([list(fv) for fv in task.fvs], ensure_ascii=False), "reason": reason,
            "attempts": str(attempts), "time": f"{now:.6f}"}


def decode(entry_id: str, fields: dict[str, str]) -> DeadLetter:
    """A stream entry read back (a field missing from a damaged entry reads as empty)."""
    try:
        pairs = [(str(f), str(v)) for f, v in json.loads(fields.get("fvs", "[]"))]
    except (ValueError, TypeError):
        pairs = [("fvs", fields.get("fvs", ""))]
    def number(name: str, kind: type[int] | type[float]) -> Any:
        try:
            return kind(fields.get(name, "0"))
        except ValueError:
            return kind(0)
    return DeadLetter(
        id=entry_id, db=fields.get("db", ""), namespace=fields.get("namespace", ""), table=fields.get("table", ""),
        kind=fields.get("kind", ""), key=fields.get("key", ""), op=fields.get("op", ""), fvs=pairs,
        reason=fields.get("reason", ""), attempts=number("attempts", int), time=number("time", float),
    )


class DeadLetterStore:
    """The daemon's writer of dead letters (see the module docstring); `sizes` is each database's
    stream length as last written, for the metrics."""

    def __init__(self, instance: str, max_entries: int = DEFAULT_MAX) -> None:
        self.key = stream_key(instance)
        self.max_entries = max_entries
        #: connector_key(db, namespace) -> entries in that database's stream, as of the last write
        self.sizes: dict[str, int] = {}
        self._queue: deque[tuple[DBConnector, str, dict[str, str]]] = deque(maxlen=max_entries)
        self._wakeup = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None

    def record(self, db: DBConnector, db_name: str, table: str, kind: str, task: KeyOpFieldsValues, reason: str,
               attempts: int) -> None:
        """Queue one dead letter of `table` (in `db`, named `db_name`) for writing; never blocks."""
        fields = encode(db_name, db.namespace, table, kind, task, reason, attempts, time.time())
        self._queue.append((db, connector_key(db_name, db.namespace), fields))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write_loop())
        self._wakeup.set()

    async def count(self, connectors: Mapping[str, DBConnector]) -> None:
        """Read each database's stream length (at start: the metric shows what earlier runs left)."""
        for name, db in connectors.items():
            with contextlib.suppress(RedisError, OSError):
                self.sizes[name] = int(await db.redis.xlen(self.key))

    async def _write_loop(self) -> None:
        told = False
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            try:
                await self._write_queued()
                told = False
            except (RedisError, OSError) as exc:
                if not told:
                    log.warning("dead letters not written yet: Redis failed; retrying", error=str(exc),
                                queued=len(self._queue))
                    told = True
                await asyncio.sleep(_RETRY_DELAY)
                self._wakeup.set()

    async def _write_queued(self) -> None:
        while self._queue:
            db, name, _ = self._queue[0]
            batch: list[dict[str, str]] = []
            while self._queue and self._queue[0][0] is db and len(batch) < 256:
                batch.append(self._queue.popleft()[2])
            try:
                async with db.redis.pipeline(transaction=False) as pipe:
                    for fields in batch:
                        pipe.xadd(self.key, fields, maxlen=self.max_entries, approximate=False)  # type: ignore[arg-type]
                    pipe.xlen(self.key)
                    replies = await pipe.execute()
            except BaseException:
                self._queue.extendleft((db, name, f) for f in reversed(batch))
                raise
            self.sizes[name] = int(replies[-1])

    async def close(self, timeout: float) -> None:
        """Write what is queued (within `timeout` seconds), then stop the writer."""
        if self._writer is None:
            return
        self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError, RedisError, OSError):
            await self._writer
        with contextlib.suppress(TimeoutError, RedisError, OSError):
            await asyncio.wait_for(self._write_queued(), timeout)
        if self._queue:
            log.error("dead letters not written at shutdown: Redis failed", lost=len(self._queue), key=self.key)
