"""SonicDBConfig: the process-wide map of SONiC databases, as the C++ class holds it.

The files are parsed by swssd.redis.dbconfig (the asyncio library's parser); this module keeps the
C++ state and rules around it: initialize() once (RuntimeError the second time), a lazy
initialize() of the default database_config.json on first use, initializeGlobalConfig() adding one
entry per namespace/container of database_global.json (skipping the default one when initialize()
already ran, and doing nothing but log when the file is absent), and the binding's exceptions: an
unknown database or key is IndexError (C++ std::out_of_range), a file problem RuntimeError.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import NamedTuple

from ..errors import ConfigError
from ..redis.dbconfig import DEFAULT_PATH, ENV_VAR, GLOBAL_DEFAULT_PATH, GLOBAL_ENV_VAR
from ..redis.dbconfig import SonicDBConfig as ParsedConfig
from ..redis.dbconfig import SonicDBGlobalConfig as ParsedGlobalConfig
from ..redis.dbconfig import SonicDBKey as ParsedKey
from .containers import GetInstanceListResult

log = logging.getLogger(__name__)


class SonicDBKey:
    """The C++ SonicDBKey: a container name and a network namespace ("" for the host's)."""

    def __init__(self, netns: str = "") -> None:
        self.containerName = ""
        self.netns = netns

    def isEmpty(self) -> bool:
        return not self.containerName and not self.netns

    def toString(self) -> str:
        return f"{self.containerName}:{self.netns}"

    def parsed(self) -> ParsedKey:
        """The same key as swssd.redis.dbconfig names it."""
        return ParsedKey(self.netns, self.containerName)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SonicDBKey) and self.parsed() == other.parsed()

    def __hash__(self) -> int:
        return hash(self.parsed())

    def __repr__(self) -> str:
        return f"SonicDBKey(containerName={self.containerName!r}, netns={self.netns!r})"


class RedisInstInfo:
    """Where one redis-server listens (the C++ RedisInstInfo)."""

    def __init__(self, unixSocketPath: str = "", hostname: str = "", port: int = 0) -> None:
        self.unixSocketPath = unixSocketPath
        self.hostname = hostname
        self.port = port

    def __repr__(self) -> str:
        return f"RedisInstInfo(unixSocketPath={self.unixSocketPath!r}, hostname={self.hostname!r}, port={self.port})"


class _Entry(NamedTuple):
    """One database_config.json as loaded: the parsed file and its id -> separator map (first wins)."""

    config: ParsedConfig
    separators: dict[int, str]


def _entry(config: ParsedConfig) -> _Entry:
    separators: dict[int, str] = {}
    for info in config.databases.values():
        separators.setdefault(info.id, info.separator)
    return _Entry(config, separators)


KeyLike = str | SonicDBKey


def _key(netns: KeyLike = "", containerName: str = "") -> ParsedKey:
    """A (netns, container) pair or a SonicDBKey, as the C++ overloads take them."""
    if isinstance(netns, SonicDBKey):
        return netns.parsed()
    return ParsedKey(netns or "", containerName or "")


def _or_env(path: str, default: str, variable: str) -> str:
    """`path`, or the file $`variable` names when `path` is SONiC's default one."""
    return (os.environ.get(variable) or path) if path == default else path


def _label(key: ParsedKey) -> str:
    """How the C++ messages print a key: `container:netns`."""
    return f"{key.container_name}:{key.namespace}"


class SonicDBConfig:
    """Static methods only, over process-wide state (one map per process, as in C++)."""

    DEFAULT_SONIC_DB_CONFIG_FILE = DEFAULT_PATH
    DEFAULT_SONIC_DB_GLOBAL_CONFIG_FILE = GLOBAL_DEFAULT_PATH

    _lock = threading.RLock()
    _entries: dict[ParsedKey, _Entry] = {}  # noqa: RUF012 - class-level on purpose: process-wide state
    _init = False
    _global_init = False

    @staticmethod
    def initialize(file: str = DEFAULT_PATH) -> None:
        """Load database_config.json for the host namespace; RuntimeError if done already.

        SONiC's default path stands for $SWSSD_DB_CONFIG when that is set (as it does for swssd's
        own tools): an unmodified program, which loads the default, runs off the switch against
        the file the variable names. A path given otherwise is read as given."""
        with SonicDBConfig._lock:
            if SonicDBConfig._init:
                raise RuntimeError("SonicDBConfig already initialized")
            SonicDBConfig._entries[ParsedKey()] = _entry(_load(_or_env(file, DEFAULT_PATH, ENV_VAR)))
            SonicDBConfig._init = True

    @staticmethod
    def load_sonic_db_config(sonic_db_file_path: str = DEFAULT_PATH) -> None:
        """The binding's Python-named initialize()."""
        SonicDBConfig.initialize(sonic_db_file_path)

    @staticmethod
    def initializeGlobalConfig(file: str = GLOBAL_DEFAULT_PATH, ignore_nonexistent: bool = False) -> None:
        """Load database_global.json and each database_config.json it includes (once per process);
        the default path stands for $SWSSD_DB_GLOBAL_CONFIG when that is set."""
        file = _or_env(file, GLOBAL_DEFAULT_PATH, GLOBAL_ENV_VAR)
        with SonicDBConfig._lock:
            if SonicDBConfig._global_init:
                log.error("SonicDBConfig Global config is already initialized")
                return
            if not os.access(file, os.R_OK):
                log.error("Sonic database config global file doesn't exist at %s", file)
            else:
                try:
                    parsed = ParsedGlobalConfig.load(file, ignore_nonexistent=ignore_nonexistent)
                except ConfigError as exc:
                    raise RuntimeError(f"Sonic database config file syntax error >> {exc}") from None
                for key in parsed.keys():  # noqa: SIM118 - the loaded files, not a dict
                    if key == ParsedKey() and SonicDBConfig._init:
                        continue
                    SonicDBConfig._entries[key] = _entry(parsed.config(key.namespace, key.container_name))
                    if key == ParsedKey():
                        SonicDBConfig._init = True
            SonicDBConfig._global_init = True

    @staticmethod
    def load_sonic_global_db_config(
        global_db_file_path: str = GLOBAL_DEFAULT_PATH, namespace: str | None = None, ignore_nonexistent: bool = False
    ) -> None:
        """The binding's Python-named initializeGlobalConfig() (`namespace` is ignored there too)."""
        SonicDBConfig.initializeGlobalConfig(global_db_file_path, ignore_nonexistent)

    @staticmethod
    def reset() -> None:
        """Forget everything, so initialize() can load another file."""
        with SonicDBConfig._lock:
            SonicDBConfig._entries.clear()
            SonicDBConfig._init = False
            SonicDBConfig._global_init = False

    @staticmethod
    def isInit() -> bool:
        return SonicDBConfig._init

    @staticmethod
    def isGlobalInit() -> bool:
        return SonicDBConfig._global_init

    @staticmethod
    def validateNamespace(netns: str) -> None:
        """RuntimeError for a namespace that needs, or is not in, database_global.json."""
        if not netns:
            return
        if not SonicDBConfig._global_init:
            raise RuntimeError("Initialize global DB config using API SonicDBConfig::initializeGlobalConfig")
        if not any(key.namespace == netns for key in SonicDBConfig._entries):
            raise RuntimeError(f"Namespace {netns} is not a valid namespace name in config file")

    @staticmethod
    def _entry_of(key: ParsedKey) -> _Entry:
        """The loaded file of `key`, loading the default one first if nothing was loaded yet."""
        with SonicDBConfig._lock:
            if not SonicDBConfig._init:
                SonicDBConfig.initialize()
            if key != ParsedKey() and not SonicDBConfig._global_init:
                raise RuntimeError("Initialize global DB config using API SonicDBConfig::initializeGlobalConfig")
            try:
                return SonicDBConfig._entries[key]
            except KeyError:
                raise IndexError(f"Key {_label(key)} is not a valid key name in config file") from None

    @staticmethod
    def _database(dbName: str, key: ParsedKey) -> tuple[ParsedConfig, str]:
        config = SonicDBConfig._entry_of(key).config
        if dbName not in config.databases:
            raise IndexError(f"Failed to find {dbName} database in {_label(key)} key")
        return config, dbName

    @staticmethod
    def getDbInst(dbName: str, netns: KeyLike = "", containerName: str = "") -> str:
        config, name = SonicDBConfig._database(dbName, _key(netns, containerName))
        return config.databases[name].instance

    @staticmethod
    def getDbId(dbName: str, netns: KeyLike = "", containerName: str = "") -> int:
        config, name = SonicDBConfig._database(dbName, _key(netns, containerName))
        return config.databases[name].id

    @staticmethod
    def getSeparator(db: object, netns: KeyLike = "", containerName: str = "") -> str:
        """By database name, by id, or of a DBConnector (by its name, else its id)."""
        if isinstance(db, int):
            key = _key(netns, containerName)
            separators = SonicDBConfig._entry_of(key).separators
            if db not in separators:
                raise IndexError(f"Failed to find {db} database in {_label(key)} key")
            return separators[db]
        if isinstance(db, str):
            config, name = SonicDBConfig._database(db, _key(netns, containerName))
            return config.databases[name].separator
        name = db.getDbName()  # type: ignore[attr-defined]
        key = db.getDBKey()  # type: ignore[attr-defined]
        return SonicDBConfig.getSeparator(name or db.getDbId(), key)  # type: ignore[attr-defined]

    @staticmethod
    def _instance(dbName: str, key: ParsedKey) -> RedisInstInfo:
        config, name = SonicDBConfig._database(dbName, key)
        inst = config.instances[config.databases[name].instance]
        return RedisInstInfo(inst.unix_socket_path or "", inst.hostname, inst.port)

    @staticmethod
    def getDbSock(dbName: str, netns: KeyLike = "", containerName: str = "") -> str:
        return SonicDBConfig._instance(dbName, _key(netns, containerName)).unixSocketPath

    @staticmethod
    def getDbHostname(dbName: str, netns: KeyLike = "", containerName: str = "") -> str:
        return SonicDBConfig._instance(dbName, _key(netns, containerName)).hostname

    @staticmethod
    def getDbPort(dbName: str, netns: KeyLike = "", containerName: str = "") -> int:
        return SonicDBConfig._instance(dbName, _key(netns, containerName)).port

    @staticmethod
    def getNamespaces() -> tuple[str, ...]:
        """Every namespace loaded, "" (the host's) included, sorted."""
        if not SonicDBConfig._init:
            SonicDBConfig.initialize()
        return tuple(sorted({key.namespace for key in SonicDBConfig._entries}))

    @staticmethod
    def get_ns_list() -> tuple[str, ...]:
        return SonicDBConfig.getNamespaces()

    @staticmethod
    def getDbKeys() -> tuple[SonicDBKey, ...]:
        """Every (container, namespace) loaded."""
        if not SonicDBConfig._init:
            SonicDBConfig.initialize()
        keys = []
        for parsed in SonicDBConfig._entries:
            key = SonicDBKey(parsed.namespace)
            key.containerName = parsed.container_name
            keys.append(key)
        return tuple(keys)

    @staticmethod
    def getDbList(netns: KeyLike = "", containerName: str = "") -> tuple[str, ...]:
        """The database names of a namespace, in the file's order."""
        key = _key(netns, containerName)
        if not SonicDBConfig._init:
            SonicDBConfig.initialize()
        SonicDBConfig.validateNamespace(key.namespace)
        try:
            return tuple(SonicDBConfig._entries[key].config.databases)
        except KeyError:
            raise IndexError(f"Key {_label(key)} is not a valid key name in config file") from None

    @staticmethod
    def getInstanceList(netns: KeyLike = "", containerName: str = "") -> GetInstanceListResult:
        """Instance name -> RedisInstInfo, in name order; empty for a key not loaded."""
        key = _key(netns, containerName)
        if not SonicDBConfig._init:
            SonicDBConfig.initialize()
        SonicDBConfig.validateNamespace(key.namespace)
        entry = SonicDBConfig._entries.get(key)
        result = GetInstanceListResult()
        if entry is not None:
            for name in sorted(entry.config.instances):
                inst = entry.config.instances[name]
                result[name] = RedisInstInfo(inst.unix_socket_path or "", inst.hostname, inst.port)
        return result


def _load(file: str) -> ParsedConfig:
    """One database_config.json, its problems as the RuntimeError the binding raises."""
    if not os.access(file, os.R_OK):
        raise RuntimeError(f"Sonic database config file doesn't exist at {file}")
    try:
        return ParsedConfig.load(file)
    except ConfigError as exc:
        raise RuntimeError(f"Sonic database config file syntax error >> {exc}") from None


def _after_fork() -> None:
    """A lock held by another thread at fork() would never be released in the child."""
    SonicDBConfig._lock = threading.RLock()


os.register_at_fork(after_in_child=_after_fork)
