"""SonicV2Connector: swsssdk's API over named connections, as the binding's class (C++
SonicV2Connector_Native and its %pythoncode): each database name an attribute, get_all() a dict,
keys() a list, set() of a non-str value stored as str(value); the value rules are DBInterface's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .arguments import check_string_map
from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .dbinterface import DBInterface


class SonicV2Connector:
    """SonicV2Connector(use_unix_socket_path=False, namespace='')."""

    def __init__(self, use_unix_socket_path: bool = False, namespace: str | None = "", **kwargs: Any) -> None:
        kwargs.pop("host", None)  # ignored, as in swsssdk
        if "decode_responses" in kwargs and kwargs.pop("decode_responses") is not True:
            raise ValueError("decode_responses must be True if specified, False is not supported")
        self._use_unix_socket_path = use_unix_socket_path
        self._netns = namespace or ""
        self._dbintf = DBInterface()
        for db_name in self.get_db_list():
            setattr(self, db_name, db_name)

    @property
    def namespace(self) -> str:
        return self._netns

    def getNamespace(self) -> str:
        return self._netns

    def connect(self, db_name: str, retry_on: bool = True) -> None:
        """Connect `db_name` over its unix socket or TCP, as database_config.json places it."""
        if self._use_unix_socket_path:
            self._dbintf.set_redis_kwargs(SonicDBConfig.getDbSock(db_name, self._netns), "", 0)
        else:
            host = SonicDBConfig.getDbHostname(db_name, self._netns)
            self._dbintf.set_redis_kwargs("", host, SonicDBConfig.getDbPort(db_name, self._netns))
        self._dbintf.connect(self.get_dbid(db_name), db_name, retry_on)

    def close(self, db_name: str | None = None) -> None:
        """Close one database's connection, or all of them."""
        self._dbintf.close(db_name)

    def get_db_list(self) -> tuple[str, ...]:
        return SonicDBConfig.getDbList(self._netns)

    def get_dbid(self, db_name: str) -> int:
        return SonicDBConfig.getDbId(db_name, self._netns)

    def get_db_separator(self, db_name: str) -> str:
        return SonicDBConfig.getSeparator(db_name, self._netns)

    def get_redis_client(self, db_name: str) -> DBConnector:
        return self._dbintf.get_redis_client(db_name)

    def publish(self, db_name: str, channel: str, message: str) -> int:
        return self._dbintf.publish(db_name, channel, message)

    def exists(self, db_name: str, key: str) -> bool:
        return self._dbintf.exists(db_name, key)

    def keys(self, db_name: str, pattern: str = "*", blocking: bool = False) -> list[str]:
        return self._dbintf.keys(db_name, pattern, blocking)

    def scan(self, db_name: str, cursor: int = 0, match: str = "", count: int = 10) -> tuple[int, tuple[str, ...]]:
        return self._dbintf.scan(db_name, cursor, match, count)

    def get(self, db_name: str, _hash: str, key: str, blocking: bool = False) -> str | None:
        return self._dbintf.get(db_name, _hash, key, blocking)

    def hexists(self, db_name: str, _hash: str, key: str) -> bool:
        return self._dbintf.hexists(db_name, _hash, key)

    def get_all(self, db_name: str, _hash: str, blocking: bool = False) -> dict[str, str]:
        return self._dbintf.get_all(db_name, _hash, blocking)

    def hmset(self, db_name: str, key: str, values: Mapping[str, str]) -> None:
        check_string_map("SonicV2Connector_Native_hmset", 4, values)
        self._dbintf.hmset(db_name, key, values)

    def set(self, db_name: str, _hash: str, key: str, value: object, blocking: bool = False) -> int:
        return self._dbintf.set(db_name, _hash, key, value if isinstance(value, str) else str(value), blocking)

    def delete(self, db_name: str, key: str, blocking: bool = False) -> int:
        return self._dbintf.delete(db_name, key, blocking)

    def delete_all_by_pattern(self, db_name: str, pattern: str) -> None:
        self._dbintf.delete_all_by_pattern(db_name, pattern)
