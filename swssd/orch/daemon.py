"""The daemon: connectors, plugins and consumers from the config, then one loop of
select -> pops -> the table's worker, until a signal stops it.

Only this loop pops. State and queue tables are popped through a ReliablePop each: what a pop takes
out of Redis stays in the table's in-flight record there until its task is done, a lost reply is
read back, and a restart takes over what the last run left (reliable_pop.py). Handlers run in the
workers' tasks, and Select reads pub/sub in its own task, so neither a slow handler nor a busy loop
keeps notifications from being read.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import os
import signal
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import structlog
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..backoff import Backoff
from ..capture import CaptureWriter
from ..channels.selectable import Selectable
from ..channels.selector import Select
from ..channels.zmq import ZmqConsumerStateTable, ZmqServer
from ..errors import ConfigError, RedisAuthError, RedisUnreachableError, UnknownDatabaseError, UnknownNamespaceError
from ..fields import SET_COMMAND, KeyOpFieldsValues
from ..ops import logs as swssd_logging
from ..ops.files import reason
from ..ops.metrics import LoopProbe
from ..ops.metrics import serve as serve_metrics
from ..ops.metrics_server import MetricsServer
from ..ops.sdnotify import SystemdNotifier
from ..redis import redis_url
from ..redis.connector import CONNECTION_ERRORS, DBConnector
from ..redis.dbconfig import SonicDBConfig, SonicDBGlobalConfig, resolve_config
from ..redis.scan import read_table
from ..schema import DATABASES
from . import plugins
from .config import PLAIN_HASH_DATABASES, Config, TableConfig
from .lease import InstanceInUseError, InstanceLease
from .orch import connector_key
from .plugins import PluginError
from .reliable_pop import Batch, ReliablePop
from .worker import DeadLetterHook, OrchRuntime, TableWorker, make_consumer

log = structlog.get_logger("swssd.daemon")

_BACKOFF_MIN = 0.05
_BACKOFF_MAX = 2.0
#: how long each plugin's stop() may take at shutdown
_STOP_HOOK_TIMEOUT = 5.0
#: longest wait before popping a table Redis refused to pop again
_REFUSED_MAX = 5.0
#: keys a reconcile asks SCAN for, and HGETALLs sent in one pipeline
_RECONCILE_CHUNK = 512
#: characters of a key in a log line
_KEY_EXCERPT = 200


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
        self._by_table: dict[Selectable, TableWorker] = {}
        #: the reliable pop of each state and queue table
        self.reliable: dict[TableWorker, ReliablePop] = {}
        #: tables whose last pop Redis refused: (their backoff, time of the last log line)
        self._refused: dict[TableWorker, tuple[Backoff, float]] = {}
        self._leases: list[InstanceLease] = []
        self._lease_watchers: list[asyncio.Task[None]] = []
        self._started: list[OrchRuntime] = []
        self._stop = asyncio.Event()
        self._force = asyncio.Event()
        self._kick = asyncio.Event()
        self._pop_error: str | None = None
        #: why the liveness probe last failed (None while every server answers its PING)
        self._probe_error: str | None = None
        self._probe_down_since: float | None = None
        self._down_since: float | None = None
        self._crashed = False
        #: True once subscribed and the first drain found no table ready (READY=1 then)
        self.serving = False
        #: times the command connection came back after pops failed
        self.command_reconnects = 0
        self.notifier = SystemdNotifier()
        self.loop_probe = LoopProbe()
        self._metrics_server: MetricsServer | None = None
        #: True once every database is connected (redis_up is 0 before)
        self._connected = False
        self._db_config: SonicDBConfig | None = None
        self._global_config: SonicDBGlobalConfig | None = None
        #: one ZmqServer per endpoint of the zmq tables, serving all of that endpoint's tables
        self.zmq_servers: dict[str, ZmqServer] = {}

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
        if self._probe_error is not None:
            state = "Redis not answering, waiting"
        else:
            state = "serving" if self.redis_up else "Redis unreachable, retrying"
        return (f"{state}: {len(self.workers)} tables; popped {popped}, handled {handled}, "
                f"pending {self.pending_count}")

    @property
    def pending_count(self) -> int:
        return sum(w.pending_count for w in self.workers)

    @property
    def redis_up(self) -> bool:
        """Whether the last pop worked, every pub/sub connection is up and Redis answers the probe."""
        return (self._connected and self._pop_error is None and self._probe_error is None
                and self.select.connected)

    # -- running ------------------------------------------------------------------------

    async def run(self) -> int:
        """Start, consume until stopped, shut down. Raises ConfigError / PluginError at start-up."""
        if self.handle_signals:
            self._install_signals()
        helpers: list[asyncio.Task[None]] = []
        self.notifier.start_watchdog()
        self.notifier.status("starting")
        try:
            # Metrics first: they show redis_up 0 while Redis cannot be reached yet.
            helpers.append(asyncio.ensure_future(self.loop_probe.run()))
            await self._serve_metrics()
            if not await self._until_stopped(self._start()):
                return 1 if self._force.is_set() else 0
            helpers.append(asyncio.ensure_future(self._watch_health()))
            helpers.append(asyncio.ensure_future(self._probe_redis()))
            await self._consume()
        finally:
            for task in helpers:
                task.cancel()
            forced = await self._shutdown()
        return 1 if forced or self._crashed else 0

    async def _serve_metrics(self) -> None:
        """Raises ConfigError when [metrics] cannot be bound: a port held by another process would
        have monitoring read that process instead, so it is a config error, not a warning."""
        cfg = self.config.metrics
        if not cfg.enabled:
            return
        try:
            self._metrics_server = await serve_metrics(self, self.loop_probe, cfg.address, cfg.port)
        except OSError as exc:
            lookup = isinstance(exc, socket.gaierror)  # errno is an EAI_* code then
            field = "address" if lookup or exc.errno == errno.EADDRNOTAVAIL else "port"
            why = os.strerror(exc.errno) if exc.errno and not lookup else exc.strerror or str(exc)
            raise ConfigError(self.config.path, f"metrics.{field}",
                              f"cannot serve metrics on {cfg.address} port {cfg.port}: {why}") from None
        log.info("serving metrics", url=f"http://{cfg.address}:{cfg.port}/metrics")
        if not self._metrics_server.loopback_only:
            log.warning("metrics endpoint reachable beyond this host: anyone who can connect reads the "
                        "daemon's figures; bind 127.0.0.1 or firewall it", addresses=self._metrics_server.addresses)

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
        self._report_redis_settings()
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
        self._connected = True
        await self._take_leases()
        for oc, rt in zip(config.orchs, self.runtimes):
            rt.orch.attach(oc.display_name, oc.options, self.connectors)
        for oc, rt in zip(config.orchs, self.runtimes):
            try:
                await rt.orch.start()
            except Exception as exc:
                raise PluginError(f"plugin {oc.display_name!r}: start() failed: {type(exc).__name__}: {exc}") from exc
            self._started.append(rt)
        self._bind_zmq_servers()
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

    def _report_redis_settings(self) -> None:
        """Exposed secrets and unverified TLS, one warning line each; where the password came from."""
        r = self.config.redis
        for line in r.warnings(self.config.path):
            log.warning(line)
        if r.password is not None and r.password_source:
            log.info("Redis password", source=r.password_source, user=r.username or "default")

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
        elif name not in DATABASES:
            known = ", ".join(DATABASES)
            raise ConfigError(
                self.config.path, field,
                f"{who} unknown database {name!r}; with a Redis url the known databases are: {known}".strip(),
            )

    async def _start_capture(self) -> None:
        cfg = self.config.capture
        self.capture = CaptureWriter(cfg.directory, host=cfg.host, max_bytes=cfg.max_bytes, rec=cfg.rec,
                                     retry_interval=cfg.retry_interval)
        await self.capture.start()  # a directory it cannot write is a warning, retried: capture is optional
        if self.capture.writing:
            log.info("capturing", directory=str(cfg.directory), rec=cfg.rec)

    async def _connect(self, name: str, namespace: str = "") -> DBConnector:
        """Connect to one database, waiting (and saying so) while Redis is unreachable."""
        backoff = Backoff(_BACKOFF_MIN, _BACKOFF_MAX)
        last_log = 0.0
        told: set[str] = set()
        r = self.config.redis
        while True:
            try:
                await self._check_tls(name, namespace)
                options = {**r.client_options(), "socket_connect_timeout": r.connect_timeout,
                           "socket_timeout": r.read_timeout}
                if namespace:
                    return await DBConnector.connect(name, self._global_config, namespace=namespace, **options)
                if self._db_config is not None:
                    return await DBConnector.connect(name, self._db_config, **options)
                assert r.url is not None
                db_id, separator = DATABASES[name]
                return await DBConnector.from_url(r.url, db_id=db_id, separator=separator, name=name, **options)
            except (RedisUnreachableError, *CONNECTION_ERRORS) as exc:
                now = time.monotonic()
                problem = _connect_problem(exc)
                if problem is not None and problem not in told:
                    details = {} if isinstance(exc, _TlsMismatch) else {"error": str(exc)}
                    log.error(problem, db=connector_key(name, namespace), **details)
                    told.add(problem)
                    last_log = now
                elif now - last_log >= self.config.daemon.health_interval:
                    log.warning("waiting for Redis", db=connector_key(name, namespace), error=str(exc))
                    last_log = now
            await backoff.sleep()

    def _tls_address(self, name: str, namespace: str) -> tuple[str, int] | None:
        """The TCP address a TLS connection to `name` goes to; None when TLS is not used."""
        r = self.config.redis
        if not r.tls_enabled:
            return None
        if namespace or self._db_config is not None:
            placed = resolve_config(self._global_config if namespace else self._db_config, namespace or None)
            inst = placed.instances[placed.database(name).instance]
            return None if inst.unix_socket_path else (inst.hostname, inst.port)
        assert r.url is not None
        url = redis_url.parse(r.url, tls=r.tls)
        return (url.host or "localhost", url.port or 6379) if url.tls else None

    async def _check_tls(self, name: str, namespace: str) -> None:
        """With tls = true: a bare TLS handshake first, bounded by connect_timeout, so that a plain
        (non-TLS) Redis port is named as such at once instead of hanging in (retried) handshakes.
        Raises _TlsMismatch; any other failure is left to the real connect to report."""
        address = self._tls_address(name, namespace)
        if address is None:
            return
        timeout = self.config.redis.connect_timeout
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # only whether TLS is spoken; the real connect verifies
        r = self.config.redis
        if r.cert_file is not None:  # a server that wants client certificates gets one here too
            context.load_cert_chain(r.cert_file, r.key_file)
        host, port = address
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can lose a cancellation (a
            # SIGTERM at start-up) when the connection completes at the same moment
            async with asyncio.timeout(timeout):
                _reader, writer = await asyncio.open_connection(
                    host, port, ssl=context, ssl_handshake_timeout=timeout
                )
        except TimeoutError:
            raise _TlsMismatch(
                f"TLS handshake with {host}:{port} got no answer within {timeout:g} s: tls = true, "
                "but this is likely a plain (non-TLS) Redis port; set [redis] tls = false or use the "
                "server's TLS port (retrying)"
            ) from None
        except ssl.SSLError as exc:
            raise _TlsMismatch(
                f"TLS handshake with {host}:{port} failed ({exc.reason or exc}): tls = true, but this is "
                "likely a plain (non-TLS) Redis port; set [redis] tls = false or use the server's TLS "
                "port (retrying)"
            ) from None
        except OSError:
            return
        writer.close()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(1.0):
                await writer.wait_closed()

    async def _take_leases(self) -> None:
        """Claim the instance name on every database a table is popped reliably from."""
        seen: set[tuple[str, int]] = set()
        instance = self.config.daemon.instance
        for oc in self.config.orchs:
            for t in oc.tables:
                if t.resolved_kind not in ("state", "queue"):
                    continue
                db = self.connectors[connector_key(t.db, t.namespace)]
                if (db.address, db.db_id) in seen:
                    continue
                seen.add((db.address, db.db_id))
                lease = InstanceLease(db, instance)
                try:
                    await self._while_unreachable(lease.acquire, db.name or "")
                except InstanceInUseError as exc:
                    raise ConfigError(self.config.path, "daemon.instance", str(exc)) from None
                self._leases.append(lease)
                self._lease_watchers.append(asyncio.ensure_future(self._on_lease_lost(lease)))

    async def _on_lease_lost(self, lease: InstanceLease) -> None:
        """Another process popping under our name would take our batches: stop (exit 1)."""
        await lease.lost.wait()
        self._crashed = True
        self.stop()

    def _bind_zmq_servers(self) -> None:
        """A ZmqServer per endpoint, bound before any table is added: an endpoint that cannot be
        bound (in use, a bad address) is one line naming the field, not a half-started daemon."""
        for i, oc in enumerate(self.config.orchs):
            for j, t in enumerate(oc.tables):
                if t.endpoint is None or t.endpoint in self.zmq_servers:
                    continue
                try:
                    self.zmq_servers[t.endpoint] = ZmqServer(t.endpoint)
                except OSError as exc:
                    raise ConfigError(
                        self.config.path, f"orchs.{i}.tables.{j}.endpoint", f"cannot bind {t.endpoint}: {exc.strerror}"
                    ) from None

    async def _add_table(self, rt: OrchRuntime, tc: TableConfig) -> None:
        db_name = connector_key(tc.db, tc.namespace)
        db = self.connectors[db_name]
        table, kind = tc.table, tc.resolved_kind
        consumer = make_consumer(
            db, table, kind, tc.pop_batch_size, tc.priority,
            enable_keyspace_events=self.config.daemon.enable_keyspace_events,
            zmq_server=self.zmq_servers.get(tc.endpoint or ""), db_persistence=tc.db_persistence,
        )
        worker = TableWorker(
            rt, consumer, db_name, tc.pending_limit or self.config.daemon.pending_limit,
            self._dead_letter, self.select, table=table, kind=kind,
        )
        if kind in ("state", "queue"):
            stats = worker.stats
            source = ReliablePop(
                consumer, worker.pending, instance=self.config.daemon.instance,  # type: ignore[arg-type]
                on_set_aside=lambda n: setattr(stats, "set_aside", stats.set_aside + n),
            )
            self.reliable[worker] = source
            worker.on_progress = source.progress
            await self._while_unreachable(lambda: self._take_over(worker, source), db_name)
        if tc.reconcile:
            await self._while_unreachable(lambda: self._reconcile(worker, db), db_name)
        self.workers.append(worker)
        self._by_table[consumer] = worker
        worker.start().add_done_callback(self._worker_done)

    async def _while_unreachable(self, step: Callable[[], Awaitable[None]], db_name: str) -> None:
        """Run a start-up step, again while Redis cannot be reached (a restart under our start)."""
        backoff = Backoff(_BACKOFF_MIN, _BACKOFF_MAX)
        last_log = 0.0
        while True:
            try:
                return await step()
            except CONNECTION_ERRORS as exc:
                now = time.monotonic()
                if now - last_log >= self.config.daemon.health_interval:
                    log.warning("waiting for Redis", db=db_name, error=str(exc))
                    last_log = now
            await backoff.sleep()

    async def _take_over(self, worker: TableWorker, source: ReliablePop) -> None:
        """Before anything is popped or reconciled: the tasks an earlier run left in flight."""
        try:
            batches = await source.take_over()
        except ResponseError as exc:
            log.error("in-flight record not readable; nothing taken over", db=worker.db_name, table=worker.table,
                      key=source.record, error=str(exc))
            source.start()
            return
        for batch in batches:
            worker.accept(batch.tasks, batch.seq)
        if batches:
            log.warning("in-flight tasks taken over from the last run; they run first", db=worker.db_name,
                        table=worker.table, batches=len(batches), tasks=len(worker.pending))

    async def _reconcile(self, worker: TableWorker, db: DBConnector) -> None:
        """The table's existing entries as pending SETs, after what was taken over (SCAN, never
        KEYS); keys under the table's prefix that are not hashes are skipped, in one log line."""
        found = await read_table(db, worker.table, _RECONCILE_CHUNK)
        if found.not_hashes:
            log.error("reconcile: keys skipped, not hashes", db=worker.db_name, table=worker.table,
                      skipped=len(found.not_hashes), first=found.not_hashes[0][:_KEY_EXCERPT])
        entries = {key: fvs for key, fvs in found.entries.items() if fvs}
        worker.pending.add_many(KeyOpFieldsValues(key, SET_COMMAND, entries[key]) for key in sorted(entries))
        log.info("reconciled", db=worker.db_name, table=worker.table, entries=len(entries),
                 skipped=len(found.not_hashes))

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        self._crashed = True
        log.critical("worker crashed; stopping", exc_info=task.exception())
        self.stop()

    # -- the consume loop ---------------------------------------------------------------

    async def _consume(self) -> None:
        select = self.select
        backoff = Backoff(_BACKOFF_MIN, _BACKOFF_MAX)
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
                self._pop_failed(worker, exc)
                await self._sleep(backoff.next())
                continue
            if self._pop_error is not None:
                self._redis_back()
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
        backoff, logged = self._refused.get(worker) or (Backoff(_BACKOFF_MIN * 4, _REFUSED_MAX), -1e9)
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
                since = self._down_since or self._probe_down_since or pubsub_down_since or now
                log.warning(
                    "Redis unreachable; still retrying", down_for=round(now - since, 1),
                    error=self._pop_error or self._probe_error or "pub/sub connection down",
                    pending=self.pending_count,
                )

    async def _probe_redis(self) -> None:
        """Liveness: a PING to each server on a connection of its own, every probe_interval.

        A stalled Redis (frozen, swapping, a network black hole) drops no connection, so pops
        and pub/sub would just wait; no answer within probe_timeout is logged ("Redis not
        answering") and makes redis_up 0 (metrics, `swssd status`, systemd STATUS=) until it
        answers again. Pops waiting meanwhile finish by themselves once Redis runs again."""
        r = self.config.redis
        probes: dict[str, tuple[str, Any]] = {}
        for key, db in self.connectors.items():
            if db.address in {address for address, _ in probes.values()}:
                continue  # one probe per server
            client = db.new_client(
                socket_timeout=r.probe_timeout, socket_connect_timeout=r.probe_timeout, retry=None
            )
            probes[key] = (db.address, client)
        failing: dict[str, float] = {}

        async def probe(key: str, address: str, client: Any) -> None:
            start = time.monotonic()
            try:
                await asyncio.wait_for(client.ping(), r.probe_timeout)
            except (TimeoutError, RedisError, OSError) as exc:
                if key not in failing:
                    failing[key] = start
                    error = (f"no answer to PING within {r.probe_timeout:g} s"
                             if isinstance(exc, (TimeoutError, RedisTimeoutError))
                             else f"{type(exc).__name__}: {exc}")
                    self._probe_error = f"{address}: {error}"
                    self._probe_down_since = self._probe_down_since or start
                    log.warning("Redis not answering", db=key, address=address, error=error,
                                pending=self.pending_count)
                    self.notifier.status(self.status_line())
                return
            if key in failing:
                down = time.monotonic() - failing.pop(key)
                log.info("Redis answering again", db=key, address=address, down_for=round(down, 3))
                if not failing:
                    self._probe_error = None
                    self._probe_down_since = None
                    self.notifier.status(self.status_line())

        try:
            while True:
                started = asyncio.get_running_loop().time()
                await asyncio.gather(*(probe(k, a, c) for k, (a, c) in probes.items()))
                elapsed = asyncio.get_running_loop().time() - started
                await asyncio.sleep(max(0.0, r.probe_interval - elapsed))
        finally:
            for _address, client in probes.values():
                with contextlib.suppress(Exception):
                    await client.aclose()

    def _dead_letter(self, worker: TableWorker, task: KeyOpFieldsValues, reason: str) -> None:
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

    def _report_left(self) -> None:
        """Say exactly what becomes of the tasks shutdown could not finish."""
        left = _left_by_kind(self.workers)
        kept = left.get("state", 0) + left.get("queue", 0)
        if kept:
            log.warning(
                "stopped with tasks not handled: they stay in the in-flight record in Redis and run "
                "first at the next start of this instance", tasks=kept, instance=self.config.daemon.instance,
                tables=sorted(w.table for w in self.workers if w.pending_count and w in self.reliable),
            )
        if left.get("subscriber"):
            log.warning("stopped with subscriber tasks not handled: the next start reads those tables again",
                        tasks=left["subscriber"])
        if left.get("notification"):
            log.warning("stopped with notifications not handled: they are lost (notifications are at most once)",
                        tasks=left["notification"])
        if left.get("zmq"):
            log.warning("stopped with zmq changes not handled: they are lost (the ZMQ channel keeps nothing "
                        "for a restarted consumer, as in C++)", tasks=left["zmq"])

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
            budget = max(0.1, deadline - asyncio.get_running_loop().time())
            finished = asyncio.ensure_future(asyncio.wait(tasks, timeout=budget))
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
            except Exception:
                log.exception("plugin stop() failed", orch=rt.orch.name)
        for task in self._lease_watchers:
            task.cancel()
        for source in self.reliable.values():
            await source.close(_STOP_HOOK_TIMEOUT)
        self._report_left()
        await self._close_zmq()
        for lease in self._leases:
            await lease.release()
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


    async def _close_zmq(self) -> None:
        """The zmq consumers first (they unregister and persist what they queued), then their
        servers, before the Redis connections persistence writes through are closed."""
        for w in self.workers:
            if isinstance(w.consumer, ZmqConsumerStateTable):
                await w.consumer.close()
        for server in self.zmq_servers.values():
            await server.close()


class _TlsMismatch(ConnectionError):
    """tls = true, but the server does not complete a TLS handshake."""


def _connect_problem(exc: BaseException) -> str | None:
    """What the operator must fix, for the connection failures that retrying alone will not cure
    (logged once as an error; the daemon still retries, since the fix may come while it runs)."""
    if isinstance(exc, _TlsMismatch):
        return str(exc)
    if isinstance(exc, RedisAuthError):
        return ("Redis refused the credentials: check [redis] username and the password (password_file, "
                "password, the systemd credential redis-password, $SWSSD_REDIS_PASSWORD) (retrying)")
    text = str(exc)
    if "no permissions to run" in text:  # NOPERM on connect (SELECT, PING): the user's ACL
        return "Redis refused a command to this user: give it the ACL rule README 'Redis ACL' lists (retrying)"
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return ("the Redis server's TLS certificate is not trusted: set [redis] ca_file to the CA that signed "
                "it (or check_hostname = false when the certificate names another host) (retrying)")
    if "CERTIFICATE_REQUIRED" in text.upper().replace(" ", "_"):
        return "the Redis server wants a client certificate: set [redis] cert_file and key_file (retrying)"
    return None


def _left_by_kind(workers: list[TableWorker]) -> dict[str, int]:
    """Tasks not handled per table kind."""
    left: dict[str, int] = {}
    for w in workers:
        # a zmq consumer's buffer is all there is of what it received and was not popped
        waiting = w.consumer.waiting if isinstance(w.consumer, ZmqConsumerStateTable) else 0
        if w.pending_count + waiting:
            left[w.kind] = left.get(w.kind, 0) + w.pending_count + waiting
    return left


def _db_names(config: Config, runtimes: list[OrchRuntime]) -> list[tuple[str, str]]:
    """Every (database, namespace) a table or plugin needs, in config order."""
    names: dict[tuple[str, str], None] = {}
    for oc, rt in zip(config.orchs, runtimes):
        for t in oc.tables:
            names[(t.db, t.namespace)] = None
        for name in (*oc.databases, *rt.orch.databases):
            names[(name, "")] = None
    return list(names)
