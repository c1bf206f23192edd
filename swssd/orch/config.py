"""The daemon's TOML configuration, validated by pydantic; every error names the file and the field."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from ..dbconfig import DEFAULT_PATH, ENV_VAR
from ..errors import ConfigError

#: Where a package installs the daemon's config.
DEFAULT_CONFIG = "/etc/swssd/swssd.toml"

#: SONiC's usual databases (id, separator), used when Redis is given as one URL.
SONIC_DATABASES: dict[str, tuple[int, str]] = {
    "APPL_DB": (0, ":"), "ASIC_DB": (1, ":"), "COUNTERS_DB": (2, ":"), "LOGLEVEL_DB": (3, ":"),
    "CONFIG_DB": (4, "|"), "PFC_WD_DB": (5, ":"), "FLEX_COUNTER_DB": (5, ":"), "STATE_DB": (6, "|"),
    "SNMP_OVERLAY_DB": (7, "|"), "RESTAPI_DB": (8, "|"), "GB_ASIC_DB": (9, ":"),
    "GB_COUNTERS_DB": (10, ":"), "GB_FLEX_COUNTER_DB": (11, ":"), "CHASSIS_APP_DB": (12, "|"),
    "CHASSIS_STATE_DB": (13, "|"), "APPL_STATE_DB": (14, ":"),
}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RedisConfig(_Section):
    """Where Redis is: a SONiC database_config.json, or one URL for every database."""

    database_config: Path | None = None
    #: database_global.json, for tables in a namespace (multi-ASIC); default: SONiC's path
    database_global_config: Path | None = None
    url: str | None = None
    username: str | None = None
    password: str | None = None
    tls: bool = False
    #: seconds to connect (TCP, TLS handshake) before the attempt fails and is retried
    connect_timeout: float = Field(5.0, gt=0)
    #: seconds to wait for a command's reply (a pop that takes longer is read back from the
    #: in-flight record); far longer than any pop takes, so only a stalled Redis hits it
    read_timeout: float = Field(30.0, gt=0)
    #: the liveness probe: a PING on its own connection every probe_interval seconds; no
    #: answer within probe_timeout reports Redis as not answering (log, redis_up 0, status)
    probe_interval: float = Field(1.0, gt=0)
    probe_timeout: float = Field(2.0, gt=0)

    @model_validator(mode="after")
    def _one_source(self) -> RedisConfig:
        if self.database_config is not None and self.url is not None:
            raise ValueError("set either database_config or url, not both")
        return self


class RetryConfig(_Section):
    """How failed and waiting tasks run again."""

    retry_interval: float = Field(1.0, gt=0)
    backoff_initial: float = Field(0.1, gt=0)
    backoff_max: float = Field(30.0, gt=0)
    max_attempts: int = Field(5, ge=1)
    handler_timeout: float = Field(30.0, gt=0)


class RetryOverride(_Section):
    """Per-plugin changes to [retry]."""

    retry_interval: float | None = Field(None, gt=0)
    backoff_initial: float | None = Field(None, gt=0)
    backoff_max: float | None = Field(None, gt=0)
    max_attempts: int | None = Field(None, ge=1)
    handler_timeout: float | None = Field(None, gt=0)


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

    db: str = "APPL_DB"
    namespace: str = ""
    table: str = Field(min_length=1)
    kind: TableKind | None = None
    pop_batch_size: int = Field(128, ge=1)
    priority: int = 0
    reconcile: bool = False
    pending_limit: int | None = Field(None, ge=1)
    #: zmq tables: the endpoint the ZmqServer binds (`tcp://*:8100`, `ipc:///run/swssd/zmq`);
    #: the tables of one endpoint share one server, as in orchagent
    endpoint: str | None = Field(None, min_length=7, max_length=4096)
    #: zmq tables: also write what arrives to the Redis table, as C++ db_persistence does
    db_persistence: bool = False

    _kind_explicit: bool = PrivateAttr(True)

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


class OrchConfig(_Section):
    """One plugin: where its class is, what it consumes, its own options."""

    plugin: str = Field(min_length=1)
    name: str | None = None
    tables: list[TableConfig] = Field(min_length=1)
    databases: list[str] = []
    options: dict[str, Any] = {}
    retry: RetryOverride = RetryOverride()

    @property
    def display_name(self) -> str:
        return self.name or self.plugin


class LoggingConfig(_Section):
    format: Literal["console", "json"] = "console"
    level: Literal["debug", "info", "warning", "error"] = "info"
    #: Log to this file (reopened on SIGHUP) instead of stderr.
    file: Path | None = None


class CaptureConfig(_Section):
    enabled: bool = False
    directory: Path = Path("/var/lib/swssd/capture")
    max_bytes: int = Field(64 * 1024 * 1024, ge=0)
    rec: bool = False
    host: str | None = None


class MetricsConfig(_Section):
    enabled: bool = False
    address: str = "127.0.0.1"
    port: int = Field(9750, ge=0, le=65535)


class DaemonConfig(_Section):
    #: This daemon's name in Redis: its in-flight records (`_SWSSD_INFLIGHT:<instance>:<TABLE>`),
    #: dead-letter lists and lease (`_SWSSD_INSTANCE:<instance>`) carry it, so a restarted daemon
    #: finds what it left. Two daemons on one Redis need different names; the lease refuses a second.
    instance: str = Field("swssd", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.@-]+$")
    #: Seconds in-flight and popped tasks get to finish after SIGTERM.
    shutdown_timeout: float = Field(10.0, gt=0)
    #: Pending tasks per table above which the table is not popped (the data waits in Redis).
    pending_limit: int = Field(20_000, ge=1)
    #: Select fairness: a ready table passed over this many times in a row is served next.
    starvation_limit: int = Field(4, ge=1)
    #: Seconds between "Redis is still unreachable" log lines.
    health_interval: float = Field(5.0, gt=0)
    #: Turn on the keyspace notifications subscriber tables need when Redis has them off
    #: (CONFIG SET notify-keyspace-events); off: a clear warning at start instead.
    enable_keyspace_events: bool = False


class Config(_Section):
    """The whole file."""

    redis: RedisConfig = RedisConfig()
    retry: RetryConfig = RetryConfig()
    logging: LoggingConfig = LoggingConfig()
    capture: CaptureConfig = CaptureConfig()
    metrics: MetricsConfig = MetricsConfig()
    daemon: DaemonConfig = DaemonConfig()
    orchs: list[OrchConfig] = Field(min_length=1)
    #: the file it came from, for messages and relative paths
    path: str | None = Field(None, exclude=True)

    def retry_for(self, orch: OrchConfig) -> RetryConfig:
        """[retry] with the plugin's overrides applied."""
        changes = orch.retry.model_dump(exclude_none=True)
        return self.retry.model_copy(update=changes) if changes else self.retry

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


def _resolve(base: Path, value: Any) -> Any:
    return value if value is None or Path(value).is_absolute() else base / value


def config_from_dict(raw: dict[str, Any], path: str | None = None) -> Config:
    """Validate a parsed document; paths in it are relative to the file's directory."""
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        raise ConfigError(path, field or None, msg) from None
    if path is not None:
        base = Path(path).resolve().parent
        config.redis.database_config = _resolve(base, config.redis.database_config)
        config.redis.database_global_config = _resolve(base, config.redis.database_global_config)
        config.logging.file = _resolve(base, config.logging.file)
        config.capture.directory = _resolve(base, config.capture.directory)
    config.path = path
    _check_tables(config)
    return config


def _check_tables(config: Config) -> None:
    """One consumer per table (two would split its changes), and table names distinct per plugin
    (handle() tells tables apart by name)."""
    owners: dict[tuple[str, str, str, str], int] = {}
    for i, orch in enumerate(config.orchs):
        names: set[str] = set()
        for j, t in enumerate(orch.tables):
            field = f"orchs.{i}.tables.{j}.table"
            if t.table in names:
                raise ConfigError(config.path, field, f"table {t.table!r} is listed twice for this plugin")
            names.add(t.table)
            # a zmq table is a channel of its endpoint's server, apart from the Redis channels
            other = owners.setdefault((t.namespace, t.db, t.table, t.endpoint or ""), i)
            if other != i and t.resolved_kind in ("state", "queue", "zmq"):
                where = f"{t.db} of namespace {t.namespace!r}" if t.namespace else t.db
                where += f" (zmq {t.endpoint})" if t.endpoint else ""
                raise ConfigError(
                    config.path, field,
                    f"{where} {t.table} is already consumed by orchs.{other}; one table has one consumer",
                )


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a TOML file, raising ConfigError (one line: file, field, problem)."""
    name = str(path)
    try:
        with open(name, "rb") as f:
            raw = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(name, None, f"cannot read config: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(name, None, f"not valid TOML: {exc}") from None
    return config_from_dict(raw, name)
