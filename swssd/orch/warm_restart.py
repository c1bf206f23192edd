"""The daemon's part in SONiC's warm restart, under `[warm_restart] app` (and `container`), with
sonic-swss-common WarmStart's records and rules (swssd.warm_restart):

- at start, before the plugins' start(): the knobs (STATE_DB `WARM_RESTART_ENABLE_TABLE|system`
  or `|<container>`) and `WARM_RESTART_TABLE|<app>` `restore_count` are read, the count written as
  WarmStart::checkWarmStart writes it (incremented on a warm start, 0 on a cold one), `state` set
  to `initialized`, and every plugin told (`Orch.warm_start`);
- a warm start: before any task of the plugins runs (the table workers are held until then), each
  consumed table's existing entries go to `Orch.restore()`, each exactly once, then `state` is
  `restored`, and the held workers run what came since. When the reconcile timer (CONFIG_DB
  `WARM_RESTART|<container>` `<app>_timer`, else `default_timer`) expires, or every plugin called
  `reconcile_now()`, each plugin's `reconcile()` runs and `state` is `reconciled`;
- a cold start: `state` is `reconciled` once started, as SONiC's daemons report it.

What "existing entries" are, per table kind:
- `state` (key set and `TABLE:key`): the changes still waiting in the key set are popped first with
  the channel's pop, which applies them to the `TABLE:key` entries (a DEL removes the entry); then
  the entries are read (SCAN). So the restored state is the table with every change made before
  this start applied, and none of those changes is handled again; a change made after the pop is a
  new change. A crash in between loses nothing: what was popped is in the entries.
- `queue`: the same, with the op queue (ConsumerTable's pop applies the ops to the entries).
- `subscriber` (CONFIG_DB, STATE_DB): the table's first read, which the consumer delivers as SETs
  before any change; keyspace changes that came meanwhile are new changes.
- `notification`, `zmq`: nothing is stored, nothing is restored.
Tasks a crashed last run left in flight are taken over as usual and run after the restore (the
entries already hold them: at-least-once, as after any crash). `reconcile = true` tables load
nothing on a warm start: restore() has the entries.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

import structlog

from .. import warm_restart as rules
from ..channels.consumer_state_table import ConsumerStateTable
from ..channels.consumer_table import ConsumerTable
from ..channels.subscriber_state_table import SubscriberStateTable
from ..channels.table import Table
from ..errors import SwssdError
from ..fields import SET_COMMAND, KeyOpFieldsValues
from ..redis.connector import CONNECTION_ERRORS, DBConnector
from ..redis.scan import scan_table
from .config import WarmRestartConfig
from .plugins import PluginError, where
from .worker import OrchRuntime, TableWorker

log = structlog.get_logger("swssd.daemon")

#: keys a restore asks SCAN for, and HGETALLs sent in one pipeline; also the most entries given
#: to one restore() call
RESTORE_CHUNK = 512

#: runs a Redis step again while Redis cannot be reached (Databases.while_unreachable)
Retrying = Callable[[Callable[[], Awaitable[None]], str], Awaitable[None]]


class RestoreInterrupted(SwssdError):
    """Redis went away while the existing entries were handed to the plugins: a restore cannot
    be resumed without handing some twice, so the start fails (one line, exit 1) and the next
    start, warm again, restores from the beginning."""


class WarmRestart:
    """One daemon's warm-restart records and steps (see the module docstring)."""

    def __init__(self, config: WarmRestartConfig, state_db: DBConnector, config_db: DBConnector,
                 retrying: Retrying) -> None:
        self.config = config
        self.app = config.app
        self._enable = Table(state_db, rules.ENABLE_TABLE)
        self._record = Table(state_db, rules.STATE_TABLE)
        self._timers = Table(config_db, rules.CONFIG_TABLE)
        self._retrying = retrying
        #: whether this start is warm (known after check())
        self.warm = False
        self.restore_count = 0
        #: workers held until the restore is done
        self._held: list[TableWorker] = []
        self._reconciler: asyncio.Task[None] | None = None

    @property
    def restoring(self) -> bool:
        """Whether tables added now wait for the restore (a warm start, not restored yet)."""
        return self.warm and self._reconciler is None

    async def check(self) -> bool:
        """WarmStart::checkWarmStart, then `state` initialized. Returns whether the start is warm."""
        async def step() -> None:
            on, system = rules.knobs(await self._enable.hget(rules.SYSTEM_KEY, rules.ENABLE_FIELD),
                                     await self._enable.hget(self.config.container, rules.ENABLE_FIELD))
            count = await self._record.hget(self.app, rules.RESTORE_COUNT_FIELD) if on else None
            check = rules.check_warm_start(on, system, count)
            if on and not check.warm:
                log.warning("warm restart enabled but no restore_count on record: a cold start",
                            app=self.app, table=rules.STATE_TABLE)
            if check.restore_count is not None:
                await self._record.hset(self.app, rules.RESTORE_COUNT_FIELD, check.restore_count)
            self.warm = check.warm
            self.restore_count = int(check.restore_count or 0)

        await self._retrying(step, "STATE_DB")
        await self.set_state(rules.INITIALIZED)
        log.info("warm start" if self.warm else "cold start", app=self.app, container=self.config.container,
                 restore_count=self.restore_count)
        return self.warm

    async def set_state(self, state: int) -> None:
        """WarmStart::setWarmStartState."""
        name = rules.STATE_NAMES[state]
        await self._retrying(lambda: self._record.hset(self.app, rules.STATE_FIELD, name), "STATE_DB")
        log.info("warm restart state", app=self.app, state=name)

    async def reconcile_seconds(self) -> float:
        """WarmStart::getWarmStartTimer of the app, else the configured default."""
        value: list[str | None] = [None]

        async def read() -> None:
            value[0] = await self._timers.hget(self.config.container, f"{self.app}_timer")

        await self._retrying(read, "CONFIG_DB")
        return float(rules.timer_seconds(value[0]) or self.config.default_timer)

    def hold(self, worker: TableWorker) -> None:
        """A table added during a warm start: its worker starts once everything is restored."""
        self._held.append(worker)

    async def started(self, runtimes: Sequence[OrchRuntime], start_worker: Callable[[TableWorker], None],
                      on_crash: Callable[[asyncio.Task[None]], object]) -> None:
        """The daemon's tables are added and subscribed, nothing is handled yet. A warm start:
        restore every plugin's tables, `restored`, start the held workers, and reconcile later
        (`on_crash` gets that task); a cold start: `reconciled`."""
        if not self.warm:
            await self.set_state(rules.RECONCILED)
            return
        came_since: list[tuple[TableWorker, list[KeyOpFieldsValues]]] = []
        for rt in runtimes:
            for worker in rt.workers:
                try:
                    came_since.append((worker, await self._restore_table(rt, worker)))
                except CONNECTION_ERRORS as exc:
                    raise RestoreInterrupted(
                        f"warm restart of {self.app!r}: Redis went away while {worker.db_name} {worker.table} was "
                        f"restored ({type(exc).__name__}: {exc}); the next start restores again") from exc
        await self.set_state(rules.RESTORED)
        for worker, tasks in came_since:
            if tasks:
                worker.accept(tasks)
        held, self._held = self._held, []
        for worker in held:
            start_worker(worker)
        self._reconciler = asyncio.ensure_future(self._reconcile_later(runtimes))
        self._reconciler.add_done_callback(on_crash)

    async def _restore_table(self, rt: OrchRuntime, worker: TableWorker) -> list[KeyOpFieldsValues]:
        """Hand the table's existing entries to the plugin's restore(); returns the changes that
        came during the restore (a subscriber table's events after its first read)."""
        consumer = worker.consumer
        restored = 0
        came_since: list[KeyOpFieldsValues] = []
        if isinstance(consumer, SubscriberStateTable):
            while True:
                tasks = await consumer.pops()
                first = consumer.existing_popped
                await self._restore(rt, worker, tasks[:first])
                restored += first
                came_since += tasks[first:]
                if len(tasks) < consumer.pop_batch_size or first < len(tasks):
                    break
        elif isinstance(consumer, (ConsumerStateTable, ConsumerTable)):
            popped = 0
            while tasks := await consumer.pops():  # applies what waits in the channel to the entries
                popped += len(tasks)
            async for chunk in scan_table(consumer.db, worker.table, RESTORE_CHUNK):
                found = sorted(chunk.entries.items())
                await self._restore(rt, worker, [KeyOpFieldsValues(key, SET_COMMAND, fvs) for key, fvs in found])
                restored += len(found)
            if popped:
                log.info("restore: changes that waited in the channel applied to the entries first",
                         db=worker.db_name, table=worker.table, changes=popped)
        else:
            return []
        log.info("restored", orch=rt.orch.name, db=worker.db_name, table=worker.table, entries=restored)
        return came_since

    async def _restore(self, rt: OrchRuntime, worker: TableWorker, tasks: list[KeyOpFieldsValues]) -> None:
        if not tasks:
            return
        try:
            await rt.orch.restore(worker.table, tasks)
        except Exception as exc:
            raise PluginError(f"plugin {rt.orch.name!r}: restore() failed for {worker.db_name} {worker.table}: "
                              f"{type(exc).__name__}: {exc}{where(exc)}") from exc

    async def _reconcile_later(self, runtimes: Sequence[OrchRuntime]) -> None:
        """Wait for the reconcile timer or for every plugin's reconcile_now(), then reconcile."""
        seconds = await self.reconcile_seconds()
        log.info("reconcile timer started", app=self.app, seconds=seconds)
        asked = asyncio.gather(*(rt.orch.reconcile_asked.wait() for rt in runtimes))
        try:
            await asyncio.wait_for(asked, seconds)
            log.info("every plugin asked to reconcile before the timer", app=self.app)
        except TimeoutError:
            pass
        for rt in runtimes:
            try:
                await rt.orch.reconcile()
            except Exception:
                log.exception("plugin reconcile() failed; the warm restart is reported reconciled still",
                              orch=rt.orch.name)
        await self.set_state(rules.RECONCILED)

    async def close(self) -> None:
        """Shutdown: a reconcile not begun yet is not begun (the state stays `restored`)."""
        if self._reconciler is not None and not self._reconciler.done():
            self._reconciler.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reconciler
