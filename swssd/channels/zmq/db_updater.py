"""AsyncDBUpdater: the ZMQ channel's database persistence, writing changes to the Redis table
as sonic-swss-common's AsyncDBUpdater leaves it, from a task of its own.

The C++ updater is a thread with its own TCP connection writing through a plain swss::Table (no
key set, no PUBLISH, no state hash), one change at a time:

    SET   DEL TABLE<sep>key, then HSET TABLE<sep>key f1 v1 f2 v2 ... (the entry is replaced)
    HSET  HSET TABLE<sep>key f1 v1 ...                               (fields merged)
    DEL   DEL TABLE<sep>key
    other logged and skipped

(a change without fields writes no HSET, as Table::set sends nothing for no fields). Both
commands take the key name as a C string (DEL is formatted as "DEL %s", formatHSET copies
key.c_str()), so a key name is cut at its first NUL byte; swssd cuts it the same way. Fields
and values are binary-safe.

Here a task drains the queue in order, many changes a pipeline on a connection of its own, so
the consumer's pops never wait for Redis; the final state of every key is the one the C++
updater leaves. A failed write (Redis away) is retried until it succeeds, in order: replaying
a batch of DEL/HSET commands in order leaves the same state, even after a partial first run.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import structlog

from ...backoff import Backoff
from ...fields import DEL_COMMAND, SET_COMMAND, FieldValues
from ...redis.connector import CONNECTION_ERRORS, DBConnector
from ..table import TableBase

log = structlog.get_logger(__name__)

HSET_COMMAND = "HSET"
#: changes written per pipeline
BATCH = 512
_RETRY_MIN = 0.05
_RETRY_MAX = 2.0


class AsyncDBUpdater:
    """Writes (key, op, fvs) changes of one table to Redis in order, off the caller's path."""

    def __init__(self, db: DBConnector, table_name: str, batch: int = BATCH) -> None:
        self.table_name = table_name
        self.batch = batch
        # A connection of its own, as the C++ updater opens one: pops and other writers never
        # queue behind a large pipeline of persistence writes.
        self._db = DBConnector(
            db.new_client(), db_id=db.db_id, separator=db.separator, name=db.name, namespace=db.namespace
        )
        self._names = TableBase(self._db, table_name)
        self._queue: deque[tuple[str, str, FieldValues]] = deque()
        self._inflight = 0
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        #: changes written to Redis
        self.written = 0
        #: changes with an op other than SET, HSET, DEL (skipped, as C++ does)
        self.unknown_ops = 0
        #: replies that were errors (e.g. WRONGTYPE: the key holds no hash)
        self.errors = 0

    def update(self, key: str, op: str, fvs: FieldValues) -> None:
        """Queue one change (never blocks; the writer task takes it from here)."""
        if self._closed:
            raise RuntimeError(f"AsyncDBUpdater for {self.table_name} is closed")
        self._queue.append((key, op, fvs))
        self._idle.clear()
        self._wakeup.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def queue_size(self) -> int:
        """Changes not written yet (C++ queueSize)."""
        return len(self._queue) + self._inflight

    async def flush(self) -> None:
        """Wait until every change queued so far is in Redis."""
        await self._idle.wait()

    async def close(self, timeout: float | None = 10.0) -> None:
        """Write what is queued (as the C++ destructor does, within `timeout`), then stop."""
        self._closed = True
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            log.error("db persistence stopped with changes unwritten", table=self.table_name, left=self.queue_size())
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait((self._task,))
        await self._db.close()

    def _commands(self, changes: list[tuple[str, str, FieldValues]]) -> list[tuple[Any, ...]]:
        key_name = self._names.key_name
        commands: list[tuple[Any, ...]] = []
        for key, op, fvs in changes:
            name = _c_string(key_name(key))
            if op == SET_COMMAND:
                commands.append(("DEL", name))
                if fvs:
                    commands.append(("HSET", name, *[x for fv in fvs for x in fv]))
            elif op == DEL_COMMAND:
                commands.append(("DEL", name))
            elif op == HSET_COMMAND:
                if fvs:
                    commands.append(("HSET", name, *[x for fv in fvs for x in fv]))
            else:
                self.unknown_ops += 1
                log.error("db persistence: unknown operation skipped", table=self.table_name, op=op[:40])
        return commands

    async def _run(self) -> None:
        queue = self._queue
        backoff = Backoff(_RETRY_MIN, _RETRY_MAX)
        while True:
            if not queue:
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            changes = [queue.popleft() for _ in range(min(len(queue), self.batch))]
            self._inflight = len(changes)
            commands = self._commands(changes)
            while True:
                try:
                    replies = await self._db.execute_many(commands)
                    break
                except asyncio.CancelledError:
                    raise
                except CONNECTION_ERRORS as exc:
                    delay = backoff.next()
                    log.warning(
                        "db persistence: Redis unreachable; retrying",
                        table=self.table_name,
                        error=str(exc),
                        delay=delay,
                    )
                    await asyncio.sleep(delay)
            backoff.reset()
            for reply in replies:
                if isinstance(reply, Exception):
                    self.errors += 1
                    log.error("db persistence: Redis refused a write", table=self.table_name, error=str(reply))
            self.written += len(changes)
            self._inflight = 0


def _c_string(text: str) -> str:
    """`text` up to its first NUL, as a "%s" format of the C++ library reads it."""
    nul = text.find("\0")
    return text if nul < 0 else text[:nul]
