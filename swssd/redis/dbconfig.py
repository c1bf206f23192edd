"""database_config.json: where each SONiC database lives (instance, id, separator); and
database_global.json: one database_config.json per namespace (multi-ASIC) or container."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from ..errors import ConfigError, InvalidSeparatorError, UnknownDatabaseError, UnknownNamespaceError

DEFAULT_PATH = "/var/run/redis/sonic-db/database_config.json"
ENV_VAR = "SWSSD_DB_CONFIG"
GLOBAL_DEFAULT_PATH = "/var/run/redis/sonic-db/database_global.json"
GLOBAL_ENV_VAR = "SWSSD_DB_GLOBAL_CONFIG"

M = TypeVar("M", bound=BaseModel)
SEPARATORS = (":", "|")


def check_separator(separator: str) -> str:
    """Refuse what the C++ TableBase refuses."""
    if separator not in SEPARATORS:
        raise InvalidSeparatorError(separator)
    return separator


class RedisInstance(BaseModel):
    """One redis-server: TCP address and, preferred when set, its unix socket."""

    model_config = ConfigDict(extra="allow")

    hostname: str = "127.0.0.1"
    port: int = 6379
    unix_socket_path: str | None = None


class DatabaseInfo(BaseModel):
    """One logical database: its number on an instance and its key separator."""

    model_config = ConfigDict(extra="allow")

    id: int = Field(ge=0)
    separator: str
    instance: str

    @field_validator("separator")
    @classmethod
    def _separator(cls, value: str) -> str:
        if value not in SEPARATORS:
            raise ValueError(f"must be ':' or '|', not {value!r}")
        return value


class SonicDBConfig(BaseModel):
    """The parsed database_config.json, SONiC's own schema (INSTANCES, DATABASES, VERSION)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    instances: dict[str, RedisInstance] = Field(alias="INSTANCES")
    databases: dict[str, DatabaseInfo] = Field(alias="DATABASES")
    version: str | None = Field(default=None, alias="VERSION")
    path: str | None = Field(default=None, exclude=True)

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> SonicDBConfig:
        """Read the file at `path`, else $SWSSD_DB_CONFIG, else SONiC's default location."""
        resolved = str(path or os.environ.get(ENV_VAR) or DEFAULT_PATH)
        return cls.from_dict(_read_json(resolved, "database config"), path=resolved)

    @classmethod
    def from_dict(cls, raw: object, path: str | None = None) -> SonicDBConfig:
        """Validate an already-parsed document; errors name the offending field."""
        config = _validate(cls, raw, path)
        for name, db in config.databases.items():
            if db.instance not in config.instances:
                raise ConfigError(
                    path,
                    f"DATABASES.{name}.instance",
                    f"instance '{db.instance}' is not defined under INSTANCES",
                )
        config.path = path
        return config

    def database(self, name: str) -> DatabaseInfo:
        """The entry of database `name`, or UnknownDatabaseError listing the known ones."""
        try:
            return self.databases[name]
        except KeyError:
            raise UnknownDatabaseError(name, list(self.databases), self.path) from None

    def instance_of(self, name: str) -> RedisInstance:
        """The redis-server that hosts database `name`."""
        return self.instances[self.database(name).instance]

    def db_id(self, name: str) -> int:
        return self.database(name).id

    def separator(self, name: str) -> str:
        return self.database(name).separator

    def db_names(self) -> list[str]:
        return list(self.databases)


class SonicDBKey(NamedTuple):
    """What database_global.json files a database_config.json under, as the C++ SonicDBKey: a network
    namespace ("" is the host's) and a container name ("" unless containers share a namespace, as
    the DPUs of a smart switch do)."""

    namespace: str = ""
    container_name: str = ""

    def label(self) -> str:
        """How messages show this key."""
        shown = f"'{self.namespace}'" if self.namespace else "'' (default)"
        return shown + (f" with container '{self.container_name}'" if self.container_name else "")


class IncludeEntry(BaseModel):
    """One element of INCLUDES: a database_config.json and the namespace/container it describes."""

    model_config = ConfigDict(extra="allow")

    include: str
    namespace: str | None = None
    container_name: str | None = None

    @property
    def key(self) -> SonicDBKey:
        """Absent, null and "" all mean the default, as in the C++ library."""
        return SonicDBKey(self.namespace or "", self.container_name or "")


class SonicDBGlobalConfig(BaseModel):
    """The parsed database_global.json (INCLUDES, VERSION), each include loaded as a SonicDBConfig.

    Multi-ASIC systems run one redis-server per ASIC namespace; this file says where each
    namespace's database_config.json is. As in the C++ library, a later include for the same
    namespace and container replaces an earlier one.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    includes: list[IncludeEntry] = Field(alias="INCLUDES")
    version: str | None = Field(default=None, alias="VERSION")
    path: str | None = Field(default=None, exclude=True)
    _configs: dict[SonicDBKey, SonicDBConfig] = PrivateAttr(default_factory=dict)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str] | None = None, *, ignore_nonexistent: bool = False
    ) -> SonicDBGlobalConfig:
        """Read the file at `path`, else $SWSSD_DB_GLOBAL_CONFIG, else SONiC's default location,
        and every database_config.json it includes."""
        resolved = str(path or os.environ.get(GLOBAL_ENV_VAR) or GLOBAL_DEFAULT_PATH)
        raw = _read_json(resolved, "global database config")
        return cls.from_dict(raw, path=resolved, ignore_nonexistent=ignore_nonexistent)

    @classmethod
    def from_dict(
        cls, raw: object, path: str | None = None, *, ignore_nonexistent: bool = False
    ) -> SonicDBGlobalConfig:
        """Validate a parsed database_global.json and load its includes.

        A relative include is taken from the directory of `path` (the working directory without
        one), without resolving '..' first, as the C++ initializeGlobalConfig does; an absolute
        one is used as it is. With `ignore_nonexistent` (the C++ flag of that name) an include
        that does not exist is skipped, as when a container mounts only its own DPU's config.
        """
        config = _validate(cls, raw, path)
        config.path = path
        base = os.path.dirname(path or "")
        for index, entry in enumerate(config.includes):
            include = os.path.join(base, entry.include)
            if ignore_nonexistent and not os.path.exists(include):
                continue
            try:
                included = _read_json(include, "included database config")
            except ConfigError as exc:
                raise ConfigError(path, f"INCLUDES.{index}.include", f"{include}: {exc.problem}") from None
            try:
                config._configs[entry.key] = SonicDBConfig.from_dict(included, path=include)
            except ConfigError as exc:
                problem = f"{exc.problem} (included by {path or '<config>'} INCLUDES.{index})"
                raise ConfigError(exc.path, exc.field, problem) from None
        return config

    def namespaces(self) -> list[str]:
        """Every namespace, sorted, "" (the host's) included: the C++ getNamespaces()."""
        return sorted({key.namespace for key in self._configs})

    def keys(self) -> list[SonicDBKey]:
        """Every namespace and container with a database_config.json: the C++ getDbKeys()."""
        return list(self._configs)

    def config(self, namespace: str = "", container_name: str = "") -> SonicDBConfig:
        """The database_config.json of a namespace, or UnknownNamespaceError listing the known ones."""
        try:
            return self._configs[SonicDBKey(namespace, container_name)]
        except KeyError:
            known = [key.label() for key in sorted(self._configs, key=lambda k: (k.container_name, k.namespace))]
            raise UnknownNamespaceError(namespace, container_name, known, self.path) from None

    def database(self, name: str, namespace: str = "", container_name: str = "") -> DatabaseInfo:
        """The entry of database `name` in a namespace: the C++ getDbInfo()."""
        return self.config(namespace, container_name).database(name)

    def instance_of(self, name: str, namespace: str = "", container_name: str = "") -> RedisInstance:
        """The redis-server hosting database `name` in a namespace (getDbSock/Hostname/Port)."""
        return self.config(namespace, container_name).instance_of(name)

    def db_id(self, name: str, namespace: str = "", container_name: str = "") -> int:
        return self.database(name, namespace, container_name).id

    def separator(self, name: str, namespace: str = "", container_name: str = "") -> str:
        return self.database(name, namespace, container_name).separator

    def db_names(self, namespace: str = "", container_name: str = "") -> list[str]:
        """The databases of a namespace: the C++ getDbList()."""
        return self.config(namespace, container_name).db_names()


def resolve_config(
    config: SonicDBConfig | SonicDBGlobalConfig | str | os.PathLike[str] | None, namespace: str | None
) -> SonicDBConfig:
    """The database_config.json that places the databases of `namespace`.

    Without a namespace, `config` is a database_config.json as before (or a SonicDBGlobalConfig,
    whose default namespace is used); with one, it is a database_global.json (a path, None for
    $SWSSD_DB_GLOBAL_CONFIG or SONiC's default, or a loaded SonicDBGlobalConfig).
    """
    if isinstance(config, SonicDBGlobalConfig):
        return config.config(namespace or "")
    if not namespace:
        return config if isinstance(config, SonicDBConfig) else SonicDBConfig.load(config)
    if isinstance(config, SonicDBConfig):
        raise ConfigError(
            config.path,
            None,
            f"namespace '{namespace}' needs database_global.json, but this database_config.json describes "
            "one namespace: pass a SonicDBGlobalConfig or the path of database_global.json",
        )
    return SonicDBGlobalConfig.load(config).config(namespace)

def _read_json(path: str, what: str) -> object:
    """The parsed document at `path`; ConfigError naming the file when it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read {what}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(path, None, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


def _validate(model: type[M], raw: object, path: str | None) -> M:
    """`model` from `raw`; the first validation error as a ConfigError naming the file and the field."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise ConfigError(path, field or None, err["msg"]) from None
