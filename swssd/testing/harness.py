"""OrchHarness: one Orch run in-process by the daemon's own table worker, fed as its tables would
feed it, on a virtual clock.

What a plugin most depends on is the daemon's handling around it, and that is what runs here:
the pending map's merge (two SETs of a key become one task, a DEL replaces what is pending, a SET
after a DEL waits behind it), Retry (the task waits for new data or retry_interval), backoff
after a failure, the handler time-out and dead-lettering after max_attempts. Time is a
VirtualClock the test moves with `advance()`, so retries and backoff cost no real time and
happen at the same instant every run.

A handler still running after `hang_after` real seconds is taken as hanging: the clock jumps to
its handler_timeout, which cancels it as the daemon's watchdog would.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast

from ..channels.selector import Select
from ..fields import DEL_COMMAND, SET_COMMAND, FieldValuesLike, KeyOpFieldsValues, as_field_values
from ..orch.config import RetryConfig, TableKind
from ..orch.orch import BatchOutcome, Orch, Retry
from ..orch.worker import Consumer, OrchRuntime, TableWorker
from ..redis.connector import DBConnector
from ..redis.embedded_redis import EmbeddedRedis
from .clock import VirtualClock

#: what the harness's tables are when it is given names only
DEFAULT_DB = "APPL_DB"
#: the pending limit the harness's workers get: never reached, so a table is never paused
_NO_LIMIT = 10**9


@dataclass(frozen=True)
class Outcome:
    """One handler call's end for one task: when (virtual time), and for a Retry or a failure
    its reason and the task's failed attempts so far."""

    table: str
    task: KeyOpFieldsValues
    at: float
    reason: str = ""
    attempts: int = 0

    @property
    def key(self) -> str:
        return self.task.key


@dataclass(frozen=True)
class Table:
    """A table the Orch consumes in the harness: its name, database and kind (state, queue,
    subscriber, notification or zmq: each merges as the daemon merges that kind)."""

    name: str
    db: str = DEFAULT_DB
    kind: TableKind = "state"


class OrchHarness:
    """Runs `orch` as the daemon would, on `tables`, with `retry` (a RetryConfig or its fields
    as keywords: max_attempts, retry_interval, backoff_initial, backoff_max, handler_timeout).

    Connectors: `connectors` by database name (`"STATE_DB"`, or `"asic0/STATE_DB"`), or `redis`
    (an EmbeddedRedis, the pytest plugin's `swssd_redis`): the harness then connects to every
    database of its tables and of `orch.databases`, and closes them at stop().

        async with OrchHarness(RouteOrch(), tables=["ROUTE_TABLE"], redis=swssd_redis) as h:
            h.set("ROUTE_TABLE", "10.0.0.0/24", ifname="Ethernet0")
            await h.run()
            assert [o.key for o in h.retried] == ["10.0.0.0/24"]
            await h.advance(1.0)   # retry_interval: it runs again
    """

    def __init__(
        self,
        orch: Orch,
        *,
        tables: Sequence[str | Table],
        retry: RetryConfig | Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        name: str | None = None,
        connectors: Mapping[str, DBConnector] | None = None,
        redis: EmbeddedRedis | None = None,
        hang_after: float = 1.0,
    ) -> None:
        if not tables:
            raise ValueError("OrchHarness needs at least one table")
        self.orch = orch
        self.tables = [t if isinstance(t, Table) else Table(t) for t in tables]
        names = [t.name for t in self.tables]
        if len(set(names)) != len(names):
            raise ValueError(f"a table is listed twice: {names}")
        self.retry = retry if isinstance(retry, RetryConfig) else RetryConfig.model_validate(dict(retry or {}))
        self.options = dict(options or {})
        self.name = name or type(orch).__name__
        self.connectors: dict[str, DBConnector] = dict(connectors or {})
        self._redis = redis
        self._own: list[DBConnector] = []
        self.hang_after = hang_after
        self.clock = VirtualClock()
        #: tasks handled, in order
        self.handled: list[Outcome] = []
        #: handler calls that raised Retry
        self.retried: list[Outcome] = []
        #: handler calls that failed (raised or timed out), each attempt
        self.failed: list[Outcome] = []
        #: tasks given up after max_attempts failures
        self.dead_lettered: list[Outcome] = []
        self.runtime: OrchRuntime | None = None
        self.workers: dict[str, TableWorker] = {}
        self._started = False

    # -- lifetime -------------------------------------------------------------------------

    async def start(self) -> OrchHarness:
        """Connect (with `redis`), attach the Orch as the daemon does, and run its start()."""
        if self._redis is not None:
            config = self._redis.write_database_config()
            wanted = [*(t.db for t in self.tables), *self.orch.databases]
            for db in dict.fromkeys(wanted):
                if db not in self.connectors:
                    self.connectors[db] = conn = await DBConnector.connect(db, config)
                    self._own.append(conn)
        self.orch.attach(self.name, self.options, self.connectors)
        self._record_outcomes()
        self.runtime = OrchRuntime(self.orch, self.retry)
        select = Select()
        for t in self.tables:
            # The harness feeds the worker itself: its consumer is never read (the pending
            # limit, the one reason to pause a table, is never reached).
            consumer = cast(Consumer, None)
            self.workers[t.name] = TableWorker(
                self.runtime, consumer, t.db, _NO_LIMIT, self._dead_letter, select,
                table=t.name, kind=t.kind, timers=self.clock,
            )
        await self.orch.start()
        self._started = True
        return self

    async def stop(self) -> None:
        """Run the Orch's stop() and close the connectors the harness opened."""
        try:
            if self._started:
                self._started = False
                await self.orch.stop()
        finally:
            for conn in self._own:
                await conn.close()
            self._own.clear()

    async def __aenter__(self) -> OrchHarness:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    # -- feeding --------------------------------------------------------------------------

    def feed(self, table: str, tasks: Sequence[KeyOpFieldsValues]) -> None:
        """Tasks arriving from `table` in one batch, as one pop delivers them: merged into what
        is pending by the table kind's rules, and new data for the Orch (its Retry-waiting tasks
        may run again at once)."""
        worker = self._worker(table)
        worker.accept(list(tasks))
        assert self.runtime is not None
        self.runtime.new_data()

    def set(self, table: str, key: str, fvs: FieldValuesLike = (), /, **fields: str) -> None:
        """A SET of `key` arriving (fields as pairs, a dict, or keywords)."""
        self.feed(table, [KeyOpFieldsValues(key, SET_COMMAND, [*as_field_values(fvs), *fields.items()])])

    def delete(self, table: str, key: str) -> None:
        """A DEL of `key` arriving."""
        self.feed(table, [KeyOpFieldsValues(key, DEL_COMMAND, [])])

    def pending(self, table: str) -> list[KeyOpFieldsValues]:
        """The tasks of `table` waiting to run, merged, in the order they would run."""
        return self._worker(table).pending.tasks()

    # -- running --------------------------------------------------------------------------

    async def run(self) -> None:
        """Run every task due now, as the daemon's workers would, until none is; virtual time
        stands still (except for a hanging handler, see the module docstring)."""
        again = True
        while again:
            again = False
            for worker in self.workers.values():
                if await self._step(worker) == 0.0:
                    again = True

    async def advance(self, seconds: float) -> None:
        """Move the virtual clock `seconds` on, running what falls due on the way (a retry
        interval or backoff ending) at the time it falls due."""
        await self.run()
        end = self.clock.now + seconds
        while (due := self._next_due()) is not None and due <= end:
            self.clock.advance_to(due)
            await self.run()
        self.clock.advance_to(end)
        await self.run()

    async def settle(self, limit: float = 86_400.0) -> None:
        """Advance from each due time to the next until only tasks waiting on Retry are left
        (they wait for data), or `limit` seconds of virtual time have passed: failures run
        through their backoff to success or their dead letter."""
        await self.run()
        end = self.clock.now + limit
        while (due := self._next_due(failed_only=True)) is not None and due <= end:
            self.clock.advance_to(due)
            await self.run()

    def next_run_at(self, table: str, key: str) -> float | None:
        """When the waiting task of `key` may run again (virtual time), None if none waits."""
        entry = self._worker(table).pending.head(key)
        return None if entry is None else entry.not_before

    # -- inside ---------------------------------------------------------------------------

    def _worker(self, table: str) -> TableWorker:
        if not self._started:
            raise RuntimeError("OrchHarness: start() it first (or use `async with`)")
        try:
            return self.workers[table]
        except KeyError:
            raise KeyError(f"{table!r} is not a table of this harness (have: {', '.join(self.workers)})") from None

    def _next_due(self, failed_only: bool = False) -> float | None:
        times = [e.not_before for w in self.workers.values() for e in w.pending.live()
                 if not failed_only or e.retry_epoch is None]
        timer = self.clock.next_timer()
        return min([*times, *([timer] if timer is not None else [])], default=None)

    async def _step(self, worker: TableWorker) -> float | None:
        task = worker.step()
        while True:
            done, _ = await asyncio.wait((task,), timeout=self.hang_after)
            if done:
                return task.result()
            due = self.clock.next_timer()  # the watchdog of the hanging handler
            if due is None:
                task.cancel()
                raise RuntimeError(f"{self.name}: a handler of {worker.table} does not return")
            self.clock.advance_to(due)

    def _dead_letter(self, worker: TableWorker, task: KeyOpFieldsValues, reason: str, attempts: int) -> None:
        self.dead_lettered.append(Outcome(worker.table, task, self.clock.now, reason, attempts))

    def _record_outcomes(self) -> None:
        """Wrap the Orch's handler (on the instance) to record each call's outcome."""
        orch = self.orch
        attempts: dict[tuple[str, str], int] = {}

        def note(table: str, task: KeyOpFieldsValues, outcome: BaseException | None) -> None:
            now, slot = self.clock.now, (table, task.key)
            if outcome is None:
                attempts.pop(slot, None)
                self.handled.append(Outcome(table, task, now))
            elif isinstance(outcome, Retry):
                self.retried.append(Outcome(table, task, now, outcome.reason, attempts.get(slot, 0)))
            else:
                attempts[slot] = attempts.get(slot, 0) + 1
                if attempts[slot] >= self.retry.max_attempts:
                    attempts.pop(slot)
                    count = self.retry.max_attempts
                else:
                    count = attempts[slot]
                self.failed.append(Outcome(table, task, now, _reason(outcome, self.retry.handler_timeout), count))

        if orch.handles_batches:
            inner_batch = orch.handle_batch

            @functools.wraps(inner_batch)
            async def handle_batch(table: str, tasks: list[KeyOpFieldsValues]) -> BatchOutcome:
                outcomes: BatchOutcome = await _outcome(inner_batch(table, tasks), note, table, tasks)
                return outcomes

            setattr(orch, "handle_batch", handle_batch)  # noqa: B010 - on the instance, the class untouched
        else:
            inner = orch.handle

            @functools.wraps(inner)
            async def handle(table: str, task: KeyOpFieldsValues) -> None:
                await _outcome(inner(table, task), note, table, [task])

            setattr(orch, "handle", handle)  # noqa: B010


def _reason(exc: BaseException, timeout: float) -> str:
    """The reason the daemon gives a failure (and a time-out) in its log and dead letter."""
    if isinstance(exc, asyncio.CancelledError):
        return f"handler timed out after {timeout:g}s"
    return f"{type(exc).__name__}: {exc}"


async def _outcome(
    call: Awaitable[Any], note: Callable[[str, KeyOpFieldsValues, BaseException | None], None],
    table: str, tasks: list[KeyOpFieldsValues],
) -> Any:
    """Await a handler call and note each task's outcome, passing the result or error on."""
    try:
        result = await call
    except (Exception, asyncio.CancelledError) as exc:
        for task in tasks:
            note(table, task, exc)
        raise
    outcomes = [None] * len(tasks) if result is None else list(result)
    if len(outcomes) == len(tasks):
        for task, outcome in zip(tasks, outcomes):
            note(table, task, outcome)
    return result

