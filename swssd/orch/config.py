"""The daemon's TOML configuration, validated by pydantic; every error names the file and the field."""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)

from ..errors import ConfigError, RedisUrlError
from ..names import shown, table_name_problem
from ..redis import redis_url
from ..redis.credentials import CREDENTIAL_NAME, ambient_password, exposure, read_secret
from ..redis.dbconfig import DEFAULT_PATH, ENV_VAR

#: Where a package installs the daemon's config.
DEFAULT_CONFIG = "/etc/swssd/swssd.toml"

#: The longest duration a config may give, in seconds (a day): longer is a typo, and timers
#: overflow near 1e9 s ("timestamp out of range").
MAX_SECONDS = 86_400.0
#: A duration in seconds: positive, finite (`inf` and `nan` are refused), at most MAX_SECONDS.
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]
#: The largest pop_batch_size. One pop is one Lua script, and while a script runs longer than
#: busy-reply-threshold (5 s) Redis answers every other client BUSY: the daemon's pops of
#: 1,000,000 one-field entries took 12-19 s, of 100,000 about 1 s (redis 7.0, loaded machine).
#: SPOP itself refuses counts beyond 2**63-1, and the queue script's LRANGE beyond about 2**63/3.
MAX_POP_BATCH_SIZE = 100_000
#: The largest pending_limit: tasks held in memory per table.
MAX_PENDING_LIMIT = 10_000_000
#: Counts with no natural limit (attempts, starvation turns): beyond this a typo.
MAX_COUNT = 1_000_000
#: Seconds a table may have work due without a handler call ending before it counts as stalled
#: (health, ready, the systemd watchdog): ten times the default handler_timeout, so a handler
#: the watchdog cancels is a failure (progress) long before, and only a worker that cannot go
#: on is reported.
DEFAULT_STALL_AFTER = 300.0


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RedisConfig(_Section):
    """Where Redis is (a SONiC database_config.json, or one URL for every database), who swssd is
    there and how TLS is checked. The password is the first of: `password_file`, `password` or the
    URL's (one of those three at most), the systemd credential `redis-password`, `$SWSSD_REDIS_PASSWORD`
    (see resolve()). A repr or str never shows it."""

    #: SONiC's database_config.json naming each database's server, id and separator (default: $SWSSD_DB_CONFIG, else
    #: /var/run/redis/sonic-db/database_config.json when it exists, else a private redis-server); relative to the
    #: config file's directory
    database_config: Path | None = None
    #: database_global.json, for tables in a namespace (multi-ASIC); default: SONiC's path
    database_global_config: Path | None = None
    #: one server for every database; resolve() moves its user and password to username/password
    url: str | None = None
    #: the Redis ACL user (default: the `default` user)
    username: str | None = None
    #: the user's password (prefer password_file, or the systemd credential redis-password)
    password: SecretStr | None = None
    #: a file holding the password (one line, 0600); relative to the config file's directory
    password_file: Path | None = None
    #: TLS to the TCP instances of database_config.json (a unix socket is never TLS), or a url
    #: redis:// made rediss://
    tls: bool = False
    #: CA certificates (PEM) the server's certificate must chain to; default: the system's
    ca_file: Path | None = None
    #: this client's certificate (PEM) and its key, for a Redis with tls-auth-clients
    cert_file: Path | None = None
    #: the private key of cert_file (PEM, unencrypted, 0600)
    key_file: Path | None = None
    #: verify the server's certificate (off: a warning at start; anyone in between can read the password)
    tls_verify: bool = True
    #: the server's certificate must name the host connected to (the database_config.json hostname
    #: or the URL's host)
    check_hostname: bool = True
    #: seconds to connect (TCP, TLS handshake) before the attempt fails and is retried
    connect_timeout: Seconds = 5.0
    #: seconds to wait for a command's reply (a pop that takes longer is read back from the
    #: in-flight record); far longer than any pop takes, so only a stalled Redis hits it
    read_timeout: Seconds = 30.0
    #: the liveness probe: a PING on its own connection every probe_interval seconds; no
    #: answer within probe_timeout reports Redis as not answering (log, redis_up 0, status)
    probe_interval: Seconds = 1.0
    #: seconds a liveness PING may take before Redis is reported as not answering
    probe_timeout: Seconds = 2.0

    #: where the password came from, for the start-up log line ("" when there is none)
    _password_source: str = PrivateAttr("")
    _resolved: bool = PrivateAttr(False)

    @model_validator(mode="after")
    def _one_source(self) -> RedisConfig:
        if self.database_config is not None and self.url is not None:
            raise ValueError("set either database_config or url, not both")
        return self

    @property
    def password_source(self) -> str:
        """Where the password came from: "password_file /etc/swssd/redis-password", "systemd
        credential redis-password", ...; "" without a password."""
        return self._password_source

    @property
    def tls_enabled(self) -> bool:
        """Whether connections to TCP instances use TLS: tls = true, or a rediss:// url."""
        return self.tls or (self.url is not None and self.url.lower().startswith("rediss://"))

    def resolve(self, config_path: str | None) -> None:
        """Finish what validation cannot: the URL parsed (its user and password moved out, so the
        URL holds no secret), password_file read, the TLS files checked, and the password taken
        from the environment when the config gives none. ConfigError names the field. Once only."""
        if self._resolved:
            return
        self._resolved = True
        if self.url is not None:
            self._take_url_credentials(config_path)
        if self.password_file is not None:
            if self.password is not None:
                raise ConfigError(config_path, "redis.password_file",
                                  "give the password once: password_file, password or the URL's")
            try:
                self.password = SecretStr(read_secret(self.password_file))
            except (OSError, ValueError) as exc:
                problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise ConfigError(config_path, "redis.password_file",
                                  f"{self.password_file}: {problem}") from None
            self._password_source = f"password_file {self.password_file}"
        elif self.password is not None:
            self._password_source = self._password_source or "[redis] password"
        else:
            self._ambient_password(config_path)
        self._check_tls_files(config_path)

    def _take_url_credentials(self, config_path: str | None) -> None:
        assert self.url is not None
        try:
            parsed = redis_url.parse(self.url, tls=self.tls)
        except RedisUrlError as exc:
            raise ConfigError(config_path, "redis.url", str(exc)) from None
        if parsed.username is not None:
            if self.username is not None and self.username != parsed.username:
                raise ConfigError(config_path, "redis.url", "the URL's user differs from [redis] username")
            self.username = parsed.username
        if parsed.password is not None:
            if self.password is not None:
                raise ConfigError(config_path, "redis.url",
                                  "give the password once: password_file, password or the URL's")
            self.password = SecretStr(parsed.password)
            self._password_source = "the url"
        self.url = parsed.without_credentials()

    def _ambient_password(self, config_path: str | None) -> None:
        try:
            found = ambient_password()
        except (OSError, ValueError) as exc:
            problem = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigError(config_path, "redis", f"systemd credential {CREDENTIAL_NAME}: {problem}") from None
        if found is not None:
            self.password = SecretStr(found[0])
            self._password_source = found[1]

    def _check_tls_files(self, config_path: str | None) -> None:
        files = {"ca_file": self.ca_file, "cert_file": self.cert_file, "key_file": self.key_file}
        for name, path in files.items():
            if path is None:
                continue
            if not self.tls_enabled:
                raise ConfigError(config_path, f"redis.{name}",
                                  "TLS is off: set tls = true (or use a rediss:// url)")
            if not os.access(path, os.R_OK) or not path.is_file():
                raise ConfigError(config_path, f"redis.{name}", f"{path}: not a readable file")
        if self.key_file is not None and self.cert_file is None:
            raise ConfigError(config_path, "redis.key_file", "key_file needs cert_file (the certificate it belongs to)")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            if self.ca_file is not None:
                field = "redis.ca_file"
                context.load_verify_locations(self.ca_file)
            if self.cert_file is not None:
                field = "redis.cert_file"
                context.load_cert_chain(self.cert_file, self.key_file)
        except ssl.SSLError as exc:
            raise ConfigError(config_path, field, f"not usable by TLS ({exc.reason or exc}): PEM certificates "
                              "expected, and cert_file with key_file (or a key inside cert_file) a pair") from None

    def tls_options(self) -> dict[str, Any]:
        """redis-py's ssl_* options for a TLS connection (a rediss:// URL's own query wins over them)."""
        options: dict[str, Any] = {
            "ssl_cert_reqs": "required" if self.tls_verify else "none",
            "ssl_check_hostname": self.tls_verify and self.check_hostname,
        }
        for option, path in (("ssl_ca_certs", self.ca_file), ("ssl_certfile", self.cert_file),
                             ("ssl_keyfile", self.key_file)):
            if path is not None:
                options[option] = str(path)
        return options

    def client_options(self) -> dict[str, Any]:
        """What DBConnector.connect and DBConnector.from_url take: user, password, TLS."""
        options: dict[str, Any] = {
            "username": self.username,
            "password": self.password.get_secret_value() if self.password is not None else None,
        }
        if self.tls_enabled:
            options.update(ssl=True, **self.tls_options())
        return options

    def warnings(self, config_path: str | None) -> list[str]:
        """What an operator should fix, one line each: files others can read or change that hold
        a secret (or the config, which names code), and TLS without certificate verification."""
        found = []
        if config_path is not None:
            holds = self._password_source in ("[redis] password", "the url")
            why = exposure(Path(config_path), secret=holds)
            if why:
                found.append(f"config file {config_path} is {why}"
                             + (" and holds the Redis password" if holds else "")
                             + ": chmod 600 it (or 640 for a group the daemon runs in)")
        for name, path in (("password_file", self.password_file), ("key_file", self.key_file)):
            why = exposure(path, secret=True) if path is not None else None
            if why:
                found.append(f"[redis] {name} {path} is {why}: chmod 600 it")
        if self.tls_enabled:
            if not self.tls_verify:
                found.append("TLS certificate verification is off ([redis] tls_verify = false): the "
                             "server is not authenticated, and whoever is in between can read the "
                             "password and the data")
            elif self.url is not None and redis_url.parse(self.url, tls=self.tls).cert_verification_off:
                found.append("TLS certificate verification is off (ssl_cert_reqs=none in [redis] url): "
                             "the server is not authenticated, and whoever is in between can read the "
                             "password and the data")
        return found


class RetryConfig(_Section):
    """How failed and waiting tasks run again."""

    #: seconds before a task that raised Retry runs again (new data for its key runs it sooner)
    retry_interval: Seconds = 1.0
    #: seconds before the first retry of a failed handler call; doubled at each failure, with jitter
    backoff_initial: Seconds = 0.1
    #: the longest wait between retries of a failed handler call, in seconds
    backoff_max: Seconds = 30.0
    #: handler calls a failing task gets before it is dead-lettered (logged, counted, captured)
    max_attempts: int = Field(5, ge=1, le=MAX_COUNT)
    #: seconds one handler call may take; a longer one is cancelled and counts as a failure
    handler_timeout: Seconds = 30.0


class RetryOverride(_Section):
    """Per-plugin changes to [retry]."""

    #: this plugin's [retry] retry_interval (default: [retry]'s)
    retry_interval: Seconds | None = None
    #: this plugin's [retry] backoff_initial (default: [retry]'s)
    backoff_initial: Seconds | None = None
    #: this plugin's [retry] backoff_max (default: [retry]'s)
    backoff_max: Seconds | None = None
    #: this plugin's [retry] max_attempts (default: [retry]'s)
    max_attempts: int | None = Field(None, ge=1, le=MAX_COUNT)
    #: this plugin's [retry] handler_timeout (default: [retry]'s)
    handler_timeout: Seconds | None = None


TableKind = Literal["state", "queue", "subscriber", "notification", "zmq"]

#: The transports a ZmqServer endpoint may name.
ZMQ_SCHEMES = ("tcp://", "ipc://")

#: Databases SONiC writes with plain hash writes (ConfigDBConnector, Table), whose consumers
#: follow keyspace notifications: a `state` table there gets a warning at start.
PLAIN_HASH_DATABASES = frozenset({"CONFIG_DB", "STATE_DB", "CHASSIS_STATE_DB"})
#: Databases where a table is a `subscriber` unless the config says otherwise: nothing writes
#: CONFIG_DB through the key-set channel. STATE_DB stays `state` by default, as it always was.
SUBSCRIBER_BY_DEFAULT = frozenset({"CONFIG_DB"})


class TableConfig(_Section):
    """One consumed table: a key-set `state` table, an op `queue`, a `subscriber` of a plain
    hash table (keyspace notifications), a `notification` channel (`table` is the channel), or
    a `zmq` table received by the ZmqServer at `endpoint`. Without `kind`: subscriber on
    CONFIG_DB, state elsewhere."""

    #: the database, by its name in database_config.json
    db: str = "APPL_DB"
    #: the namespace of database_global.json the database is in (multi-ASIC: `asic0`); "" is the host's
    namespace: str = ""
    #: the table's name (for a notification table: the channel); no glob characters, separator or whitespace
    table: str = Field(min_length=1)
    #: how the table is read: `state` (ProducerStateTable's key set), `queue` (ProducerTable's op queue),
    #: `subscriber` (keyspace events of plain hashes), `notification` (a pub/sub channel), `zmq` (a ZmqServer);
    #: default: subscriber on CONFIG_DB, state elsewhere
    kind: TableKind | None = None
    #: entries one pop takes at most (one Lua script call)
    pop_batch_size: int = Field(128, ge=1, le=MAX_POP_BATCH_SIZE)
    #: Select's priority: of the tables ready at once, the highest is popped first
    priority: int = Field(0, ge=-(2**31), le=2**31 - 1)
    #: state and queue tables: load the table's existing entries as pending SETs at start
    reconcile: bool = False
    #: pending tasks above which this table is not popped (default: [daemon] pending_limit)
    pending_limit: int | None = Field(None, ge=1, le=MAX_PENDING_LIMIT)
    #: zmq tables: the endpoint the ZmqServer binds (`tcp://*:8100`, `ipc:///run/swssd/zmq`);
    #: the tables of one endpoint share one server, as in orchagent
    endpoint: str | None = Field(None, min_length=7, max_length=4096)
    #: zmq tables: also write what arrives to the Redis table, as C++ db_persistence does
    db_persistence: bool = False
    #: seconds this table may have work due with no handler call ending before it is reported
    #: stalled (default: [daemon] stall_after)
    stall_after: Seconds | None = None
    #: consume this table even though one of SONiC's own daemons pops it (orchagent's ROUTE_TABLE):
    #: silences the warning, for a lab with no such daemon or a plugin meant to replace it
    take_from_sonic: bool = False

    _kind_explicit: bool = PrivateAttr(True)

    @field_validator("table")
    @classmethod
    def _table_name(cls, name: str) -> str:
        """Refused here, not at the first SCAN: a glob in a name would read other tables."""
        problem = table_name_problem(name)
        if problem is not None:
            raise ValueError(f"table name {shown(name)} {problem}")
        return name

    @model_validator(mode="after")
    def _kind_for_the_database(self) -> TableConfig:
        if self.kind is None:
            self._kind_explicit = False
            self.kind = "subscriber" if self.db in SUBSCRIBER_BY_DEFAULT else "state"
        if self.reconcile and self.kind in ("subscriber", "notification"):
            raise ValueError(
                f"reconcile does not apply to {self.kind} tables "
                + ("(they get every existing entry at start)" if self.kind == "subscriber"
                   else "(notifications are not stored)")
            )
        if self.kind == "zmq":
            if self.reconcile:
                raise ValueError("reconcile does not apply to zmq tables (the channel keeps nothing to read back)")
            if self.endpoint is None:
                raise ValueError("a zmq table needs endpoint (the ZmqServer address, e.g. \"tcp://*:8100\")")
            if not self.endpoint.startswith(ZMQ_SCHEMES):
                raise ValueError(f"endpoint must start with {' or '.join(ZMQ_SCHEMES)}")
        elif self.endpoint is not None or self.db_persistence:
            raise ValueError("endpoint and db_persistence apply to kind = \"zmq\" tables only")
        return self

    @property
    def resolved_kind(self) -> TableKind:
        """The kind, set from the database when the config did not say."""
        assert self.kind is not None
        return self.kind

    @property
    def kind_explicit(self) -> bool:
        """Whether the config named the kind (else it came from the database)."""
        return self._kind_explicit


class TimerOverride(_Section):
    """Per-plugin changes to one of its timers (`[orchs.timers.<name>]`, see swssd.orch.timers)."""

    interval: Seconds | None = None
    #: seconds up to which each call comes later than its tick, at random (at most the interval)
    jitter: float | None = Field(None, ge=0, le=MAX_SECONDS, allow_inf_nan=False)
    #: seconds from start to the first call (default: one interval)
    first_delay: float | None = Field(None, ge=0, le=MAX_SECONDS, allow_inf_nan=False)
    #: seconds one call may go on before the timer counts as stalled (default: [daemon] stall_after)
    stall_after: Seconds | None = None


class OrchConfig(_Section):
    """One plugin: where its class is, what it consumes, its own options."""

    #: the plugin class: `module:Class` on the import path (the config's directory first), `file.py:Class`, or an
    #: entry point name of group swssd.orchs
    plugin: str = Field(min_length=1)
    #: the plugin's name in logs, metrics and self.name (default: plugin)
    name: str | None = None
    tables: list[TableConfig] = Field(min_length=1)
    #: databases the plugin reaches through self.connector() besides the consumed ones
    databases: list[str] = []
    #: anything the plugin reads as self.options
    options: dict[str, Any] = {}
    retry: RetryOverride = RetryOverride()
    #: changes to the plugin's timers, by timer name
    timers: dict[str, TimerOverride] = {}

    @property
    def display_name(self) -> str:
        return self.name or self.plugin


class LoggingConfig(_Section):
    #: `console`: one readable line per event; `json`: one JSON object per line
    format: Literal["console", "json"] = "console"
    #: the lowest level logged
    level: Literal["debug", "info", "warning", "error"] = "info"
    #: Log to this file (reopened on SIGHUP) instead of stderr.
    file: Path | None = None


class CaptureConfig(_Section):
    #: write every popped task, before it is handled, to swssd.capture.jsonl in directory
    enabled: bool = False
    #: where capture files go (relative to the config file's directory)
    directory: Path = Path("/var/lib/swssd/capture")
    #: a file's size before it rotates (0: never), at most 1 TiB
    max_bytes: int = Field(64 * 1024 * 1024, ge=0, le=2**40)
    #: also write SONiC's swss.rec format beside the JSON Lines capture
    rec: bool = False
    #: the host name the records carry (default: this host's name)
    host: str | None = None
    #: seconds between attempts to open capture files that could not be opened (the daemon
    #: runs on without capturing meanwhile)
    retry_interval: Seconds = 5.0


class MetricsConfig(_Section):
    #: serve Prometheus metrics and /health over HTTP
    enabled: bool = False
    #: the address to listen on; beyond loopback logs a warning (the page has no authentication)
    address: str = "127.0.0.1"
    #: the TCP port to listen on
    port: int = Field(9750, ge=0, le=65535)


class DaemonConfig(_Section):
    #: This daemon's name in Redis: its in-flight records (`_SWSSD_INFLIGHT:<instance>:<TABLE>`),
    #: dead-letter lists and lease (`_SWSSD_INSTANCE:<instance>`) carry it, so a restarted daemon
    #: finds what it left. Two daemons on one Redis need different names; the lease refuses a second.
    instance: str = Field("swssd", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.@-]+$")
    #: Seconds in-flight and popped tasks get to finish after SIGTERM.
    shutdown_timeout: Seconds = 10.0
    #: Pending tasks per table above which the table is not popped (the data waits in Redis).
    pending_limit: int = Field(20_000, ge=1, le=MAX_PENDING_LIMIT)
    #: Seconds a table may have work due with no handler call ending (handled, failed, timed out
    #: or Retry) before it is stalled: /health 503, ready 0, no systemd watchdog ping. A table's
    #: own stall_after overrides it.
    stall_after: Seconds = DEFAULT_STALL_AFTER
    #: A task in a handler when this many runs in a row ended abnormally (crashed, killed,
    #: aborted by the systemd watchdog) is set aside at the next start instead of run again:
    #: dead-lettered, kept on the table's dead-letter list in Redis. Tasks merely taken over,
    #: popped or pending never count (crash_guard.py).
    set_aside_after_crashes: int = Field(3, ge=1, le=100)
    #: Select fairness: a ready table passed over this many times in a row is served next.
    starvation_limit: int = Field(4, ge=1, le=MAX_COUNT)
    #: Seconds between "Redis is still unreachable" log lines.
    health_interval: Seconds = 5.0
    #: Turn on the keyspace notifications subscriber tables need when Redis has them off
    #: (CONFIG SET notify-keyspace-events); off: a clear warning at start instead.
    enable_keyspace_events: bool = False
    #: Connections each ZMQ server holds at most (fewer when the descriptor limit leaves less
    #: once some are kept for Redis, metrics and the log); more are refused, logged, counted.
    zmq_max_peers: int = Field(4096, ge=1, le=1_000_000)
    #: Bytes of received ZMQ changes a server holds unpopped, and a zmq table's pending work
    #: (estimated from its messages), above which reading stops / the table pauses.
    zmq_buffer_bytes: int = Field(8 * 1024 * 1024, ge=64 * 1024, le=1 << 40)
    #: Messages libzmq queues per ZMQ connection while the server does not read (ZMQ_RCVHWM;
    #: C++ 10,000): with 1 MB messages, about twice this many MB per flooding peer. 64 and more
    #: read small messages 0.3-0.4 us faster each.
    zmq_receive_hwm: int = Field(16, ge=2, le=100_000)
    #: Dead letters kept per database in `_SWSSD_DEAD_LETTERS:<instance>` (a Redis stream; the
    #: oldest go first): `swssd dead-letters` lists, retries and purges them.
    dead_letters_max: int = Field(10_000, ge=1, le=MAX_COUNT)


#: The reconcile timer when CONFIG_DB `WARM_RESTART|<container>` has no `<app>_timer`: SONiC's
#: routing default (fpmsyncd's and bgp's 120 s).
DEFAULT_RECONCILE_TIMER = 120.0


class WarmRestartConfig(_Section):
    """The daemon's part in SONiC's warm restart (swssd.orch.warm_restart): its records are
    STATE_DB `WARM_RESTART_TABLE|<app>`, its knob `WARM_RESTART_ENABLE_TABLE|<container>` (or
    `|system`), its reconcile timer CONFIG_DB `WARM_RESTART|<container>` `<app>_timer`."""

    #: the application name SONiC's tools show (`show warm_restart state`)
    app: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    #: the container (docker) whose knob and timers apply
    container: str = Field("swss", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    #: seconds from `restored` to reconcile when CONFIG_DB sets no `<app>_timer`
    default_timer: Seconds = DEFAULT_RECONCILE_TIMER


class Config(_Section):
    """The whole file."""

    redis: RedisConfig = RedisConfig()
    retry: RetryConfig = RetryConfig()
    logging: LoggingConfig = LoggingConfig()
    capture: CaptureConfig = CaptureConfig()
    metrics: MetricsConfig = MetricsConfig()
    daemon: DaemonConfig = DaemonConfig()
    #: taking part in SONiC's warm restart; absent: the daemon does not
    warm_restart: WarmRestartConfig | None = None
    #: directories searched for plugin modules after the config file's own (relative to it),
    #: in order, before PYTHONPATH and installed packages
    plugin_path: list[Path] = []
    orchs: list[OrchConfig] = Field(min_length=1)
    #: set by the loader to the file the config came from (for messages and relative paths);
    #: a value written in the file is replaced
    path: str | None = Field(None, exclude=True)

    def retry_for(self, orch: OrchConfig) -> RetryConfig:
        """[retry] with the plugin's overrides applied."""
        changes = orch.retry.model_dump(exclude_none=True)
        return self.retry.model_copy(update=changes) if changes else self.retry

    def timing_warnings(self) -> list[str]:
        """One line for each table whose stall_after is shorter than its handler_timeout: one
        honest handler call that takes longer would be reported as a stall."""
        lines = []
        for i, orch in enumerate(self.orchs):
            timeout = self.retry_for(orch).handler_timeout
            for j, table in enumerate(orch.tables):
                stall = table.stall_after if table.stall_after is not None else self.daemon.stall_after
                if stall < timeout:
                    lines.append(f"orchs[{i}].tables[{j}] ({table.db} {table.table}): stall_after {stall:g} s is "
                                 f"shorter than handler_timeout {timeout:g} s: a handler call that takes longer "
                                 f"than {stall:g} s is reported as a stall")
        return lines

    def database_config_path(self) -> Path | None:
        """The database_config.json to use: configured, $SWSSD_DB_CONFIG, or SONiC's default
        when it exists; None when Redis is not configured at all (and no URL is given)."""
        if self.redis.url is not None:
            return None
        if self.redis.database_config is not None:
            return self.redis.database_config
        env = os.environ.get(ENV_VAR)
        if env:
            return Path(env)
        return Path(DEFAULT_PATH) if Path(DEFAULT_PATH).exists() else None

    @property
    def redis_configured(self) -> bool:
        return self.redis.url is not None or self.database_config_path() is not None
