"""The daemon: connectors, plugins and consumers from the config, then one loop of
select -> pops -> the table's worker, until a signal stops it.

Only this loop pops. State and queue tables are popped through a ReliablePop each: what a pop takes
out of Redis stays in the table's in-flight record there until its task is done, a lost reply is
read back, and a restart takes over what the last run left (reliable_pop.py). Handlers run in the
workers' tasks, and Select reads pub/sub in its own task, so neither a slow handler nor a busy loop
keeps notifications from being read.

Daemon.run reads top to bottom: start-up (`_start`, with the connections in databases.py and the
other steps in startup.py), the consume loop (`_consume`, here), Redis's health beside it
(health.py), and shutdown (`_shutdown`, its steps in shutdown.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import time
from collections.abc import Coroutine
from typing import Any

import structlog
from redis.exceptions import RedisError, ResponseError

from ..backoff import Backoff
from ..capture import CaptureWriter
from ..channels.selectable import Selectable
from ..channels.selector import Select
from ..channels.subscriber_state_table import SubscriberStateTable
from ..channels.zmq import ZmqServer
from ..fields import KeyOpFieldsValues
from ..ops import logs as swssd_logging
from ..ops.files import reason
from ..ops.metrics import LoopProbe
from ..ops.metrics_server import MetricsServer
from ..ops.sdnotify import SystemdNotifier
from ..redis.connector import DBConnector
from . import plugins
from .config import Config, TableConfig
from .databases import RETRY_MAX, RETRY_MIN, Databases
from .dead_letters import DeadLetterStore
from .health import RedisHealth
from .lease import InstanceLease
from .orch import TimerSpec, connector_key
from .plugins import PluginError
from .reliable_pop import Batch, ReliablePop
from .shutdown import STOP_HOOK_TIMEOUT, close_zmq, finish_workers, report_left, stop_plugins
from .sonic_tables import sonic_table_warnings
from .stall import stalled_tables, watch_stalls
from .startup import (
    bind_zmq_servers,
    db_names,
    read_zmq_servers,
    reconcile,
    serve_metrics,
    start_capture,
    take_leases,
    take_over,
)
from .timers import TimerRun, Timers, resolve_timers
from .warm_restart import WarmRestart
from .worker import DeadLetterHook, OrchRuntime, TableWorker, make_consumer

log = structlog.get_logger("swssd.daemon")

#: longest wait before popping a table Redis refused to pop again
_REFUSED_MAX = 5.0


class Daemon:
    """Runs the Orch plugins of one config. `await run()` returns the exit status."""

    def __init__(self, config: Config, *, handle_signals: bool = True) -> None:
        self.config = config
        self.handle_signals = handle_signals
        self.select = Select(starvation_limit=config.daemon.starvation_limit)
        self.runtimes: list[OrchRuntime] = []
        self.workers: list[TableWorker] = []
        self.connectors: dict[str, DBConnector] = {}
        self.capture: CaptureWriter | None = None
        #: called with (worker, task, reason) for every dead-lettered task
        self.dead_letter_hooks: list[DeadLetterHook] = []
        #: every dead-lettered task, kept in Redis for `swssd dead-letters`
        self.dead_letters = DeadLetterStore(config.daemon.instance, config.daemon.dead_letters_max)
        #: set once every table is subscribed and reconciled
        self.ready = asyncio.Event()
        self._by_table: dict[Selectable, TableWorker] = {}
        #: the reliable pop of each state and queue table
        self.reliable: dict[TableWorker, ReliablePop] = {}
        #: tables whose last pop Redis refused: (their backoff, time of the last log line)
        self._refused: dict[TableWorker, tuple[Backoff, float]] = {}
        self._leases: list[InstanceLease] = []
        self._lease_watchers: list[asyncio.Task[None]] = []
        #: tables reconciling in the background, subscribed when done
        self._reconciling: dict[TableWorker, asyncio.Task[None]] = {}
        self._started: list[OrchRuntime] = []
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self._kick = asyncio.Event()
        self._crashed = False
        #: True once subscribed and the first drain found no table ready (READY=1 then)
        self.serving = False
        self.notifier = SystemdNotifier()
        self.loop_probe = LoopProbe()
        self._metrics_server: MetricsServer | None = None
        self.databases = Databases(config)
        self.health = RedisHealth(config, self.select, self.notifier, self.status_line, lambda: self.pending_count)
        #: one ZmqServer per endpoint of the zmq tables, serving all of that endpoint's tables
        self.zmq_servers: dict[str, ZmqServer] = {}
        #: the plugins' periodic work (timers.py), started once ready, stopped before stop()
        self.timers = Timers()
        self.timers.on_crash = self._worker_done
        #: the daemon's part in SONiC's warm restart ([warm_restart]; warm_restart.py)
        self.warm: WarmRestart | None = None

    # -- control ------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop popping, let in-flight and popped tasks finish (bounded), then return from run()."""
        if self._stop.is_set():
            return
        log.info("stopping", pending=self.pending_count)
        self._stop.set()
        self._kick.set()

    def force(self) -> None:
        """Cancel whatever still runs and exit now."""
        log.warning("forced exit", pending=self.pending_count)
        self._stop.set()
        self._force.set()
        self._kick.set()

    def reopen(self) -> None:
        """SIGHUP: reopen the log file and capture files (after logrotate moved them)."""
        self.notifier.reloading()
        try:
            swssd_logging.reopen()
        except OSError as exc:
            log.error("log file not reopened; logging goes on to the file open before", error=reason(exc))
        if self.capture is not None:
            self.capture.reopen()
        log.info("reopened log and capture files")
        self.notifier.ready(self.status_line())

    def status_line(self) -> str:
        """One line for systemd's STATUS=: what the daemon is doing."""
        popped = sum(w.stats.popped for w in self.workers)
        handled = sum(w.stats.handled for w in self.workers)
        stalled = stalled_tables(self.workers)
        if stalled:
            state = "stalled: " + ", ".join(f"{w.db_name} {w.table}" for w in stalled)
        elif self.health.probe_error is not None:
            state = "Redis not answering, waiting"
        else:
            state = "serving" if self.redis_up else "Redis unreachable, retrying"
        return (f"{state}: {len(self.workers)} tables; popped {popped}, handled {handled}, "
                f"pending {self.pending_count}")

    @property
    def pending_count(self) -> int:
        return sum(w.pending_count for w in self.workers)

    @property
    def timer_runs(self) -> list[TimerRun]:
        """Every plugin's timers (the metrics and /health read them)."""
        return self.timers.runs

    @property
    def redis_up(self) -> bool:
        """Whether the last pop worked, every pub/sub connection is up and Redis answers the probe."""
        return self.health.up

    @property
    def command_reconnects(self) -> int:
        """Times the command connection came back after pops failed."""
        return self.health.command_reconnects

    # -- running ------------------------------------------------------------------------

    async def run(self) -> int:
        """Start, consume until stopped, shut down. Raises ConfigError / PluginError at start-up."""
        if self.handle_signals:
            self._install_signals()
        helpers: list[asyncio.Task[None]] = []
        # Not fed while a table's worker is dead or stalled: systemd restarts the daemon.
        self.notifier.start_watchdog(
            healthy=lambda: self._stop.is_set() or (all(w.alive and not w.stalled for w in self.workers)
                                                    and not self.timers.stalled())
        )
        self.notifier.status("starting")
        try:
            # Metrics first: they show redis_up 0 while Redis cannot be reached yet.
            helpers.append(asyncio.ensure_future(self.loop_probe.run()))
            helpers.append(asyncio.ensure_future(watch_stalls(self.workers, self.notifier, self.status_line)))
            self._metrics_server = await serve_metrics(self.config, self, self.loop_probe)
            if not await self._until_stopped(self._start()):
                return 1 if self._force.is_set() or self._crashed else 0  # a crash at start-up too
            helpers.append(asyncio.ensure_future(self.health.watch()))
            helpers.append(asyncio.ensure_future(self.health.probe(self.connectors)))
            helpers.append(asyncio.ensure_future(self.health.watch_keyspace_events(
                lambda: [w.consumer for w in self.workers if isinstance(w.consumer, SubscriberStateTable)]
            )))
            await self._consume()
        finally:
            for task in helpers:
                task.cancel()
            forced = await self._shutdown()
        return 1 if forced or self._crashed else 0

    def _now_serving(self) -> None:
        """Subscribed and the first drain is done: tell systemd (READY=1) and the metrics."""
        self.serving = True
        self.notifier.ready(self.status_line())
        log.info("serving", tables=len(self.workers), pending=self.pending_count)

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()

        def on_stop_signal(signame: str) -> None:
            if self._stop.is_set():
                self.force()
            else:
                log.info("signal received", signal=signame)
                self.stop()

        loop.add_signal_handler(signal.SIGTERM, on_stop_signal, "SIGTERM")
        loop.add_signal_handler(signal.SIGINT, on_stop_signal, "SIGINT")
        loop.add_signal_handler(signal.SIGHUP, self.reopen)

    async def _until_stopped(self, coro: Coroutine[Any, Any, None]) -> bool:
        """Run `coro` unless a stop comes first (then cancel it); True when it completed."""
        task = asyncio.ensure_future(coro)
        stop = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait((task, stop), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if task.done():
            task.result()
            return True
        # Asked again until it ends: a cancellation can be lost (Python 3.11's asyncio.wait_for
        # drops one that meets a completing call; a plugin's start() may catch it), and a lost one
        # would leave SIGTERM unanswered. Given up after shutdown_timeout, with a line saying so.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.daemon.shutdown_timeout
        while not task.done():
            task.cancel()
            await asyncio.wait((task,), timeout=0.1)
            if not task.done() and loop.time() > deadline:
                log.error("start-up did not stop when cancelled; exiting without it",
                          timeout=self.config.daemon.shutdown_timeout)
                break
        return False

    # -- start-up -----------------------------------------------------------------------

    async def _start(self) -> None:
        config = self.config
        databases = self.databases
        databases.report_redis_settings()
        for line in (*plugins.code_warnings(config), *config.timing_warnings(), *sonic_table_warnings(config)):
            log.warning(line)
        databases.load()
        timer_specs: list[list[TimerSpec]] = []
        for i, oc in enumerate(config.orchs):
            orch = plugins.create(oc.plugin)
            self.runtimes.append(OrchRuntime(orch, config.retry_for(oc)))
            timer_specs.append(resolve_timers(orch, oc, i, config))
            for j, db in enumerate(oc.databases):
                databases.check_db(db, f"orchs.{i}.databases.{j}")
            for db in orch.databases:
                databases.check_db(db, f"orchs.{i}.plugin", f"plugin {oc.display_name!r} asks for")
        for name, namespace in db_names(config, self.runtimes):
            self.connectors[connector_key(name, namespace)] = await databases.connect(name, namespace)
        await self.dead_letters.count(self.connectors)
        self.health.connected = True
        await take_leases(config, self.connectors, databases, self._leases)
        self._lease_watchers.extend(asyncio.ensure_future(self._on_lease_lost(lease)) for lease in self._leases)
        if config.capture.enabled:  # after the leases: a refused second daemon writes no capture line
            self.capture = await start_capture(config)
        if config.warm_restart is not None:
            await self._check_warm_start(config)
        for oc, rt, specs in zip(config.orchs, self.runtimes, timer_specs):
            rt.orch.attach(oc.display_name, oc.options, self.connectors)
            self.timers.add(rt.orch, specs, rt.retry.handler_timeout, config.daemon.stall_after)
        for oc, rt in zip(config.orchs, self.runtimes):
            try:
                await rt.orch.start()
            except Exception as exc:
                raise PluginError(
                    f"plugin {oc.display_name!r}: start() failed: {type(exc).__name__}: {exc}{plugins.where(exc)}"
                ) from exc
            self._started.append(rt)
        bind_zmq_servers(config, self.zmq_servers)
        for oc, rt in zip(config.orchs, self.runtimes):
            for t in oc.tables:
                await self._add_table(rt, t)
        read_zmq_servers(self.zmq_servers)
        await asyncio.gather(*(self.select.add(w.consumer) for w in self.workers if w not in self._reconciling))
        if self.warm is not None:
            await self.warm.started(self.runtimes, self._start_worker, self._worker_done)
        # What start-up built lives as long as the daemon: keep the cyclic GC from scanning it
        # again and again while tasks stream through (BENCHMARKS.md, table library findings).
        gc.collect()
        gc.freeze()
        self.timers.start()
        self.ready.set()
        log.info(
            "ready", orchs=[rt.orch.name for rt in self.runtimes], tables=len(self.workers),
            pending=self.pending_count, reconciling=sum(not t.done() for t in self._reconciling.values()),
        )

    async def _check_warm_start(self, config: Config) -> None:
        """WarmStart::checkWarmStart before the plugins start: they learn whether it is warm."""
        assert config.warm_restart is not None
        for name in ("STATE_DB", "CONFIG_DB"):
            self.databases.check_db(name, "warm_restart", "warm restart's records need")
            if name not in self.connectors:
                self.connectors[name] = await self.databases.connect(name, "")
        self.warm = WarmRestart(config.warm_restart, self.connectors["STATE_DB"], self.connectors["CONFIG_DB"],
                                self.databases.while_unreachable)
        warm = await self.warm.check()
        for rt in self.runtimes:
            rt.orch.warm_start = warm

    def _start_worker(self, worker: TableWorker) -> None:
        worker.start().add_done_callback(self._worker_done)

    async def _on_lease_lost(self, lease: InstanceLease) -> None:
        """Another process popping under our name would take our batches: stop (exit 1)."""
        await lease.lost.wait()
        self._crashed = True
        self.stop()

    async def _add_table(self, rt: OrchRuntime, tc: TableConfig) -> None:
        db_name = connector_key(tc.db, tc.namespace)
        db = self.connectors[db_name]
        table, kind = tc.table, tc.resolved_kind
        consumer = make_consumer(
            db, table, kind, tc.pop_batch_size, tc.priority,
            enable_keyspace_events=self.config.daemon.enable_keyspace_events,
            zmq_server=self.zmq_servers.get(tc.endpoint or ""), db_persistence=tc.db_persistence,
            pending_limit=tc.pending_limit or self.config.daemon.pending_limit,
        )
        worker = TableWorker(
            rt, consumer, db_name, tc.pending_limit or self.config.daemon.pending_limit,
            self._dead_letter, self.select, table=table, kind=kind,
            stall_after=tc.stall_after or self.config.daemon.stall_after,
        )
        if kind == "zmq":
            worker.pending_bytes = self.config.daemon.zmq_buffer_bytes
        self.workers.append(worker)
        self._by_table[consumer] = worker
        warm = self.warm
        restoring = warm is not None and warm.restoring
        if warm is not None and restoring:
            warm.hold(worker)  # no task runs before the restore
        else:
            self._start_worker(worker)
        if kind in ("state", "queue"):
            stats = worker.stats
            source = ReliablePop(
                consumer, worker.pending, instance=self.config.daemon.instance,  # type: ignore[arg-type]
                on_set_aside=lambda n: setattr(stats, "set_aside", stats.set_aside + n),
                crash_limit=self.config.daemon.set_aside_after_crashes,
            )
            self.reliable[worker] = source
            worker.on_progress = source.progress
            worker.guard = source.guard
            await self.databases.while_unreachable(lambda: take_over(worker, source), db_name)
        if tc.reconcile and not restoring:  # on a warm start restore() gets the entries instead
            task = asyncio.ensure_future(self._reconcile_then_subscribe(worker, db))
            task.add_done_callback(self._worker_done)  # failing there is a crash, as a worker's
            self._reconciling[worker] = task

    async def _reconcile_then_subscribe(self, worker: TableWorker, db: DBConnector) -> None:
        """Reconcile in the background (past pending_limit it waits for the worker to work the
        entries down, so a large table neither fills memory nor holds up the other tables), then
        subscribe: the table is popped only once its existing entries are pending, so no
        reconciled value can land after a newer popped one."""
        await self.databases.while_unreachable(lambda: reconcile(worker, db), worker.db_name)
        await self.select.add(worker.consumer)

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        self._crashed = True
        self.stop()  # first: the line below may fail on what the exception says
        with contextlib.suppress(Exception):
            log.critical("worker crashed; stopping", exc_info=task.exception())

    # -- the consume loop ---------------------------------------------------------------

    async def _consume(self) -> None:
        select = self.select
        backoff = Backoff(RETRY_MIN, RETRY_MAX)
        while not self._stop.is_set():
            self._kick.clear()
            table = await select.select(timeout=0)
            if table is None:
                if not self.serving:
                    self._now_serving()
                table = await self._wait_ready()
            if table is None:
                continue
            worker = self._by_table[table]
            source = self.reliable.get(worker)
            try:
                if source is None:
                    self._deliver(worker, [Batch(0, await table.pops())])
                else:
                    self._deliver(worker, await source.pop())
            except ResponseError as exc:
                self._pop_refused(worker, exc)
                continue
            except (RedisError, OSError) as exc:
                # The reliable pop reads back what a pop that ran took, before popping again.
                self.health.pop_failed(worker.db_name, worker.table, exc)
                await self._sleep(backoff.next())
                continue
            self.health.pop_worked()
            if worker in self._refused:
                del self._refused[worker]
                log.info("table popped again", db=worker.db_name, table=worker.table)
            backoff.reset()

    def _deliver(self, worker: TableWorker, batches: list[Batch]) -> None:
        """Capture popped tasks, then hand them to the table's worker (with their in-flight batch)."""
        for seq, tasks in batches:
            if tasks:
                if self.capture is not None:
                    self.capture.record(
                        worker.db_name, worker.table, worker.consumer.db.separator, tasks, kind=worker.kind
                    )
                worker.accept(tasks, seq or None)
                worker.runtime.new_data()

    def _pop_refused(self, worker: TableWorker, exc: ResponseError) -> None:
        """Redis answered the pop with an error (a wrong-type key, a script error): Redis is up, this
        table is not. It is not popped for a while (longer each time), logged each health_interval."""
        worker.stats.pop_errors += 1
        now = time.monotonic()
        backoff, logged = self._refused.get(worker) or (Backoff(RETRY_MIN * 4, _REFUSED_MAX), -1e9)
        delay = backoff.next()
        if now - logged >= self.config.daemon.health_interval:
            log.error("pop refused by Redis; the table is not popped until this is fixed", db=worker.db_name,
                      table=worker.table, error=f"{type(exc).__name__}: {exc}", retry_in=round(delay, 2))
            logged = now
        self._refused[worker] = (backoff, logged)
        self.select.pause(worker.consumer)
        asyncio.get_running_loop().call_later(delay, self.select.resume, worker.consumer)

    async def _settle_prefetched(self, timeout: float) -> None:
        """At shutdown: a pop already running in Redis took its changes out; hand them over (they
        are in the in-flight record anyway: a table whose pop fails here gets them at the next start)."""
        for worker, source in self.reliable.items():
            try:
                self._deliver(worker, await asyncio.wait_for(source.settle(), timeout))
            except (RedisError, OSError, TimeoutError) as exc:
                log.warning("prefetched pop not handed over at shutdown; the next start takes it over",
                            db=worker.db_name, table=worker.table, error=f"{type(exc).__name__}: {exc}")

    async def _wait_ready(self) -> Selectable | None:
        """Wait for a ready table, or for a kick (stop)."""
        sel = asyncio.ensure_future(self.select.select())
        kick = asyncio.ensure_future(self._kick.wait())
        await asyncio.wait((sel, kick), return_when=asyncio.FIRST_COMPLETED)
        kick.cancel()
        if not sel.done():
            sel.cancel()
        await asyncio.wait((sel,))
        return None if sel.cancelled() else sel.result()

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    def _dead_letter(self, worker: TableWorker, task: KeyOpFieldsValues, reason: str, attempts: int) -> None:
        self.dead_letters.record(worker.consumer.db, worker.db_name, worker.table, worker.kind, task, reason, attempts)
        if self.capture is not None:
            self.capture.record(
                worker.db_name, worker.table, worker.consumer.db.separator, [task],
                kind=worker.kind, dead_letter=True, reason=reason,
            )
        for hook in self.dead_letter_hooks:
            try:
                hook(worker, task, reason)
            except Exception:
                log.exception("dead-letter hook failed", table=worker.table, key=task.key)

    # -- shutdown -----------------------------------------------------------------------

    async def _shutdown(self) -> bool:
        """Finish popped tasks (bounded), stop the plugins, flush captures, close connections.
        Returns whether the exit was forced."""
        self._stop.set()
        self.serving = False
        self.notifier.stopping()
        self.timers.halt()
        for task in self._reconciling.values():  # no more reconciled entries; what is pending runs
            task.cancel()
        deadline = asyncio.get_running_loop().time() + self.config.daemon.shutdown_timeout
        if not self._force.is_set():
            await self._settle_prefetched(self.config.daemon.shutdown_timeout / 2)
        await finish_workers(self.workers, self._force, deadline, self.config.daemon.shutdown_timeout)
        await self.timers.stop(deadline, self._force)
        if self.warm is not None:
            await self.warm.close()
        await stop_plugins(self._started, deadline)
        for task in self._lease_watchers:
            task.cancel()
        for source in self.reliable.values():
            await source.close(STOP_HOOK_TIMEOUT, clean=not (self._crashed or self._force.is_set()))
        report_left(self.workers, self.reliable, self.config.daemon.instance)
        await close_zmq(self.workers, self.zmq_servers)
        for lease in self._leases:
            await lease.release()
        await self.dead_letters.close(STOP_HOOK_TIMEOUT)
        if self.capture is not None:
            await self.capture.close()
        await self.select.close()
        for db in self.connectors.values():
            await db.close()
        if self._metrics_server is not None:
            await self._metrics_server.close()
        await self.notifier.close()
        if self.ready.is_set():
            log.info("stopped", handled=sum(w.stats.handled for w in self.workers))
        return self._force.is_set()

