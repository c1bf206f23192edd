"""database_config.json: where each SONiC database lives (instance, id, separator)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError, InvalidSeparatorError, UnknownDatabaseError

DEFAULT_PATH = "/var/run/redis/sonic-db/database_config.json"
ENV_VAR = "SWSSD_DB_CONFIG"
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
        try:
            text = Path(resolved).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(resolved, None, f"cannot read database config: {exc.strerror or exc}") from None
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(resolved, None, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
        return cls.from_dict(raw, path=resolved)

    @classmethod
    def from_dict(cls, raw: object, path: str | None = None) -> SonicDBConfig:
        """Validate an already-parsed document; errors name the offending field."""
        try:
            config = cls.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise ConfigError(path, field or None, err["msg"]) from None
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
