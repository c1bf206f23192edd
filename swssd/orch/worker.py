"""One consumed table inside the daemon: its pending tasks and the task that hands them to the Orch.

The daemon's consume loop pops and calls `accept()`; the worker runs handlers in its own task, so a
slow handler holds up only its own table. One worker per table runs one task at a time, which keeps
the order per key; a DEL pending before a SET of the same key runs first.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from ..backoff import retry_delay
from ..channels.consumer_state_table import ConsumerStateTable
from ..channels.consumer_table import ConsumerTable
from ..channels.notification_consumer import NotificationConsumer
from ..channels.selector import Select
from ..channels.subscriber_state_table import SubscriberStateTable
from ..channels.zmq import ZmqConsumerStateTable, ZmqServer
from ..fields import KeyOpFieldsValues
from ..ops.metrics import LATENCY_BUCKETS
from ..redis.connector import DBConnector
from .config import DEFAULT_STALL_AFTER, RetryConfig, TableKind
from .crash_guard import WINDOW, CrashGuard
from .orch import Orch, Retry
from .pending import Entry, Merge, PendingMap
from .stall import ProgressClock

log = structlog.get_logger("swssd.daemon")

#: Handled tasks between two yields to the event loop, so pops and other tables keep going.
_YIELD_EVERY = 32


Consumer = ConsumerStateTable | ConsumerTable | SubscriberStateTable | NotificationConsumer | ZmqConsumerStateTable

#: How each kind's pending tasks merge: a subscriber's SET is the whole entry; a zmq SET merges
#: into a pending one as orchagent's Consumer::addToSync does for every ConsumerBase.
_MERGE: dict[TableKind, Merge] = {
    "state": "fields", "queue": "fields", "subscriber": "replace", "notification": "none", "zmq": "fields",
}


class TableStats:
    """Counters of one table, read by logs, the demo and the metrics."""

    __slots__ = (
        "dead_lettered",
        "failed",
        "handled",
        "handler_seconds",
        "latency_counts",
        "pop_errors",
        "popped",
        "retried",
        "set_aside",
    )

    def __init__(self) -> None:
        self.popped = 0
        self.handled = 0
        #: times a handler raised Retry (the task stayed pending)
        self.retried = 0
        #: handler errors and time-outs, each attempt counted
        self.failed = 0
        self.dead_lettered = 0
        #: time spent in handlers, seconds
        self.handler_seconds = 0.0
        #: handler calls per LATENCY_BUCKETS bucket, the last one past the largest bound
        self.latency_counts = [0] * (len(LATENCY_BUCKETS) + 1)
        #: malformed or wrong-type entries the pop script set aside (kept on the dead-letter list)
        self.set_aside = 0
        #: pops Redis refused (e.g. a wrong-type key set): the table waits until it is fixed
        self.pop_errors = 0

    def observe(self, seconds: float) -> None:
        """One handler call took `seconds`."""
        self.handler_seconds += seconds
        self.latency_counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1


class OrchRuntime:
    """An Orch with its retry settings and its workers; new data for any of its tables makes
    its Retry-waiting tasks eligible again (as orchagent's doTask runs all its consumers)."""

    def __init__(self, orch: Orch, retry: RetryConfig) -> None:
        self.orch = orch
        self.retry = retry
        self.workers: list[TableWorker] = []
        #: bumped for every batch of new data for this Orch
        self.epoch = 0

    def new_data(self) -> None:
        self.epoch += 1
        for worker in self.workers:
            if worker.retry_waiting:
                worker.wake()


DeadLetterHook = Callable[["TableWorker", KeyOpFieldsValues, str], None]
#: what a worker calls for each task it gives up on: (worker, task, reason, failed attempts)
OnDeadLetter = Callable[["TableWorker", KeyOpFieldsValues, str, int], None]


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Timers(Protocol):
    """The time and timers a worker runs by: the event loop's, or a test's virtual clock
    (swssd.testing.VirtualClock), which makes retries and backoff instant and deterministic."""

    def time(self) -> float: ...
    def call_at(self, when: float, callback: Callable[[], None], /) -> Cancellable: ...


class TableWorker:
    """Pending map, handler task, retry/backoff/dead-letter policy and counters of one table.

    Handler time-outs use one watchdog timer per worker, armed when a handler starts and none is
    armed: a handler that runs past handler_timeout has its task cancelled at its current await,
    which the worker turns into a failure. Cheaper per task than a timeout context each time.
    """

    def __init__(
        self,
        runtime: OrchRuntime,
        consumer: Consumer,
        db_name: str,
        pending_limit: int,
        on_dead_letter: OnDeadLetter,
        select: Select,
        *,
        table: str,
        kind: TableKind = "state",
        stall_after: float = DEFAULT_STALL_AFTER,
        timers: Timers | None = None,
    ) -> None:
        self.runtime = runtime
        self.orch = runtime.orch
        self.consumer = consumer
        self.table = table
        self.kind = kind
        self.db_name = db_name
        self.pending = PendingMap(_MERGE[kind])
        self.pending_limit = pending_limit
        self.resume_below = max(1, pending_limit // 2)
        #: a zmq table's bound on its pending work in bytes (its consumer's change_bytes per
        #: task): large values must not multiply pending_limit into gigabytes; 0 for none
        self.pending_bytes = 0
        self.stats = TableStats()
        #: Retry-waiting tasks seen since the pass began (may overcount: it only wakes the worker)
        self.retry_waiting = 0
        self.in_flight = 0
        self._on_dead_letter = on_dead_letter
        self._select = select
        #: whether this worker paused its table in Select (backpressure)
        self.paused = False
        #: called after a pass that finished tasks (the reliable pop clears its record then)
        self.on_progress: Callable[[], None] = _nothing
        #: state and queue tables: records which keys are in a handler (crash_guard.py)
        self.guard: CrashGuard | None = None
        self._wakeup = asyncio.Event()
        #: set while the pending map is below its limit (what reconcile waits for)
        self._room = asyncio.Event()
        self._room.set()
        self._closing = False
        #: the soonest loop time a task of this pass may run again
        self._next_at: float | None = None
        self._task: asyncio.Task[Any] | None = None
        self._loop: Timers = timers if timers is not None else asyncio.get_running_loop()
        #: seconds with work due and no handler call ended, after which the table is stalled
        self.stall_after = stall_after
        self.clock = ProgressClock(self._loop.time)
        # the watchdog: when the running handler started, which call it is, the armed timer,
        # and the call the watchdog cancelled
        self._started: float | None = None
        self._call = 0
        self._watchdog: Cancellable | None = None
        self._timed_out_call = 0
        self._log = log.bind(orch=self.orch.name, db=db_name, table=self.table)
        runtime.workers.append(self)

    @property
    def alive(self) -> bool:
        """Whether the worker's task runs (health: a table nobody handles is not healthy)."""
        return self._task is not None and not self._task.done()

    def without_progress(self) -> float:
        """Seconds this table has had work due and no handler call ended (0 with nothing pending)."""
        return self.clock.without_progress() if self.pending_count and self.alive else 0.0

    @property
    def deaf(self) -> bool:
        """Whether Redis does not publish the keyspace events this (subscriber) table follows."""
        return isinstance(self.consumer, SubscriberStateTable) and self.consumer.keyspace_events is False

    @property
    def stalled(self) -> bool:
        """Whether work has been due for stall_after seconds without a handler call ending (stall.py)."""
        return self.without_progress() >= self.stall_after

    @property
    def limit(self) -> int:
        """The pending tasks at which the table pauses: pending_limit, or fewer when
        pending_bytes says so."""
        per = getattr(self.consumer, "change_bytes", 0) if self.pending_bytes else 0
        if per:
            return max(1, min(self.pending_limit, self.pending_bytes // per))
        return self.pending_limit

    @property
    def pending_count(self) -> int:
        """Tasks in memory: pending plus the ones being handled."""
        return len(self.pending) + self.in_flight

    # -- feeding ------------------------------------------------------------------------

    def accept(self, tasks: list[KeyOpFieldsValues], seq: int | None = None) -> None:
        """Merge popped tasks (of in-flight batch `seq`) into the pending map; pause the table
        when the map is full."""
        self.stats.popped += len(tasks)
        self.pending.add_many(tasks, seq)
        self.wake()
        if not self.paused and len(self.pending) >= (limit := self.limit):
            self.paused = True
            self._select.pause(self.consumer)
            if isinstance(self.consumer, ZmqConsumerStateTable):
                self.consumer.pause_reading()
            self._log.warning(
                "table paused: pending tasks at limit; its data waits in Redis" if self.kind != "zmq"
                else "table paused: pending tasks at limit; its zmq server stops reading",
                pending=len(self.pending), limit=limit,
            )

    def wake(self) -> None:
        """Wake the worker's task: work is due now (the stall clock runs from here)."""
        self._wakeup.set()
        self.clock.woken()

    def dead_letter(self, task: KeyOpFieldsValues, reason: str, attempts: int = 0) -> None:
        """Give a task up without running it (the take-over's poison check), as max_attempts does."""
        self.stats.dead_lettered += 1
        self._on_dead_letter(self, task, reason, attempts)

    async def wait_for_room(self) -> None:
        """Until the pending map is below its limit again (down to resume_below): what feeds it
        other than the pops (reconcile) waits here, so memory stays bounded by pending_limit."""
        while len(self.pending) >= self.pending_limit:
            self._room.clear()
            self.wake()
            await self._room.wait()

    # -- lifetime -----------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.ensure_future(self._run())
        return self._task

    def step(self) -> asyncio.Task[float | None]:
        """One pass over the pending map in a task of its own, instead of the worker's loop: how
        swssd.testing.OrchHarness runs a worker by its virtual clock. The task returns when to look
        again (a time, 0.0 for at once, None with nothing pending)."""
        self._task = asyncio.ensure_future(self._pass())
        return self._task

    def finish(self) -> asyncio.Task[Any] | None:
        """Shutting down: run what is pending, failed tasks again after their backoff, tasks
        waiting on Retry once more now; the task ends when only Retry-waiting tasks are left
        (or the daemon cancels it at shutdown_timeout). What is left stays pending."""
        self._closing = True
        for _key, entries in self.pending.snapshot():
            for entry in entries:
                if entry.retry_epoch is not None:
                    entry.not_before = 0.0
        self.wake()
        return self._task

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        try:
            while True:
                self._wakeup.clear()
                next_at = await self._pass()
                if self._closing and not self._worth_waiting():
                    return
                if self._wakeup.is_set():
                    continue
                delay = None if next_at is None else next_at - self._loop.time()
                if delay is not None and delay <= 0:
                    continue
                self.clock.sleeping(next_at)
                try:
                    async with asyncio.timeout(delay):
                        await self._wakeup.wait()
                except TimeoutError:
                    pass
                self.clock.running()
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()

    def _worth_waiting(self) -> bool:
        """At shutdown: whether a pending task may still succeed without new data (not yet run,
        or failed and waiting for its backoff); Retry-waiting tasks had their last chance."""
        return any(e.retry_epoch is None for _key, entries in self.pending.snapshot() for e in entries)

    # -- one pass over the pending map --------------------------------------------------

    async def _pass(self) -> float | None:
        """Run each key's next task if it may run now. Returns when to look again: a loop time,
        0.0 for at once (a key has another task ready), None when nothing is pending."""
        time = self._loop.time
        pending = self.pending
        batch = self.orch.handles_batches
        handled = self.stats.handled
        guard = self.guard
        marked_to = 0  # the snapshot's keys before this index are marked in a handler
        heads: list[Entry] = []
        self._next_at = None
        self.retry_waiting = 0
        again = False
        done = 0
        snapshot = pending.snapshot()
        if guard is not None and guard.blamed:
            # Keys blamed by the last abnormal end run first (each alone), before the rest of
            # what was taken over: run in their place, the same key was in its handler when
            # kills in a row came at the same time after each start (a restart loop), as each
            # start redid the same work at the same speed, and an innocent task was set aside.
            blamed = guard.blamed
            snapshot = [ke for ke in snapshot if ke[0] in blamed] + [ke for ke in snapshot if ke[0] not in blamed]
        for i, (key, entries) in enumerate(snapshot):
            for _ in range(2):  # a DEL, then the SET pending behind it
                if not entries:
                    break
                entry = entries[0]
                if entry.not_before > time() and (
                    entry.retry_epoch is None or entry.retry_epoch == self.runtime.epoch
                ):
                    self._runs_again_at(entry)
                    self.retry_waiting += entry.retry_epoch is not None
                    break
                alone = guard is not None and key in guard.blamed
                if guard is not None and (alone or i >= marked_to):
                    # Before the handler: what was in it when the daemon ends (crash_guard.py).
                    if alone:
                        if heads:  # a blamed key runs alone: what was gathered runs first
                            done += len(heads)
                            again |= await self._run_batch(heads)
                            heads = []
                        await guard.mark([str(key)])
                        marked_to = 0
                    else:
                        # Without blamed keys: those are named only while their own handler runs,
                        # so a window cannot blame them again for a kill that came before they ran.
                        marked_to = i + WINDOW
                        blamed = guard.blamed
                        await guard.mark([*(h.task.key for h in heads),
                                          *(str(k) for k, _ in snapshot[i:marked_to] if k not in blamed)])
                    entry = entries[0]  # a DEL popped meanwhile replaced what was pending
                pending.take(key)
                if batch and not alone:
                    heads.append(entry)
                    if len(heads) >= self.orch.batch_size:
                        done += len(heads)
                        again |= await self._run_batch(heads)
                        heads = []
                    break
                ok = await (self._run_batch([entry]) if batch else self._run_one(entry))
                if alone and guard is not None:
                    await guard.returned(str(key))
                    if batch:
                        done += 1
                        again |= key in pending
                        break
                done += 1
                if done % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)
                if not ok:
                    break
                entries = pending.entries_of(key)
            else:
                again |= key in pending
        if heads:
            done += len(heads)
            again |= await self._run_batch(heads)
        if self.paused and len(pending) < (self.resume_below if not self.pending_bytes else max(1, self.limit // 2)):
            self.paused = False
            self._log.info("table resumed", pending=len(pending))
            self._select.resume(self.consumer)
            if isinstance(self.consumer, ZmqConsumerStateTable):
                self.consumer.resume_reading()
        if len(pending) < self.resume_below:
            self._room.set()
        if done:
            self.on_progress()
        if self.stats.handled != handled:
            # What was just handled may be what a Retry waits for: tasks waiting on one run again
            # now, as orchagent runs every consumer after a doTask. (Waking them when the data is
            # popped is too early: their handler can then run before this one.)
            self.runtime.new_data()
        if again:
            return 0.0
        return self._next_at if pending else None

    def _runs_again_at(self, entry: Entry) -> None:
        if self._next_at is None or entry.not_before < self._next_at:
            self._next_at = entry.not_before

    # -- running handlers under the watchdog --------------------------------------------

    def _begin(self, tasks: int) -> int:
        self.in_flight = tasks
        self._call += 1
        self._started = self._loop.time()
        if self._watchdog is None:
            self._watchdog = self._loop.call_at(self._started + self.runtime.retry.handler_timeout, self._check)
        return self._call

    def _end(self) -> None:
        self.in_flight = 0
        now = self._loop.time()
        self.clock.progressed(now)
        if self._started is not None:
            self.stats.observe(now - self._started)
        self._started = None

    def _check(self) -> None:
        """The watchdog fired: cancel the running handler if it is over time, else re-arm."""
        self._watchdog = None
        if self._started is None or self._task is None:
            return
        deadline = self._started + self.runtime.retry.handler_timeout
        if self._loop.time() >= deadline:
            self._timed_out_call = self._call
            self._task.cancel()
        else:
            self._watchdog = self._loop.call_at(deadline, self._check)

    def _timed_out(self, call: int) -> bool:
        """After a CancelledError: whether the watchdog caused it (then the cancel is taken back)."""
        if self._timed_out_call != call or self._task is None:
            return False
        self._timed_out_call = 0
        self._task.uncancel()
        return True

    async def _run_one(self, entry: Entry) -> bool:
        """Handle one task; True when it is done."""
        epoch = self.runtime.epoch
        call = self._begin(1)
        try:
            await self.orch.handle(self.table, entry.task)
        except Retry as exc:
            self._retry(entry, exc, epoch)
            return False
        except asyncio.CancelledError:
            if not self._timed_out(call):
                self.pending.put_back(entry)  # shutting down: count it as left pending
                raise
            self._fail(entry, _TimedOut(self.runtime.retry.handler_timeout), timed_out=True)
            return False
        except Exception as exc:  # a plugin's failure must not end the daemon
            self._fail(entry, exc, timed_out=False)
            return False
        finally:
            self._end()
        self.stats.handled += 1
        self.pending.done(entry)
        return True

    async def _run_batch(self, entries: list[Entry]) -> bool:
        """Handle many tasks in one handle_batch() call; True when a key has another task ready."""
        epoch = self.runtime.epoch
        call = self._begin(len(entries))
        outcomes: list[BaseException | None]
        try:
            result = await self.orch.handle_batch(self.table, [e.task for e in entries])
            outcomes = [None] * len(entries) if result is None else list(result)
            if len(outcomes) != len(entries):
                raise ValueError(f"handle_batch returned {len(outcomes)} outcomes for {len(entries)} tasks")
        except asyncio.CancelledError:
            if not self._timed_out(call):
                for entry in entries:
                    self.pending.put_back(entry)
                raise
            outcomes = [_TimedOut(self.runtime.retry.handler_timeout)] * len(entries)
        except Exception as exc:  # a plugin's failure must not end the daemon; applies to the whole batch
            outcomes = [exc] * len(entries)
        finally:
            self._end()
        again = False
        for entry, outcome in zip(entries, outcomes):
            if outcome is None:
                self.stats.handled += 1
                self.pending.done(entry)
                again |= entry.task.key in self.pending
            elif isinstance(outcome, Retry):
                self._retry(entry, outcome, epoch)
            else:
                self._fail(entry, outcome, timed_out=isinstance(outcome, _TimedOut))
        return again

    # -- outcomes -----------------------------------------------------------------------

    def _retry(self, entry: Entry, exc: Retry, epoch: int) -> None:
        self.stats.retried += 1
        entry.retry_epoch = epoch
        entry.not_before = self._loop.time() + self.runtime.retry.retry_interval
        if entry.reason != exc.reason:
            self._log.info("task waits", key=entry.task.key, op=entry.task.op, reason=exc.reason)
        entry.reason = exc.reason
        self.retry_waiting += 1
        if epoch != self.runtime.epoch:
            self._wakeup.set()  # new data arrived while it ran: run it again now
        self._runs_again_at(entry)
        self.pending.put_back(entry)

    def _fail(self, entry: Entry, exc: BaseException, timed_out: bool) -> None:
        retry = self.runtime.retry
        self.stats.failed += 1
        entry.attempts += 1
        task = entry.task
        reason = str(exc) if timed_out else f"{type(exc).__name__}: {exc}"
        exc_info: BaseException | bool = False if timed_out else exc
        if entry.attempts >= retry.max_attempts:
            self.stats.dead_lettered += 1
            self._log.error(
                "task dead-lettered", key=task.key, op=task.op, attempts=entry.attempts,
                reason=reason, exc_info=exc_info,
            )
            self.pending.done(entry)
            self._on_dead_letter(self, task, reason, entry.attempts)
            return
        delay = retry_delay(entry.attempts, retry.backoff_initial, retry.backoff_max)
        entry.not_before = self._loop.time() + delay
        entry.retry_epoch = None
        entry.reason = reason
        self._log.warning(
            "handler failed; will retry", key=task.key, op=task.op, attempt=entry.attempts,
            max_attempts=retry.max_attempts, retry_in=round(delay, 3), reason=reason, exc_info=exc_info,
        )
        self._runs_again_at(entry)
        self.pending.put_back(entry)


class _TimedOut(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"handler timed out after {seconds:g}s")


def make_consumer(
    db: DBConnector, table: str, kind: TableKind, pop_batch_size: int, priority: int,
    *, enable_keyspace_events: bool = False, zmq_server: ZmqServer | None = None, db_persistence: bool = False,
    pending_limit: int | None = None,
) -> Consumer:
    """The consumer of one configured table. State tables report delete-then-set exactly, so a
    capture replays exactly and the pending map sees what really happened; state and queue
    tables are popped through a ReliablePop. Subscriber tables read Redis themselves and lose
    nothing to a pop; notifications are pushed, never stored (at most once); zmq tables get what
    `zmq_server` receives for them (kept in memory only: at most once, as in C++), the server
    reading no further while `pending_limit` of them wait to be popped."""
    if kind == "subscriber":
        # Not raising when deaf: the daemon says so in /health and the log, and reads on.
        return SubscriberStateTable(db, table, pop_batch_size, priority, enable_keyspace_events=enable_keyspace_events,
                                    raise_when_deaf=False)
    if kind == "notification":
        return NotificationConsumer(db, table, pop_batch_size, priority)
    if kind == "zmq":
        if zmq_server is None:
            raise ValueError(f"zmq table {table} needs its endpoint's ZmqServer")
        return ZmqConsumerStateTable(
            db, table, zmq_server, pop_batch_size, priority, db_persistence=db_persistence,
            **({"max_waiting": pending_limit} if pending_limit else {}),
        )
    if kind == "state":
        return ConsumerStateTable(db, table, pop_batch_size, priority, track_deletes=True)
    return ConsumerTable(db, table, pop_batch_size, priority)


def _nothing() -> None:
    """The default of callbacks nobody set."""
