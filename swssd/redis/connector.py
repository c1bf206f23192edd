"""DBConnector: one SONiC database on one redis-server, and how scripts run on it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import AuthenticationError, NoScriptError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..errors import RedisAuthError, RedisUnreachableError
from ..lua import Script
from . import redis_url
from .dbconfig import SonicDBConfig, SonicDBGlobalConfig, check_separator, resolve_config
from .transport import ConnectionSpec, RedisConnection
from .wire import use_hiredis_packing

#: Seconds to establish a connection (TCP, TLS handshake, unix socket) before giving up.
CONNECT_TIMEOUT = 5.0
#: Seconds to wait for a command's reply. Far longer than any pop script or command of this
#: library takes (milliseconds), so it only fires when Redis is stalled; pub/sub connections,
#: which wait for messages, have none.
READ_TIMEOUT = 30.0


def client_options() -> dict[str, Any]:
    """Options of every client: strings cross the wire as UTF-8 (bytes that are not UTF-8 survive
    as surrogate escapes), a dropped connection is retried 3 times within about a second
    (a Redis restart) before the caller sees the error, and connecting and reading time out
    (CONNECT_TIMEOUT, READ_TIMEOUT) rather than hang on a stalled Redis."""
    return {
        "decode_responses": True,
        "encoding_errors": "surrogateescape",
        "retry": Retry(ExponentialWithJitterBackoff(cap=0.5, base=0.05), 3),
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "socket_timeout": READ_TIMEOUT,
    }


#: What a dropped or unreachable Redis raises through redis-py.
CONNECTION_ERRORS = (RedisConnectionError, RedisTimeoutError, OSError)

ScriptCall = tuple[Script, Sequence[str | int], Sequence[str | int]]
"""A script with its KEYS and ARGV, as one EVALSHA."""


def evalsha_command(call: ScriptCall) -> tuple[str | int, ...]:
    """The EVALSHA command of a script call, its key count a str like the arguments around it
    (see wire.pack_command)."""
    script, keys, args = call
    return ("EVALSHA", script.sha, str(len(keys)), *keys, *args)


class DBConnector:
    """A connection pool to one database (APPL_DB, STATE_DB, ...) plus its id and separator.

    Scripts are loaded with SCRIPT LOAD on first use and called with EVALSHA; after a
    SCRIPT FLUSH or a Redis restart the NOSCRIPT reply reloads them and retries once.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        *,
        db_id: int,
        separator: str = ":",
        name: str | None = None,
        namespace: str = "",
    ) -> None:
        self.redis = use_hiredis_packing(client)
        self.db_id = db_id
        self.separator = check_separator(separator)
        self.name = name
        #: the network namespace (multi-ASIC) whose database this is; "" is the host's
        self.namespace = namespace
        self._loaded: set[str] = set()
        #: the connection _send_all writes on (outside redis-py's pool)
        self._own: RedisConnection | None = None
        self._opening: asyncio.Future[RedisConnection] | None = None
        self._spec: ConnectionSpec | None = None

    # -- construction -------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        db_name: str,
        config: SonicDBConfig | SonicDBGlobalConfig | str | os.PathLike[str] | None = None,
        *,
        namespace: str | None = None,
        username: str | None = None,
        password: str | None = None,
        ssl: bool = False,
        **options: Any,
    ) -> DBConnector:
        """Connect to `db_name` as database_config.json places it (unix socket preferred).

        `options` override client_options() (e.g. socket_timeout, socket_connect_timeout).

        With a `namespace` (multi-ASIC), `config` is database_global.json (a path, a
        SonicDBGlobalConfig, or None for $SWSSD_DB_GLOBAL_CONFIG, else SONiC's default) and the
        database is the one of that namespace.
        """
        placed = resolve_config(config, namespace)
        info = placed.database(db_name)
        inst = placed.instances[info.instance]
        kwargs: dict[str, Any] = dict(
            client_options(), **options, db=info.id, username=username, password=password
        )
        if inst.unix_socket_path:
            client = aioredis.Redis(unix_socket_path=inst.unix_socket_path, **kwargs)
        else:
            client = aioredis.Redis(host=inst.hostname, port=inst.port, ssl=ssl, **kwargs)
        db = cls(client, db_id=info.id, separator=info.separator, name=db_name, namespace=namespace or "")
        await db.ping()
        return db

    @classmethod
    async def from_url(
        cls,
        url: str,
        db_id: int | None = None,
        separator: str = ":",
        name: str | None = None,
        **options: Any,
    ) -> DBConnector:
        """Connect by URL (redis://, rediss://, unix://, with user/password); db_id wins over the URL's.

        The URL is parsed by swssd.redis.redis_url: a password may hold reserved characters, and a URL
        that cannot be used raises RedisUrlError, whose message quotes no credentials. `options`
        override client_options() (e.g. socket_timeout, username, password); the URL's own query
        options win over both. `ssl=True` makes a redis:// URL a rediss:// one; ssl_* options only
        reach a TLS connection."""
        check_separator(separator)
        parsed = redis_url.parse(url, tls=bool(options.pop("ssl", False)))
        kwargs = {**client_options(), **options, **parsed.connection_kwargs()}
        if not parsed.tls:
            kwargs = {k: v for k, v in kwargs.items() if not k.startswith("ssl_")}
        if db_id is None:
            db_id = parsed.db or 0
        kwargs["db"] = db_id
        pool = aioredis.ConnectionPool(**kwargs)
        db = cls(aioredis.Redis(connection_pool=pool), db_id=db_id, separator=separator, name=name)
        await db.ping()
        return db

    # -- facts --------------------------------------------------------------------------

    @property
    def address(self) -> str:
        """Where this connector points: for messages, and for Select to find the server's identity once."""
        kw = self.redis.connection_pool.connection_kwargs
        if kw.get("path"):
            return f"unix:{kw['path']}"
        return f"{kw.get('host', 'localhost')}:{kw.get('port', 6379)}"

    def new_client(self, **overrides: Any) -> aioredis.Redis:
        """A separate client to the same server and database (e.g. for pub/sub)."""
        pool = self.redis.connection_pool
        kwargs = {**pool.connection_kwargs, **overrides}
        return use_hiredis_packing(
            aioredis.Redis(
                connection_pool=aioredis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
            )
        )

    async def ping(self) -> None:
        """Fail with RedisUnreachableError naming the address when Redis does not answer."""
        try:
            await self.redis.ping()
        except AuthenticationError as exc:
            await self.close()
            raise RedisAuthError(self.address, exc) from None
        except CONNECTION_ERRORS as exc:
            await self.close()
            raise RedisUnreachableError(self.address, exc) from None

    # -- scripts ------------------------------------------------------------------------

    async def load_scripts(self, scripts: Sequence[Script]) -> None:
        """SCRIPT LOAD each script this connector has not loaded yet."""
        for script in scripts:
            if script.sha not in self._loaded:
                await self.redis.execute_command("SCRIPT", "LOAD", script.source)
                self._loaded.add(script.sha)

    def unloaded(self, scripts: Iterable[Script]) -> list[Script]:
        """Those of `scripts` this connector has not loaded yet, each once."""
        return list({script.sha: script for script in scripts if script.sha not in self._loaded}.values())

    def script_loads(self, scripts: Iterable[Script]) -> list[tuple[Any, ...]]:
        """SCRIPT LOAD commands, one a script, for a caller to pipeline ahead of its EVALSHAs. The
        scripts count as loaded from then on (a load that fails shows as NOSCRIPT, which reloads)."""
        wanted = {script.sha: script for script in scripts}
        self._loaded.update(wanted)
        return [("SCRIPT", "LOAD", script.source) for script in wanted.values()]

    async def evalsha(
        self, script: Script, keys: Sequence[str | int], args: Sequence[str | int], *, resend: bool = True
    ) -> Any:
        """EVALSHA `script`; on NOSCRIPT reload it and retry once.

        A dropped connection is re-made and the call sent once more, except with `resend=False`,
        for scripts whose effect must not happen twice (pops, enqueue): Redis may have run the
        script and its reply (a popped batch) is gone, so the error goes to the caller.
        """
        if script.sha not in self._loaded:
            await self.load_scripts((script,))
        command = evalsha_command((script, keys, args))
        resent = reloaded = False
        while True:  # one loop, not a helper coroutine: this is every call's way
            try:
                reply = (await self._send_all((command,)))[0]
            except CONNECTION_ERRORS:
                if not resend or resent:
                    raise
                resent = True
                continue
            if isinstance(reply, NoScriptError) and not reloaded:
                reloaded = True
                self._loaded.clear()
                await self.load_scripts((script,))
                continue
            if isinstance(reply, Exception):
                raise reply
            return reply

    async def evalsha_many(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """Send many EVALSHAs in one pipeline, in order.

        The pipeline starts with a SCRIPT LOAD of each script it uses, so a SCRIPT FLUSH since
        the last call cannot make some calls fail while later ones run (which would reorder
        them on retry). Only a flush in the middle of the pipeline can still cause NOSCRIPT;
        then everything from the first failure on failed and is resent in order.
        """
        if not calls:
            return []
        commands = self.script_loads(c[0] for c in calls)
        loads = len(commands)
        commands += map(evalsha_command, calls)
        results = (await self._send_all(commands))[loads:]
        failed = [i for i, r in enumerate(results) if isinstance(r, NoScriptError)]
        if failed:
            first = failed[0]
            if failed != list(range(first, len(results))):
                raise RuntimeError("scripts were flushed in the middle of a pipeline; order cannot be kept")
            results[first:] = await self.evalsha_many(calls[first:])
        for r in results:
            if isinstance(r, Exception):
                raise r
        return results

    async def execute_many(self, commands: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Send commands as one pipeline (no transaction) and return their replies in order, raw
        as the parser gives them (HGETALL is a flat list); an error reply is an exception in the
        list, not raised, so one bad key does not hide the others' replies."""
        if not commands:
            return []
        return await self._send_all(commands)

    def _send_all(self, commands: Sequence[tuple[Any, ...]]) -> Awaitable[list[Any]]:
        """Send commands on the connector's own connection and return their replies in order.

        redis-py's per-command layers (pool bookkeeping, retry wrapper, observability, a time-out
        context per reply) cost ~80 us a call and ~8 us a pipelined command; this path
        (swssd.redis.transport) costs a few. Calls share the one connection with as many requests in
        flight as callers make; calls made while others are out are written together, so many
        coroutines setting at once cost one write per loop iteration (what a blocking client
        cannot do). Error replies come back as exceptions in the list. A connection lost after
        sending is raised to every call out on it, never resent here.

        Not a coroutine itself: the caller awaits the connection's request directly (one frame
        less on every call's way in and its reply's way out).
        """
        conn = self._own
        if conn is None or conn.stale():  # closed (e.g. a Redis restart), perhaps not noticed yet
            return self._reconnect_and_send(commands)
        return conn.request(commands)

    async def connection(self) -> RedisConnection:
        """The connection this connector's scripts and pipelines go out on, (re)opened if it is
        closed: for callers that keep requests out on it themselves (connection.submit)."""
        conn = self._own
        if conn is None or conn.stale():
            conn = await self._reconnect()
        return conn

    async def _reconnect_and_send(self, commands: Sequence[tuple[Any, ...]]) -> list[Any]:
        return await (await self._reconnect()).request(commands)

    async def _reconnect(self) -> RedisConnection:
        """The connector's own connection, newly opened; callers arriving meanwhile share the opening."""
        if self._opening is None:
            if self._own is not None:
                self._own.close()
                self._own = None
            self._opening = asyncio.ensure_future(RedisConnection.open(self.connection_spec))
        opening = self._opening
        try:
            self._own = await asyncio.shield(opening)
            return self._own
        finally:
            if opening.done() and self._opening is opening:
                self._opening = None

    @property
    def connection_spec(self) -> ConnectionSpec:
        """Where and how this connector connects, for connections it opens itself."""
        if self._spec is None:
            self._spec = ConnectionSpec.from_pool(self.redis.connection_pool)
        return self._spec

    # -- lifetime -----------------------------------------------------------------------

    async def close(self) -> None:
        if self._opening is not None:
            self._opening.cancel()
            await asyncio.wait((self._opening,))
            self._opening = None
        if self._own is not None:
            self._own.close()
            self._own = None
        await self.redis.aclose()

    async def __aenter__(self) -> DBConnector:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return (
            f"DBConnector(name={self.name!r}, namespace={self.namespace!r}, db_id={self.db_id}, "
            f"address={self.address!r})"
        )

