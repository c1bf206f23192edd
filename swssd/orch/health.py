"""Whether Redis answers, from three witnesses: the table pops, the pub/sub connection and a
PING probe of each server on a connection of its own. What they see goes to the log (once when
Redis goes away, every health_interval while it stays away, once when it is back), to systemd's
STATUS= and to `redis_up` (metrics, /health, `swssd status`)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..channels.selector import Select
from ..channels.subscriber_state_table import SubscriberStateTable
from ..ops.sdnotify import SystemdNotifier
from ..redis.connector import DBConnector
from .config import Config

log = structlog.get_logger("swssd.daemon")

#: Seconds between two lines saying a subscriber table is deaf.
KEYSPACE_REMINDER = 60.0


class RedisHealth:
    """What the daemon knows of Redis's health. `status_line` and `pending` are the daemon's,
    for the lines this writes."""

    def __init__(
        self, config: Config, select: Select, notifier: SystemdNotifier,
        status_line: Callable[[], str], pending: Callable[[], int],
    ) -> None:
        self.config = config
        self.select = select
        self.notifier = notifier
        self.status_line = status_line
        self.pending = pending
        #: True once every database is connected (up is False before)
        self.connected = False
        #: why the last pop failed (None while pops work), and since when
        self.pop_error: str | None = None
        self.down_since: float | None = None
        #: why the liveness probe last failed (None while every server answers its PING), and since when
        self.probe_error: str | None = None
        self.probe_down_since: float | None = None
        #: times the command connection came back after pops failed
        self.command_reconnects = 0

    @property
    def up(self) -> bool:
        """Whether the last pop worked, every pub/sub connection is up and Redis answers the probe."""
        return self.connected and self.pop_error is None and self.probe_error is None and self.select.connected

    def pop_failed(self, db_name: str, table: str, exc: BaseException) -> None:
        """A pop failed for want of Redis (the reliable pop reads back what it took)."""
        error = f"{type(exc).__name__}: {exc}"
        if self.pop_error is None:
            self.down_since = time.monotonic()
            log.warning("pop failed; retrying", db=db_name, table=table, error=error)
        self.pop_error = error

    def pop_worked(self) -> None:
        """A pop worked: after failed ones, Redis is back."""
        if self.pop_error is None:
            return
        down = time.monotonic() - (self.down_since or time.monotonic())
        log.info("Redis reachable again", down_for=round(down, 3))
        self.command_reconnects += 1
        self.pop_error = None
        self.down_since = None

    async def watch(self) -> None:
        """Say so, every health_interval, while Redis cannot be reached (the pub/sub reader says
        itself when it is connected again, with how long it was down)."""
        while True:
            await asyncio.sleep(self.config.daemon.health_interval)
            self.notifier.status(self.status_line())
            if not self.up:
                now = time.monotonic()
                since = self.down_since or self.probe_down_since or self.select.down_since or now
                log.warning(
                    "Redis unreachable; still retrying", down_for=round(now - since, 1),
                    error=self.pop_error or self.probe_error or "pub/sub connection down",
                    pending=self.pending(),
                )

    async def watch_keyspace_events(self, tables: Callable[[], list[SubscriberStateTable]]) -> None:
        """Every health_interval, whether Redis still publishes the keyspace events each
        subscriber table follows (a restart or a CONFIG SET may turn them off): turned on again
        with enable_keyspace_events, else the table is deaf (/health 503, `swssd status` 1) and
        one line a minute says so."""
        told: dict[str, float] = {}
        while True:
            await asyncio.sleep(self.config.daemon.health_interval)
            for table in tables():
                try:
                    await table.check_keyspace_events()
                except (RedisError, OSError):
                    continue  # Redis is away: the pops and the probe say so
                if table.keyspace_events is not False:
                    told.pop(table.name, None)
                    continue
                now = time.monotonic()
                if now - told.get(table.name, -1e9) >= KEYSPACE_REMINDER:
                    told[table.name] = now
                    log.error("subscriber table deaf: " + table.deaf_reason() + " = true in [daemon]",
                              db=table.db.name, table=table.name)

    async def probe(self, connectors: Mapping[str, DBConnector]) -> None:
        """Liveness: a PING to each server on a connection of its own, every probe_interval.

        A stalled Redis (frozen, swapping, a network black hole) drops no connection, so pops
        and pub/sub would just wait; no answer within probe_timeout is logged ("Redis not
        answering") and makes redis_up 0 (metrics, `swssd status`, systemd STATUS=) until it
        answers again. Pops waiting meanwhile finish by themselves once Redis runs again."""
        r = self.config.redis
        probes: dict[str, tuple[str, Any]] = {}
        for key, db in connectors.items():
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
                    self.probe_error = f"{address}: {error}"
                    self.probe_down_since = self.probe_down_since or start
                    log.warning("Redis not answering", db=key, address=address, error=error,
                                pending=self.pending())
                    self.notifier.status(self.status_line())
                return
            if key in failing:
                down = time.monotonic() - failing.pop(key)
                log.info("Redis answering again", db=key, address=address, down_for=round(down, 3))
                if not failing:
                    self.probe_error = None
                    self.probe_down_since = None
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
