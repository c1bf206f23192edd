"""DBInterface: named connections (one DBConnector per database name) and the swsssdk-era reads
that may block until the data appears, as sonic-swss-common's common/dbinterface.cpp.

Value rules kept from C++: get() of a field holding "None" is None, get_all() turns "None" values
into "", and a read that finds nothing (missing field, empty hash, no key matching) returns the
empty value, or with blocking=True waits for a keyspace event naming it: first subscribing to
`__key*__:*`, then up to PUB_SUB_MAXIMUM_DATA_WAIT seconds, each read bounded by
PUB_SUB_NOTIFICATION_TIMEOUT, before raising. A connection lost under a blockable call is made
again after CONNECT_RETRY_WAIT_TIME seconds and the call retried. connect() sets
notify-keyspace-events to KEA on a new connection, as C++ does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from ..channels.config_entries import cpp_order
from .arguments import check_string_map
from .connection import ConnectError, ConnectionLostError, RedisConnection, RedisError
from .dbconnector import DBConnector

log = logging.getLogger(__name__)

T = TypeVar("T")


class UnavailableDataError(RuntimeError):
    """Nothing found for a read; `data` is what a keyspace event must carry for it to be there."""

    def __init__(self, message: str, data: str) -> None:
        super().__init__(message)
        self.data = data


class DBInterface:
    """Connections by database name, and blockable reads over them."""

    BLOCKING_ATTEMPT_ERROR_THRESHOLD = 10
    BLOCKING_ATTEMPT_SUPPRESSION = BLOCKING_ATTEMPT_ERROR_THRESHOLD + 5
    CONNECT_RETRY_WAIT_TIME = 10
    DATA_RETRIEVAL_WAIT_TIME = 3
    PUB_SUB_NOTIFICATION_TIMEOUT = 10
    PUB_SUB_MAXIMUM_DATA_WAIT = 60.0
    KEYSPACE_PATTERN = "__key*__:*"
    KEYSPACE_EVENTS = "KEA"

    def __init__(self) -> None:
        self._clients: dict[str, DBConnector] = {}
        self._channels: dict[str, RedisConnection] = {}
        self._unix_socket_path = ""
        self._host = "127.0.0.1"
        self._port = 6379

    def set_redis_kwargs(self, unix_socket_path: str, host: str, port: int) -> None:
        """Where the next connect() goes: the unix socket when given, else host and port."""
        self._unix_socket_path, self._host, self._port = unix_socket_path, host, port

    def connect(self, dbId: int, dbName: str, retry: bool = True) -> None:
        """Connect `dbName` (database `dbId`) once; with `retry`, a connection whose setup fails
        is tried again every CONNECT_RETRY_WAIT_TIME seconds (one that cannot be opened raises)."""
        if not dbName:
            raise ValueError("dbName")
        while True:
            try:
                self._onetime_connect(dbId, dbName)
                return
            except ConnectError:
                raise
            except RedisError:
                if not retry:
                    raise
                log.warning("Connecting to DB '%s(%d)' failed, will retry in %d s",
                            dbName, dbId, self.CONNECT_RETRY_WAIT_TIME)
                self.close(dbName)
                time.sleep(self.CONNECT_RETRY_WAIT_TIME)

    def _onetime_connect(self, dbId: int, dbName: str) -> None:
        if dbName in self._clients:
            return
        if self._unix_socket_path:
            client = DBConnector(dbId, self._unix_socket_path, 0)
        else:
            client = DBConnector(dbId, self._host, self._port, 0)
        self._clients[dbName] = client
        client.config_set("notify-keyspace-events", self.KEYSPACE_EVENTS)

    def close(self, dbName: str | None = None) -> None:
        """Close one database's connection, or every one."""
        names = [dbName] if dbName is not None else list(self._clients)
        for name in names:
            client = self._clients.pop(name, None)
            if client is not None:
                client.close()

    def get_redis_client(self, dbName: str) -> DBConnector:
        """The connector of a connected database; IndexError (C++ out_of_range) otherwise."""
        try:
            return self._clients[dbName]
        except KeyError:
            raise IndexError("unordered_map::at") from None

    # -- plain calls ----------------------------------------------------------------------

    def exists(self, dbName: str, key: str) -> bool:
        return self.get_redis_client(dbName).exists(key)

    def hexists(self, dbName: str, hash: str, key: str) -> bool:
        return self.get_redis_client(dbName).hexists(hash, key)

    def publish(self, dbName: str, channel: str, message: str) -> int:
        return self.get_redis_client(dbName).publish(channel, message)

    def scan(self, db_name: str, cursor: int = 0, match: str = "", count: int = 10) -> tuple[int, tuple[str, ...]]:
        return self.get_redis_client(db_name).scan(cursor, match, count)

    def hmset(self, dbName: str, hash: str, values: Mapping[str, str]) -> None:
        """One HSET of every field, in std::map order."""
        check_string_map("DBInterface_hmset", 4, values)
        fields = sorted(values, key=cpp_order)
        self.get_redis_client(dbName).connection.command("HSET", hash, *(x for f in fields for x in (f, values[f])))

    def delete_all_by_pattern(self, dbName: str, pattern: str) -> None:
        """KEYS, then one DEL per key."""
        client = self.get_redis_client(dbName)
        for key in client.keys(pattern):
            client.delete(key)

    # -- blockable calls ------------------------------------------------------------------

    def delete(self, dbName: str, key: str, blocking: bool = False) -> int:
        return self._blockable(lambda: int(self.get_redis_client(dbName).delete(key) or 0), dbName, blocking, 0)

    def set(self, dbName: str, hash: str, key: str, value: str, blocking: bool = False) -> int:
        """HSET one field; 1, whatever Redis answered (as C++)."""
        def write() -> int:
            self.get_redis_client(dbName).hset(hash, key, value)
            return 1
        return self._blockable(write, dbName, blocking, 0)

    def get(self, dbName: str, hash: str, key: str, blocking: bool = False) -> str | None:
        """The field's value; None for "None", a missing field or hash."""
        def read() -> str | None:
            value = self.get_redis_client(dbName).hget(hash, key)
            if value is None:
                raise UnavailableDataError(
                    f"Key '{hash}' field '{key}' unavailable in database '{dbName}'", hash)
            return None if value == "None" else value
        return self._blockable(read, dbName, blocking, None)

    def get_all(self, dbName: str, hash: str, blocking: bool = False) -> dict[str, str]:
        """The hash, "None" values as ""; {} for a missing hash."""
        def read() -> dict[str, str]:
            entry = self.get_redis_client(dbName).hgetall(hash)
            if not entry:
                raise UnavailableDataError(f"Key '{{{hash}}}' unavailable in database '{{{dbName}}}'", hash)
            return {f: ("" if v == "None" else v) for f, v in entry.items()}
        return self._blockable(read, dbName, blocking, {})

    def keys(self, dbName: str, pattern: str = "*", blocking: bool = False) -> list[str]:
        """KEYS; [] when none match."""
        def read() -> list[str]:
            found = list(self.get_redis_client(dbName).keys(pattern))
            if not found:
                raise UnavailableDataError(f"DB '{{{dbName}}}' is empty with pattern '{pattern}'!", "hset")
            return found
        return self._blockable(read, dbName, blocking, [])

    def _blockable(self, call: Callable[[], T], dbName: str, blocking: bool, empty: T) -> T:
        attempts = 0
        while True:
            try:
                result = call()
                self._unsubscribe_keyspace_notification(dbName)
                return result
            except UnavailableDataError as exc:
                if not blocking:
                    return empty
                log.warning("%s", exc)
                if dbName not in self._channels:
                    self._subscribe_keyspace_notification(dbName)  # then read again: no race
                elif not self._unavailable_data_handler(dbName, exc.data):
                    self._unsubscribe_keyspace_notification(dbName)
                    raise
            except ConnectionLostError:
                attempts += 1
                message = f"DB access failure by [{dbName}]"
                if self.BLOCKING_ATTEMPT_ERROR_THRESHOLD < attempts < self.BLOCKING_ATTEMPT_SUPPRESSION:
                    log.error("%s", message)
                else:
                    log.warning("%s", message)
                self._connection_error_handler(dbName)

    def _subscribe_keyspace_notification(self, dbName: str) -> None:
        channel = self.get_redis_client(dbName).newConnector(self.PUB_SUB_NOTIFICATION_TIMEOUT * 1000).connection
        channel.command("PSUBSCRIBE", self.KEYSPACE_PATTERN)
        self._channels[dbName] = channel

    def _unsubscribe_keyspace_notification(self, dbName: str) -> None:
        channel = self._channels.pop(dbName, None)
        if channel is not None:
            channel.close()

    def _unavailable_data_handler(self, dbName: str, data: str) -> bool:
        """Wait for a keyspace or keyevent message whose payload is `data`; True once seen (after
        a settling pause), False when PUB_SUB_MAXIMUM_DATA_WAIT passes without it."""
        channel = self._channels[dbName]
        deadline = time.monotonic() + self.PUB_SUB_MAXIMUM_DATA_WAIT
        try:
            while time.monotonic() < deadline:
                reply = channel.next_reply(self.PUB_SUB_NOTIFICATION_TIMEOUT)
                if isinstance(reply, list) and len(reply) == 4 and reply[3] == data:
                    log.info("'%s' acquired via pub-sub dbName=%s. Unblocking...", data, dbName)
                    time.sleep(self.DATA_RETRIEVAL_WAIT_TIME)
                    return True
        except BaseException:
            # raised to the caller as in C++ (a lost channel, a signal); the channel is dropped so
            # the next blocking read subscribes anew rather than failing on a dead one for ever
            self._unsubscribe_keyspace_notification(dbName)
            raise
        log.warning("No notification for '%s' from '%s' received before timeout.", data, dbName)
        return False

    def _connection_error_handler(self, dbName: str) -> None:
        log.warning("Could not connect to Redis--waiting before trying again.")
        db_id = self.get_redis_client(dbName).getDbId()
        self.close(dbName)
        time.sleep(self.CONNECT_RETRY_WAIT_TIME)
        self.connect(db_id, dbName, True)
