"""Select: wait on many consumers over one pub/sub connection per redis-server.

Unlike the C++ library (one subscription connection per table), one reader task per server
reads every channel and pattern continuously, so Redis never drops it for a full pub/sub output
buffer while pops run. Each message goes to the consumers subscribed to it (`on_message`); what
it means — a wake-up, a keyspace event, a notification — is the consumer's business.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import time
from collections.abc import Awaitable
from typing import Any, cast

import structlog
from redis.exceptions import NoPermissionError, ResponseError

from ..backoff import Backoff
from ..redis.connector import CONNECTION_ERRORS, DBConnector
from ..redis.transport import RedisConnection
from .selectable import Selectable, Subscription

log = structlog.get_logger(__name__)


class Select:
    """Choose the next ready table: higher priority first, equal priorities least recently served
    first, and a ready table passed over `starvation_limit` times in a row is served next.

    `add()` and `remove()` may be awaited, to know the subscription is in place, or not.
    """

    def __init__(
        self,
        *,
        starvation_limit: int = 4,
        reconnect_min: float = 0.05,
        reconnect_max: float = 2.0,
    ) -> None:
        self.starvation_limit = starvation_limit
        self.reconnect_min = reconnect_min
        self.reconnect_max = reconnect_max
        self._tables: list[Selectable] = []
        self._servers: dict[str, _ServerSubscription] = {}
        self._identities: dict[str, asyncio.Future[str]] = {}
        self._server_of: dict[int, _ServerSubscription] = {}
        self._added: dict[int, asyncio.Task[None]] = {}
        self._pending: set[asyncio.Task[None]] = set()
        self._wakeup = asyncio.Event()
        self._served = itertools.count(1)
        self._last_served: dict[int, int] = {}
        self._passed_over: dict[int, int] = {}
        #: tables not to be served, with how many pause() calls are not resumed yet
        self._paused: dict[int, int] = {}

    # -- membership ---------------------------------------------------------------------

    def add(self, table: Selectable) -> asyncio.Task[None]:
        """Subscribe to the table's channel, then mark it ready if data is already waiting."""
        if table in self._tables:
            return self._track(asyncio.sleep(0))
        self._tables.append(table)
        self._last_served[id(table)] = 0
        self._passed_over[id(table)] = 0
        task = self._track(self._subscribe(table))
        self._added[id(table)] = task
        return task

    def remove(self, table: Selectable) -> asyncio.Task[None]:
        """Stop waiting on `table` (unsubscribing when no other table shares its channel)."""
        if table not in self._tables:
            return self._track(asyncio.sleep(0))
        self._tables.remove(table)
        self._last_served.pop(id(table), None)
        self._passed_over.pop(id(table), None)
        self._paused.pop(id(table), None)
        return self._track(self._unsubscribe(table, self._added.pop(id(table))))

    async def _subscribe(self, table: Selectable) -> None:
        # A table may become ready without a message too (a subscriber table whose keyspace
        # events came back on reads itself again): it wakes us itself then.
        table.add_waker(self._wake)
        if table.subscription is None:  # fed by something else than pub/sub
            await table.on_subscribed()
            if table.ready:
                self._wake()
            return
        server = await self._server_for(table.db)
        self._server_of[id(table)] = server
        await server.add(table)

    async def _unsubscribe(self, table: Selectable, added: asyncio.Task[None]) -> None:
        await asyncio.wait((added,))
        table.remove_waker(self._wake)
        server = self._server_of.pop(id(table), None)
        if server is not None:
            await server.remove(table)

    async def _server_for(self, db: DBConnector) -> _ServerSubscription:
        """The subscription of db's redis-server: TCP and unix connectors to one server share it."""
        ident = self._identities.get(db.address)
        if ident is None:
            ident = self._identities[db.address] = asyncio.ensure_future(_server_identity(db))
        try:
            run_id = await asyncio.shield(ident)
        except BaseException:
            if ident.done():
                self._identities.pop(db.address, None)  # ask again next time
            raise
        server = self._servers.get(run_id)
        if server is None:
            server = self._servers[run_id] = _ServerSubscription(self, db)
        return server

    def pause(self, table: Selectable) -> None:
        """Pass `table` over until resume(): its data waits where it is (backpressure, or a table
        Redis refuses to pop). Pauses nest: each pause() needs its own resume()."""
        self._paused[id(table)] = self._paused.get(id(table), 0) + 1

    def resume(self, table: Selectable) -> None:
        """Undo one pause(); a table no longer paused is served again as soon as it is ready."""
        left = self._paused.get(id(table), 0) - 1
        if left > 0:
            self._paused[id(table)] = left
            return
        self._paused.pop(id(table), None)
        self._wake()

    def paused(self, table: Selectable) -> bool:
        return id(table) in self._paused

    @property
    def tables(self) -> list[Selectable]:
        return list(self._tables)

    @property
    def connected(self) -> bool:
        """Whether every pub/sub connection is up."""
        return all(s.connected for s in self._servers.values())

    @property
    def down_since(self) -> float | None:
        """When the first pub/sub connection now down was lost (time.monotonic()), None while all are up."""
        lost = [s.down_since for s in self._servers.values() if s.down_since is not None]
        return min(lost) if lost else None

    @property
    def reconnects(self) -> int:
        """How many times a pub/sub connection was re-established."""
        return sum(s.reconnects for s in self._servers.values())

    # -- waiting ------------------------------------------------------------------------

    async def select(self, timeout: float | None = None) -> Selectable | None:
        """The next table to pop, or None when none became ready within `timeout` seconds."""
        if self._pending:
            await asyncio.gather(*list(self._pending))
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            table = self._pick()
            if table is not None:
                return table
            self._wakeup.clear()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return None
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except TimeoutError:
                return None

    def _pick(self) -> Selectable | None:
        paused = self._paused
        ready = [t for t in self._tables if t.ready and id(t) not in paused]
        if not ready:
            return None
        last = self._last_served
        starving = [t for t in ready if self._passed_over[id(t)] >= self.starvation_limit]
        if starving:
            chosen = min(starving, key=lambda t: last[id(t)])
        else:
            chosen = min(ready, key=lambda t: (-t.priority, last[id(t)]))
        for t in ready:
            self._passed_over[id(t)] += 1
        self._passed_over[id(chosen)] = 0
        last[id(chosen)] = next(self._served)
        return chosen

    def _wake(self) -> None:
        self._wakeup.set()

    # -- lifetime -----------------------------------------------------------------------

    def _track(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def close(self) -> None:
        """Stop the reader tasks and close the pub/sub connections."""
        for task in list(self._pending):
            task.cancel()
        for server in self._servers.values():
            await server.close()
        self._servers.clear()

    async def __aenter__(self) -> Select:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


#: Seconds between the log lines of a subscription the Redis ACL keeps refusing.
_REFUSED_LOG_INTERVAL = 60.0

_SUBSCRIBE = {False: "SUBSCRIBE", True: "PSUBSCRIBE"}
_UNSUBSCRIBE = {False: "UNSUBSCRIBE", True: "PUNSUBSCRIBE"}
_CONFIRMATIONS = ("subscribe", "psubscribe")


async def _server_identity(db: DBConnector) -> str:
    """The server's run_id (its address when INFO is not allowed for this user)."""
    try:
        info = await db.redis.execute_command("INFO", "server")
    except ResponseError:
        return db.address
    return str(info.get("run_id") or db.address)


class _ServerSubscription:
    """One pub/sub connection to one redis-server, shared by all tables on it; reconnects by itself."""

    def __init__(self, select: Select, db: DBConnector) -> None:
        self._select = select
        # No read timeout: a quiet channel is normal. TCP keepalive notices a vanished server.
        self._spec = db.connection_spec.replace(read_timeout=None, keepalive=True)
        self._subscribed: dict[Subscription, set[Selectable]] = {}
        self._confirmed: set[Subscription] = set()
        self._waiters: dict[Subscription, list[asyncio.Future[None]]] = {}
        self._conn: RedisConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self.connected = False
        self.reconnects = 0
        #: when the connection was lost (monotonic), None while it is up
        self.down_since: float | None = None
        self.address = db.address
        #: when a refused subscription was last logged; None while subscriptions are accepted
        self._refused_logged: float | None = None

    async def add(self, table: Selectable) -> None:
        sub = table.subscription
        assert sub is not None  # Select._subscribe sends only tables with a subscription here
        tables = self._subscribed.setdefault(sub, set())
        tables.add(table)
        if sub not in self._confirmed:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(sub, []).append(waiter)
            if len(self._waiters[sub]) == 1:
                await self._send(_SUBSCRIBE[sub.pattern], sub.name)
            self._ensure_running()
            await waiter
        # Subscribed before looking: data written earlier is seen now, later data is published.
        await table.on_subscribed()
        if table.ready:
            self._select._wake()

    async def remove(self, table: Selectable) -> None:
        sub = table.subscription
        assert sub is not None  # only tables add() took are removed
        tables = self._subscribed.get(sub, set())
        tables.discard(table)
        if not tables and sub in self._subscribed:
            del self._subscribed[sub]
            self._confirmed.discard(sub)
            await self._send(_UNSUBSCRIBE[sub.pattern], sub.name)

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._run())

    async def _send(self, *args: str) -> None:
        conn = self._conn
        if conn is None or conn.is_closed:
            # The reader subscribes every channel when it (re)connects. A connection that has just
            # closed (dropped, or a refused SUBSCRIBE before this one) is its to handle, not ours.
            return
        with contextlib.suppress(*CONNECTION_ERRORS):  # the reader notices the drop and resubscribes
            conn.send(args)

    async def _run(self) -> None:
        backoff = Backoff(self._select.reconnect_min, self._select.reconnect_max)
        first = True
        while True:
            conn: RedisConnection | None = None
            wait: float | None = None  # instead of the backoff's next delay
            try:
                on_push = functools.partial(self._read, resubscribed=not first)
                conn = await RedisConnection.open(self._spec, on_push=on_push)
                self._conn = conn
                for pattern in (False, True):
                    names = [sub.name for sub in self._subscribed if sub.pattern is pattern]
                    if names:
                        conn.send((_SUBSCRIBE[pattern], *names))
                if not first and self._refused_logged is None:
                    self.reconnects += 1
                    down = time.monotonic() - (self.down_since or time.monotonic())
                    log.info("pubsub reconnected", address=self.address, subscriptions=len(self._subscribed),
                             down_for=round(down, 3))
                self.connected = True
                self.down_since = None
                backoff.reset()
                await conn.wait_closed()  # messages go to _read as they come; this raises how it ended
            except asyncio.CancelledError:
                raise
            except CONNECTION_ERRORS as exc:
                if self.connected or first:
                    log.warning("pubsub connection lost", address=self.address, error=str(exc))
            except NoPermissionError as exc:
                # The ACL, not the connection: trying again at once would only repeat it.
                self._refused(exc)
                wait = self._select.reconnect_max
            except Exception:  # the reader must outlive surprises; say so and retry
                log.exception("pubsub reader failed; reconnecting", address=self.address)
            finally:
                self.connected = False
                if self.down_since is None:
                    self.down_since = time.monotonic()
                self._conn = None
                self._confirmed.clear()
                if conn is not None:
                    conn.close()
            first = False
            await asyncio.sleep(backoff.next() if wait is None else wait)

    def _refused(self, exc: NoPermissionError) -> None:
        """One error line, then one a minute while Redis keeps refusing."""
        now = asyncio.get_running_loop().time()
        if self._refused_logged is not None and now - self._refused_logged < _REFUSED_LOG_INTERVAL:
            return
        self._refused_logged = now
        log.error("Redis refused the pub/sub subscription: this user needs +subscribe +psubscribe and the "
                  "channels (&*), see docs/security.md 'Redis ACL'; retrying", address=self.address, error=str(exc))

    def _read(self, burst: list[Any], resubscribed: bool) -> None:
        """Hand one socket read's messages to their tables, then wake Select once."""
        # keyed by plain tuples below, equal to the Subscription keys
        subscribed = cast("dict[tuple[str, bool], set[Selectable]]", self._subscribed)
        for reply in burst:
            kind = reply[0]
            # plain tuples: equal to the Subscription keys, without NamedTuple's slow __new__
            if kind == "pmessage":
                for table in subscribed.get((reply[1], True), ()):
                    table.on_message(reply[2], reply[3])
            elif kind == "message":
                for table in subscribed.get((reply[1], False), ()):
                    table.on_message(reply[1], reply[2])
            elif kind in _CONFIRMATIONS:
                sub = Subscription(reply[1], kind == "psubscribe")
                self._confirmed.add(sub)
                if self._refused_logged is not None and len(self._confirmed) == len(self._subscribed):
                    self._refused_logged = None
                    log.info("pub/sub subscriptions accepted by Redis again", address=self.address)
                for waiter in self._waiters.pop(sub, ()):
                    if not waiter.done():
                        waiter.set_result(None)
                if resubscribed:
                    # What was published while we were away is gone: let every table look again.
                    for table in subscribed.get(sub, ()):
                        table.on_resubscribed()
        self._select._wake()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait((self._task,))  # the reader already logged whatever it hit
        for waiters in self._waiters.values():
            for w in waiters:
                w.cancel()
