"""Start-up's Redis side: where each configured database lives (database_config.json,
database_global.json for namespaces, or the one Redis url), the checks of every database the
config and the plugins name, and the connections, waited for while Redis cannot be reached
(saying once what the operator must fix when retrying alone will not)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Awaitable, Callable

import structlog

from ..backoff import Backoff
from ..errors import ConfigError, RedisAuthError, RedisUnreachableError, UnknownDatabaseError, UnknownNamespaceError
from ..redis import redis_url
from ..redis.connector import CONNECTION_ERRORS, DBConnector
from ..redis.dbconfig import SonicDBConfig, SonicDBGlobalConfig, resolve_config
from ..schema import DATABASES
from .config import PLAIN_HASH_DATABASES, Config
from .orch import connector_key

log = structlog.get_logger("swssd.daemon")

#: first and longest wait between tries while Redis cannot be reached
RETRY_MIN = 0.05
RETRY_MAX = 2.0


class Databases:
    """The databases of one config: checked at start-up, then connected one by one."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.db_config: SonicDBConfig | None = None
        self.global_config: SonicDBGlobalConfig | None = None

    def report_redis_settings(self) -> None:
        """Exposed secrets and unverified TLS, one warning line each; where the password came from."""
        r = self.config.redis
        for line in r.warnings(self.config.path):
            log.warning(line)
        if r.password is not None and r.password_source:
            log.info("Redis password", source=r.password_source, user=r.username or "default")

    def load(self) -> None:
        """Read the database config and check every table's database against it (ConfigError
        naming the field otherwise)."""
        path = self.config.database_config_path()
        if path is not None:
            self.db_config = SonicDBConfig.load(path)
        elif self.config.redis.url is None:
            raise ConfigError(self.config.path, "redis", "no Redis configured: set database_config or url")
        for i, oc in enumerate(self.config.orchs):
            for j, t in enumerate(oc.tables):
                field = f"orchs.{i}.tables.{j}"
                if t.namespace:
                    self.check_namespaced_db(t.db, t.namespace, field)
                else:
                    self.check_db(t.db, f"{field}.db")
                if t.kind == "state" and t.db in PLAIN_HASH_DATABASES:
                    how = "configured as" if t.kind_explicit else "by default"
                    log.warning(
                        f"{t.db} {t.table} is a key-set table ({how} kind = \"state\"), but SONiC writes "
                        f"{t.db} with plain hash writes, which never reach a key-set consumer: if that is "
                        "how this table is written, set kind = \"subscriber\"", field=field,
                    )

    def check_namespaced_db(self, name: str, namespace: str, field: str) -> None:
        """A table of a namespace: its database must be in that namespace of database_global.json."""
        if self.config.redis.url is not None:
            raise ConfigError(self.config.path, f"{field}.namespace",
                              "namespaces need database_global.json; they cannot be used with redis.url")
        if self.global_config is None:
            self.global_config = SonicDBGlobalConfig.load(self.config.redis.database_global_config)
        try:
            self.global_config.database(name, namespace)
        except (UnknownDatabaseError, UnknownNamespaceError) as exc:
            raise ConfigError(self.config.path, field, str(exc)) from None

    def check_db(self, name: str, field: str, who: str = "") -> None:
        if self.db_config is not None:
            try:
                self.db_config.database(name)
            except UnknownDatabaseError as exc:
                raise ConfigError(self.config.path, field, f"{who} {exc}".strip()) from None
        elif name not in DATABASES:
            known = ", ".join(DATABASES)
            raise ConfigError(
                self.config.path, field,
                f"{who} unknown database {name!r}; with a Redis url the known databases are: {known}".strip(),
            )

    async def connect(self, name: str, namespace: str = "") -> DBConnector:
        """Connect to one database, waiting (and saying so) while Redis is unreachable."""
        backoff = Backoff(RETRY_MIN, RETRY_MAX)
        last_log = 0.0
        told: set[str] = set()
        r = self.config.redis
        while True:
            try:
                await self._check_tls(name, namespace)
                options = {**r.client_options(), "socket_connect_timeout": r.connect_timeout,
                           "socket_timeout": r.read_timeout}
                if namespace:
                    return await DBConnector.connect(name, self.global_config, namespace=namespace, **options)
                if self.db_config is not None:
                    return await DBConnector.connect(name, self.db_config, **options)
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
                    first = {} if last_log else self._where_redis_is(namespace)
                    log.warning("waiting for Redis", db=connector_key(name, namespace), error=str(exc), **first)
                    last_log = now
            await backoff.sleep()

    def _where_redis_is(self, namespace: str) -> dict[str, str]:
        """Said with the first "waiting for Redis": which file named that address, and what to do on a
        machine that has no such Redis (a dev box running an example config)."""
        r = self.config.redis
        if namespace:
            source = str(r.database_global_config)
        elif self.db_config is not None:
            source = str(self.config.database_config_path())
        else:
            source = f"{self.config.path or 'the config'}: redis.url"
        return {"address_from": source,
                "hint": "start redis-server there, or run `swssd run` without --config for a private one"}

    def _tls_address(self, name: str, namespace: str) -> tuple[str, int] | None:
        """The TCP address a TLS connection to `name` goes to; None when TLS is not used."""
        r = self.config.redis
        if not r.tls_enabled:
            return None
        if namespace or self.db_config is not None:
            placed = resolve_config(self.global_config if namespace else self.db_config, namespace or None)
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

    async def while_unreachable(self, step: Callable[[], Awaitable[None]], db_name: str) -> None:
        """Run a start-up step, again while Redis cannot be reached (a restart under our start)."""
        backoff = Backoff(RETRY_MIN, RETRY_MAX)
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
        return ("Redis refused a command to this user: give it the ACL rule docs/security.md 'Redis ACL' lists "
                "(retrying)")
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return ("the Redis server's TLS certificate is not trusted: set [redis] ca_file to the CA that signed "
                "it (or check_hostname = false when the certificate names another host) (retrying)")
    if "CERTIFICATE_REQUIRED" in text.upper().replace(" ", "_"):
        return "the Redis server wants a client certificate: set [redis] cert_file and key_file (retrying)"
    return None
