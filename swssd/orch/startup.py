"""Start-up's steps besides the connections (databases.py): the metrics endpoint, the capture
writer, the instance leases, the ZMQ servers, and each table's first tasks (taken over from the
last run's in-flight record, then reconciled from the table's entries). Daemon._start runs them
in order."""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Mapping

import structlog
from redis.exceptions import ResponseError

from ..capture import CaptureWriter
from ..channels.zmq import ZmqServer
from ..errors import ConfigError
from ..fields import SET_COMMAND, KeyOpFieldsValues
from ..ops.limits import fix_malloc_thresholds, raise_descriptor_limit, spare_descriptors
from ..ops.metrics import DaemonFigures, LoopProbe, serve
from ..ops.metrics_server import MetricsServer
from ..redis.connector import DBConnector
from ..redis.scan import scan_table
from .config import Config
from .databases import Databases
from .lease import InstanceInUseError, InstanceLease
from .orch import connector_key
from .reliable_pop import ReliablePop, crash_reason
from .worker import OrchRuntime, TableWorker

log = structlog.get_logger("swssd.daemon")

#: keys a reconcile asks SCAN for, and HGETALLs sent in one pipeline
RECONCILE_CHUNK = 512
#: characters of a key in a log line
KEY_EXCERPT = 200


async def serve_metrics(config: Config, daemon: DaemonFigures, probe: LoopProbe) -> MetricsServer | None:
    """The /metrics and /health endpoint, None when [metrics] is off. Raises ConfigError when it
    cannot be bound: a port held by another process would have monitoring read that process
    instead, so it is a config error, not a warning."""
    cfg = config.metrics
    if not cfg.enabled:
        return None
    try:
        server = await serve(daemon, probe, cfg.address, cfg.port)
    except OSError as exc:
        lookup = isinstance(exc, socket.gaierror)  # errno is an EAI_* code then
        field = "address" if lookup or exc.errno == errno.EADDRNOTAVAIL else "port"
        why = os.strerror(exc.errno) if exc.errno and not lookup else exc.strerror or str(exc)
        raise ConfigError(config.path, f"metrics.{field}",
                          f"cannot serve metrics on {cfg.address} port {cfg.port}: {why}") from None
    log.info("serving metrics", url=f"http://{cfg.address}:{cfg.port}/metrics")
    if not server.loopback_only:
        log.warning("metrics endpoint reachable beyond this host: anyone who can connect reads the "
                    "daemon's figures; bind 127.0.0.1 or firewall it", addresses=server.addresses)
    return server


async def start_capture(config: Config) -> CaptureWriter:
    """The capture writer of [capture]; a directory it cannot write is a warning, retried."""
    cfg = config.capture
    capture = CaptureWriter(cfg.directory, host=cfg.host, max_bytes=cfg.max_bytes, rec=cfg.rec,
                                 retry_interval=cfg.retry_interval)
    await capture.start()  # a directory it cannot write is a warning, retried: capture is optional
    if capture.writing:
        log.info("capturing", directory=str(cfg.directory), rec=cfg.rec)
    return capture


async def take_leases(
    config: Config, connectors: Mapping[str, DBConnector], databases: Databases, leases: list[InstanceLease]
) -> None:
    """Claim the instance name on every database a table is popped reliably from, into `leases`
    (those taken before a failure are there for shutdown to release)."""
    seen: set[tuple[str, int]] = set()
    instance = config.daemon.instance
    for oc in config.orchs:
        for t in oc.tables:
            if t.resolved_kind not in ("state", "queue"):
                continue
            db = connectors[connector_key(t.db, t.namespace)]
            if (db.address, db.db_id) in seen:
                continue
            seen.add((db.address, db.db_id))
            lease = InstanceLease(db, instance)
            try:
                await databases.while_unreachable(lease.acquire, db.name or "")
            except InstanceInUseError as exc:
                raise ConfigError(config.path, "daemon.instance", str(exc)) from None
            leases.append(lease)


#: What holds a bound server's reading while the tables are added (ZmqServer.hold): a change a
#: producer queued while the daemon was away must wait for its table's consumer, not be
#: dropped as "for a table without consumer" because it came in between.
ADDING_TABLES = object()


def bind_zmq_servers(config: Config, servers: dict[str, ZmqServer]) -> None:
    """A ZmqServer per endpoint, bound before any table is added: an endpoint that cannot be
    bound (in use, a bad address, an ipc path a live server holds or that is not a socket) is
    one line naming the field, not a half-started daemon. Those bound before a failure are in
    `servers`, for shutdown to close. Each reads nothing until read_zmq_servers(), once the
    tables are added.

    Each server's peers are bounded by [daemon] zmq_max_peers and by its share of the
    descriptors left once some are kept for Redis, metrics and the log (the soft descriptor
    limit raised to the hard one first)."""
    endpoints = {t.endpoint for oc in config.orchs for t in oc.tables if t.endpoint is not None}
    if not endpoints:
        return
    fix_malloc_thresholds()
    spare = spare_descriptors(raise_descriptor_limit())
    max_peers = max(1, min(config.daemon.zmq_max_peers, spare // len(endpoints)))
    if max_peers < config.daemon.zmq_max_peers:
        log.warning("zmq peers bounded by the descriptor limit; raise LimitNOFILE for more",
                    max_peers=max_peers, configured=config.daemon.zmq_max_peers)
    for i, oc in enumerate(config.orchs):
        for j, t in enumerate(oc.tables):
            if t.endpoint is None or t.endpoint in servers:
                continue
            try:
                servers[t.endpoint] = ZmqServer(
                    t.endpoint, max_peers=max_peers, max_buffer_bytes=config.daemon.zmq_buffer_bytes,
                    receive_hwm=config.daemon.zmq_receive_hwm,
                )
            except OSError as exc:
                raise ConfigError(
                    config.path, f"orchs.{i}.tables.{j}.endpoint", f"cannot bind {t.endpoint}: {exc.strerror}"
                ) from None
            servers[t.endpoint].hold(ADDING_TABLES)


def read_zmq_servers(servers: dict[str, ZmqServer]) -> None:
    """Every table is added: the servers bound by bind_zmq_servers() may read."""
    for server in servers.values():
        server.unhold(ADDING_TABLES)


async def take_over(worker: TableWorker, source: ReliablePop) -> None:
    """Before anything is popped or reconciled: the tasks an earlier run left in flight; those
    that were in a handler when each of the last runs ended abnormally are set aside instead
    (dead-lettered, and kept on the table's dead-letter list in Redis)."""
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
    if poisoned := source.poisoned:
        reason = crash_reason(source.guard.limit)
        log.error("in-flight tasks set aside: " + reason, db=worker.db_name, table=worker.table,
                  tasks=len(poisoned), keys=[t.key[:KEY_EXCERPT] for t in poisoned[:10]], kept_in=source.dead)
        for task in poisoned:
            worker.dead_letter(task, reason)


async def reconcile(worker: TableWorker, db: DBConnector) -> None:
    """The table's existing entries as pending SETs, after what was taken over (SCAN, never
    KEYS), a SCAN step at a time: past the table's pending_limit it waits for the worker to work
    the map down, so a table of any size costs no more memory than its limit. Keys under the
    table's prefix that are not hashes are skipped, in one log line."""
    entries = skipped = 0
    first_skipped = ""
    aside = worker.guard.aside if worker.guard is not None else set()
    async for chunk in scan_table(db, worker.table, RECONCILE_CHUNK):
        if chunk.not_hashes:
            skipped += len(chunk.not_hashes)
            first_skipped = first_skipped or chunk.not_hashes[0]
        found = {key: fvs for key, fvs in chunk.entries.items() if fvs}
        for key in aside.intersection(found):  # set aside at this start: not run again from the table
            task = KeyOpFieldsValues(key, SET_COMMAND, found.pop(key))
            log.error("reconcile: entry set aside, its key was in a handler at the last crashes",
                      db=worker.db_name, table=worker.table, key=key[:KEY_EXCERPT])
            worker.dead_letter(task, "reconcile: " + crash_reason(worker.guard.limit))  # type: ignore[union-attr]
        await worker.wait_for_room()
        worker.pending.add_many(KeyOpFieldsValues(key, SET_COMMAND, found[key]) for key in sorted(found))
        worker.wake()
        entries += len(found)
    if skipped:
        log.error("reconcile: keys skipped, not hashes", db=worker.db_name, table=worker.table,
                  skipped=skipped, first=first_skipped[:KEY_EXCERPT])
    log.info("reconciled", db=worker.db_name, table=worker.table, entries=entries, skipped=skipped)


def db_names(config: Config, runtimes: list[OrchRuntime]) -> list[tuple[str, str]]:
    """Every (database, namespace) a table or plugin needs, in config order."""
    names: dict[tuple[str, str], None] = {}
    for oc, rt in zip(config.orchs, runtimes):
        for t in oc.tables:
            names[(t.db, t.namespace)] = None
        for name in (*oc.databases, *rt.orch.databases):
            names[(name, "")] = None
    return list(names)
