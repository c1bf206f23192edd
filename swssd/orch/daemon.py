"""The daemon: connectors, plugins and consumers from the config, then one loop of
select -> pops -> the table's worker, until a signal stops it.

Only this loop pops, and a pop is never cancelled half way (its data would be gone from Redis and
not in memory): after a full batch the next pop of that table runs ahead in Redis (prefetch) and is
settled, never dropped, at shutdown. Pops are journaled: when one fails, what it took out of
Redis (if it ran) is read back from its journal before anything is popped again. Handlers run in
the workers' tasks, and Select reads pub/sub in its own task, so neither a slow handler nor a
busy loop keeps notifications from being read.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import time
from collections.abc import Coroutine
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import structlog
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .. import logging as swssd_logging
from ..capture import CaptureWriter
from ..connector import CONNECTION_ERRORS, DBConnector
from ..consumer_base import ConsumerTableBase
from ..dbconfig import SonicDBConfig, SonicDBGlobalConfig
from ..errors import ConfigError, RedisUnreachableError, UnknownDatabaseError, UnknownNamespaceError
from ..fields import SET_COMMAND, KeyOpFieldsValues
from ..metrics import LoopProbe
from ..metrics import serve as serve_metrics
from ..sdnotify import SystemdNotifier
from ..select import Select
from ..table import Table
from . import plugins
from .config import PLAIN_HASH_DATABASES, SONIC_DATABASES, Config, TableConfig
from .orch import connector_key
from .plugins import PluginError
from .worker import DeadLetterHook, OrchRuntime, TableWorker, make_consumer

log = structlog.get_logger("swssd.daemon")

_BACKOFF_MIN = 0.05
_BACKOFF_MAX = 2.0
#: how long each plugin's stop() may take at shutdown
_STOP_HOOK_TIMEOUT = 5.0
#: what redis-py says when the server closed a connection that was waiting for a reply
_CLOSED_WHILE_WAITING = "Connection closed by server"


def _reply_lost(exc: BaseException) -> bool:
    """Whether a pop failed after it was sent: Redis may have run the script (taking the changes
    out of the key set) and the reply, with those changes, is gone. No client of the C++ wire
    protocol can tell; the daemon's journaled pops read the batch back (Daemon._recover)."""
    return isinstance(exc, RedisTimeoutError) or _CLOSED_WHILE_WAITING in str(exc)


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
        #: set once every table is subscribed and reconciled
        self.ready = asyncio.Event()
        self._by_table: dict[ConsumerTableBase, TableWorker] = {}
        #: tables whose last pop failed: their journal is read before anything is popped again
        self._unrecovered: list[TableWorker] = []
        self._started: list[OrchRuntime] = []
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self._kick = asyncio.Event()
        self._pop_error: str | None = None
        self._down_since: float | None = None
        self._crashed = False
        #: True once subscribed and the first drain found no table ready (READY=1 then)
        self.serving = False
        #: times the command connection came back after pops failed
        self.command_reconnects = 0
        self.notifier = SystemdNotifier()
        self.loop_probe = LoopProbe()
        self._metrics_server: Any = None
        self._db_config: SonicDBConfig | None = None
        self._global_config: SonicDBGlobalConfig | None = None

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
        swssd_logging.reopen()
        if self.capture is not None:
            self.capture.reopen()
        log.info("reopened log and capture files")
        self.notifier.ready(self.status_line())

    def status_line(self) -> str:
        """One line for systemd's STATUS=: what the daemon is doing."""
        popped = sum(w.stats.popped for w in self.workers)
        handled = sum(w.stats.handled for w in self.workers)
        state = "serving" if self.redis_up else "Redis unreachable, retrying"
        return (f"{state}: {len(self.workers)} tables; popped {popped}, handled {handled}, "
                f"pending {self.pending_count}")

    @property
    def pending_count(self) -> int:
        return sum(w.pending_count for w in self.workers)

    @property
    def redis_up(self) -> bool:
        """Whether the last pop worked and every pub/sub connection is up."""
        return self._pop_error is None and self.select.connected

    # -- running ------------------------------------------------------------------------

    async def run(self) -> int:
        """Start, consume until stopped, shut down. Raises ConfigError / PluginError at start-up."""
        if self.handle_signals:
            self._install_signals()
        helpers: list[asyncio.Task[None]] = []
        self.notifier.start_watchdog()
        self.notifier.status("starting")
        try:
            if not await self._until_stopped(self._start()):
                return 1 if self._force.is_set() else 0
            helpers.append(asyncio.ensure_future(self._watch_health()))
            helpers.append(asyncio.ensure_future(self.loop_probe.run()))
            self._serve_metrics()
            await self._consume()
        finally:
            for task in helpers:
                task.cancel()
            forced = await self._shutdown()
        return 1 if forced or self._crashed else 0

    def _serve_metrics(self) -> None:
        cfg = self.config.metrics
        if not cfg.enabled:
            return
        try:
            self._metrics_server = serve_metrics(self, self.loop_probe, cfg.address, cfg.port)
        except OSError as exc:
            log.error("metrics endpoint not served", address=cfg.address, port=cfg.port, error=str(exc))
            return
        log.info("serving metrics", url=f"http://{cfg.address}:{cfg.port}/metrics")

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
        task.cancel()
        await asyncio.wait((task,))
        return False

    # -- start-up -----------------------------------------------------------------------

    async def _start(self) -> None:
        config = self.config
        self._load_db_config()
        for i, oc in enumerate(config.orchs):
            orch = plugins.create(oc.plugin)
            self.runtimes.append(OrchRuntime(orch, config.retry_for(oc)))
            for j, db in enumerate(oc.databases):
                self._check_db(db, f"orchs.{i}.databases.{j}")
            for db in orch.databases:
                self._check_db(db, f"orchs.{i}.plugin", f"plugin {oc.display_name!r} asks for")
        names = _db_names(config, self.runtimes)
        if config.capture.enabled:
            await self._start_capture()
        for name, namespace in names:
            self.connectors[connector_key(name, namespace)] = await self._connect(name, namespace)
        for oc, rt in zip(config.orchs, self.runtimes):
            rt.orch.attach(oc.display_name, oc.options, self.connectors)
        for oc, rt in zip(config.orchs, self.runtimes):
            try:
                await rt.orch.start()
            except Exception as exc:
                raise PluginError(f"plugin {oc.display_name!r}: start() failed: {type(exc).__name__}: {exc}") from exc
            self._started.append(rt)
        for oc, rt in zip(config.orchs, self.runtimes):
            for t in oc.tables:
                await self._add_table(rt, t)
        await asyncio.gather(*(self.select.add(w.consumer) for w in self.workers))
        # What start-up built lives as long as the daemon: keep the cyclic GC from scanning it
        # again and again while tasks stream through (BENCHMARKS.md, table library findings).
        gc.collect()
        gc.freeze()
        self.ready.set()
        log.info(
            "ready", orchs=[rt.orch.name for rt in self.runtimes], tables=len(self.workers),
            reconciled=self.pending_count,
        )

    def _load_db_config(self) -> None:
        path = self.config.database_config_path()
        if path is not None:
            self._db_config = SonicDBConfig.load(path)
        elif self.config.redis.url is None:
            raise ConfigError(self.config.path, "redis", "no Redis configured: set database_config or url")
        for i, oc in enumerate(self.config.orchs):
            for j, t in enumerate(oc.tables):
                field = f"orchs.{i}.tables.{j}"
                if t.namespace:
                    self._check_namespaced_db(t.db, t.namespace, field)
                else:
                    self._check_db(t.db, f"{field}.db")
                if t.kind == "state" and t.db in PLAIN_HASH_DATABASES:
                    how = "configured as" if t.kind_explicit else "by default"
                    log.warning(
                        f"{t.db} {t.table} is a key-set table ({how} kind = \"state\"), but SONiC writes "
                        f"{t.db} with plain hash writes, which never reach a key-set consumer: if that is "
                        "how this table is written, set kind = \"subscriber\"", field=field,
                    )

    def _check_namespaced_db(self, name: str, namespace: str, field: str) -> None:
        """A table of a namespace: its database must be in that namespace of database_global.json."""
        if self.config.redis.url is not None:
            raise ConfigError(self.config.path, f"{field}.namespace",
                              "namespaces need database_global.json; they cannot be used with redis.url")
        if self._global_config is None:
            self._global_config = SonicDBGlobalConfig.load(self.config.redis.database_global_config)
        try:
            self._global_config.database(name, namespace)
        except (UnknownDatabaseError, UnknownNamespaceError) as exc:
            raise ConfigError(self.config.path, field, str(exc)) from None

    def _check_db(self, name: str, field: str, who: str = "") -> None:
        if self._db_config is not None:
            try:
                self._db_config.database(name)
            except UnknownDatabaseError as exc:
                raise ConfigError(self.config.path, field, f"{who} {exc}".strip()) from None
        elif name not in SONIC_DATABASES:
            known = ", ".join(SONIC_DATABASES)
            raise ConfigError(
                self.config.path, field,
                f"{who} unknown database {name!r}; with a Redis url the known databases are: {known}".strip(),
            )

    async def _start_capture(self) -> None:
        cfg = self.config.capture
        self.capture = CaptureWriter(cfg.directory, host=cfg.host, max_bytes=cfg.max_bytes, rec=cfg.rec)
        try:
            await self.capture.start()
        except OSError as exc:
            self.capture = None
            raise ConfigError(self.config.path, "capture.directory", f"cannot write captures there: {exc}") from None
        log.info("capturing", directory=str(cfg.directory), rec=cfg.rec)

    async def _connect(self, name: str, namespace: str = "") -> DBConnector:
        """Connect to one database, waiting (and saying so) while Redis is unreachable."""
        delay = _BACKOFF_MIN
        last_log = 0.0
        r = self.config.redis
        while True:
            try:
                if namespace:
                    return await DBConnector.connect(
                        name, self._global_config, namespace=namespace,
                        username=r.username, password=r.password, ssl=r.tls,
                    )
                if self._db_config is not None:
                    return await DBConnector.connect(
                        name, self._db_config, username=r.username, password=r.password, ssl=r.tls
                    )
                db_id, separator = SONIC_DATABASES[name]
                return await DBConnector.from_url(self._url(), db_id=db_id, separator=separator, name=name)
            except (RedisUnreachableError, *CONNECTION_ERRORS) as exc:
                now = time.monotonic()
                if now - last_log >= self.config.daemon.health_interval:
                    log.warning("waiting for Redis", db=connector_key(name, namespace), error=str(exc))
                    last_log = now
            await asyncio.sleep(delay)
            delay = min(delay * 2, _BACKOFF_MAX)

    def _url(self) -> str:
        r = self.config.redis
        assert r.url is not None
        parts = urlsplit(r.url)
        scheme = "rediss" if r.tls and parts.scheme == "redis" else parts.scheme
        netloc = parts.netloc
        if (r.username or r.password) and "@" not in netloc:
            user = quote(r.username or "", safe="")
            password = quote(r.password or "", safe="")
            netloc = f"{user}:{password}@{netloc}"
        return urlunsplit((scheme, netloc, parts.path, parts.query, parts.fragment))

    async def _add_table(self, rt: OrchRuntime, tc: TableConfig) -> None:
        db_name = connector_key(tc.db, tc.namespace)
        db = self.connectors[db_name]
        table, kind = tc.table, tc.resolved_kind
        # The library's pops never resend on a lost connection, so a lost reply is seen (_reply_lost).
        consumer = make_consumer(
            db, table, kind, tc.pop_batch_size, tc.priority,
            enable_keyspace_events=self.config.daemon.enable_keyspace_events,
        )
        worker = TableWorker(
            rt, consumer, db_name, tc.pending_limit or self.config.daemon.pending_limit,
            self._dead_letter, self._kick.set, table=table, kind=kind,
        )
        if tc.reconcile:
            existing = await Table(db, table).dump()
            worker.pending.add_many(
                KeyOpFieldsValues(key, SET_COMMAND, list(existing[key].items())) for key in sorted(existing)
            )
            log.info("reconciled", db=db_name, table=table, entries=len(existing))
        self.workers.append(worker)
        self._by_table[consumer] = worker
        worker.start().add_done_callback(self._worker_done)

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        self._crashed = True
        log.critical("worker crashed; stopping", exc_info=task.exception())
        self.stop()

    # -- the consume loop ---------------------------------------------------------------

    async def _consume(self) -> None:
        select = self.select
        delay = _BACKOFF_MIN
        while not self._stop.is_set():
            self._kick.clear()
            if self._unrecovered and not await self._recover():
                await self._sleep(delay)
                delay = min(delay * 2, _BACKOFF_MAX)
                continue
            table = await select.select(timeout=0)
            if table is None:
                if not self.serving:
                    self._now_serving()
                table = await self._wait_ready()
            if table is None:
                continue
            worker = self._by_table[table]
            try:
                tasks = await table.pops()
            except (RedisError, OSError) as exc:
                # Any failure may have come after Redis ran the pop; the journal tells.
                worker.stats.interrupted_pops += _reply_lost(exc)
                self._unrecovered.append(worker)
                self._pop_failed(worker, exc)
                await self._sleep(delay)
                delay = min(delay * 2, _BACKOFF_MAX)
                continue
            if self._pop_error is not None:
                self._redis_back()
            delay = _BACKOFF_MIN
            self._deliver(worker, tasks)

    def _deliver(self, worker: TableWorker, tasks: list[KeyOpFieldsValues]) -> None:
        """Capture popped tasks, then hand them to the table's worker."""
        if tasks:
            if self.capture is not None:
                self.capture.record(worker.db_name, worker.table, worker.consumer.db.separator, tasks, kind=worker.kind)
            worker.accept(tasks)
            worker.runtime.new_data()

    async def _recover(self) -> bool:
        """Hand over what the failed pops took out of Redis, read back from their journals.
        False while Redis does not answer (the tables stay listed and are not popped)."""
        while self._unrecovered:
            worker = self._unrecovered[0]
            try:
                tasks = await worker.consumer.recover()
            except (RedisError, OSError) as exc:
                self._pop_failed(worker, exc)
                return False
            del self._unrecovered[0]
            if tasks:
                log.warning("pop recovered", db=worker.db_name, table=worker.table, tasks=len(tasks))
            self._deliver(worker, tasks)
        return True

    async def _settle_prefetched(self, timeout: float) -> None:
        """At shutdown: a pop already running in Redis took its changes out; hand them over, or
        read them back from the journal when its reply was lost."""
        for worker in self.workers:
            try:
                self._deliver(worker, await asyncio.wait_for(worker.consumer.settle(), timeout))
            except TimeoutError:
                log.error("prefetched pop did not finish at shutdown", db=worker.db_name, table=worker.table)
            except (RedisError, OSError) as exc:
                worker.stats.interrupted_pops += _reply_lost(exc)
                self._unrecovered.append(worker)
                log.warning("prefetched pop failed at shutdown", db=worker.db_name, table=worker.table,
                            error=str(exc))
        try:
            if not await asyncio.wait_for(self._recover(), timeout):
                log.error("pops not recovered at shutdown: their journals stay in Redis for an hour",
                          tables=[w.table for w in self._unrecovered])
        except TimeoutError:
            log.error("recovering pops did not finish at shutdown", tables=[w.table for w in self._unrecovered])

    async def _drop_journals(self) -> None:
        """At a clean shutdown: the journals of answered or recovered pops are no longer needed."""
        for worker in self.workers:
            consumer = worker.consumer
            if worker in self._unrecovered or getattr(consumer, "journal", None) is None:
                continue
            try:
                await asyncio.wait_for(consumer.db.redis.delete(consumer.journal), _STOP_HOOK_TIMEOUT)
            except (RedisError, OSError, TimeoutError) as exc:
                log.warning("pop journal not removed (it expires within an hour)", table=worker.table,
                            error=str(exc))

    async def _wait_ready(self) -> ConsumerTableBase | None:
        """Wait for a ready table, or for a kick (stop, or a paused table resumed)."""
        sel = asyncio.ensure_future(self.select.select())
        kick = asyncio.ensure_future(self._kick.wait())
        await asyncio.wait((sel, kick), return_when=asyncio.FIRST_COMPLETED)
        kick.cancel()
        if not sel.done():
            sel.cancel()
        await asyncio.wait((sel,))
        return None if sel.cancelled() else sel.result()

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except TimeoutError:
            pass

    def _pop_failed(self, worker: TableWorker, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if self._pop_error is None:
            self._down_since = time.monotonic()
            log.warning("pop failed; retrying", db=worker.db_name, table=worker.table, error=error)
        self._pop_error = error

    def _redis_back(self) -> None:
        down = time.monotonic() - (self._down_since or time.monotonic())
        log.info("Redis reachable again", down_for=round(down, 3))
        self.command_reconnects += 1
        self._pop_error = None
        self._down_since = None

    async def _watch_health(self) -> None:
        """Say so, every health_interval, while Redis cannot be reached."""
        pubsub_down_since: float | None = None
        while True:
            await asyncio.sleep(self.config.daemon.health_interval)
            self.notifier.status(self.status_line())
            now = time.monotonic()
            if self.select.connected:
                if pubsub_down_since is not None:
                    log.info("Redis pub/sub connected again", down_for=round(now - pubsub_down_since, 3))
                pubsub_down_since = None
            elif pubsub_down_since is None:
                pubsub_down_since = now
            if not self.redis_up:
                since = self._down_since or pubsub_down_since or now
                log.warning(
                    "Redis unreachable; still retrying", down_for=round(now - since, 1),
                    error=self._pop_error or "pub/sub connection down", pending=self.pending_count,
                )

    def _dead_letter(self, worker: TableWorker, task: KeyOpFieldsValues, reason: str) -> None:
        if self.capture is not None:
            self.capture.record(
                worker.db_name, worker.table, worker.consumer.db.separator, [task],
                kind=worker.kind, dead_letter=True, reason=reason,
            )
        for hook in self.dead_letter_hooks:
            try:
                hook(worker, task, reason)
            except Exception:  # noqa: BLE001 - a hook must not stop the worker
                log.exception("dead-letter hook failed", table=worker.table, key=task.key)

    # -- shutdown -----------------------------------------------------------------------

    async def _shutdown(self) -> bool:
        """Finish popped tasks (bounded), stop the plugins, flush captures, close connections.
        Returns whether the exit was forced."""
        self._stop.set()
        self.serving = False
        self.notifier.stopping()
        deadline = asyncio.get_running_loop().time() + self.config.daemon.shutdown_timeout
        if not self._force.is_set():
            await self._settle_prefetched(self.config.daemon.shutdown_timeout / 2)
        tasks = [t for t in (w.finish() for w in self.workers) if t is not None]
        if tasks:
            finished = asyncio.ensure_future(asyncio.wait(tasks, timeout=self.config.daemon.shutdown_timeout))
            forced = asyncio.ensure_future(self._force.wait())
            await asyncio.wait((finished, forced), return_when=asyncio.FIRST_COMPLETED)
            forced.cancel()
            if not self._force.is_set() and not all(t.done() for t in tasks):
                log.warning("shutdown timeout: cancelling handlers", timeout=self.config.daemon.shutdown_timeout)
            for w in self.workers:
                w.cancel()
            # A handler may swallow the cancellation; do not wait on it forever.
            await asyncio.wait(tasks, timeout=_STOP_HOOK_TIMEOUT)
            finished.cancel()
        for rt in reversed(self._started):
            budget = max(0.1, min(_STOP_HOOK_TIMEOUT, deadline - asyncio.get_running_loop().time()))
            try:
                await asyncio.wait_for(rt.orch.stop(), budget)
            except Exception:  # noqa: BLE001 - keep shutting down the others
                log.exception("plugin stop() failed", orch=rt.orch.name)
        left = self.pending_count
        if left:
            log.warning(
                "stopped with tasks not handled (a state table keeps their entries: "
                "reconcile = true hands them over again)", tasks=left,
            )
        if not self._force.is_set():
            await self._drop_journals()
        if self.capture is not None:
            await self.capture.close()
        await self.select.close()
        for db in self.connectors.values():
            await db.close()
        if self._metrics_server is not None:
            await asyncio.to_thread(self._metrics_server.shutdown)
        await self.notifier.close()
        if self.ready.is_set():
            log.info("stopped", handled=sum(w.stats.handled for w in self.workers))
        return self._force.is_set()


def _db_names(config: Config, runtimes: list[OrchRuntime]) -> list[tuple[str, str]]:
    """Every (database, namespace) a table or plugin needs, in config order."""
    names: dict[tuple[str, str], None] = {}
    for oc, rt in zip(config.orchs, runtimes):
        for t in oc.tables:
            names[(t.db, t.namespace)] = None
        for name in (*oc.databases, *rt.orch.databases):
            names[(name, "")] = None
    return list(names)
