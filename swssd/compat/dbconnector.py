"""DBConnector: one connection to one SONiC database, blocking, with the binding's methods.

Connected as the C++ constructors connect: by database name through SonicDBConfig (its unix socket,
or TCP with isTcpConn), or by id and an address; then SELECT of the database's id. A connection that
cannot be made, an error reply and a lost connection are RuntimeError naming the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..channels.config_entries import cpp_order
from .arguments import HMSET_REFUSED, check_strings, permissive, set_value
from .connection import RedisConnection, RedisError
from .containers import FieldValueDict, FieldValueMap, field_value_map
from .dbconfig import SonicDBConfig, SonicDBKey
from .pubsub import PubSub

#: keys per DEL when deleting a list of keys (the C++ KEY_DEL_CHUNK_SIZE)
KEY_DEL_CHUNK_SIZE = 128


def _copy_key(key: SonicDBKey) -> SonicDBKey:
    copy = SonicDBKey(key.netns)
    copy.containerName = key.containerName
    return copy


class DBConnector:
    """DBConnector(dbName, timeout_ms, isTcpConn=False[, netns or SonicDBKey]),
    DBConnector(dbId, hostname, port, timeout_ms), DBConnector(dbId, unixPath, timeout_ms),
    DBConnector(other) for a new connection to the same database, or DBConnector(dbId, other)
    for one to another database of the same server."""

    DEFAULT_UNIXSOCKET = "/var/run/redis/redis.sock"

    _dbId: int
    _dbName: str
    _key: SonicDBKey
    _timeout_ms: int
    _conn: RedisConnection

    def __init__(self, *args: Any) -> None:
        self._dbName = ""
        self._key = SonicDBKey()
        if len(args) == 1 and isinstance(args[0], DBConnector):
            other = args[0]
            self._dbId = other._dbId
            self._dbName = other._dbName
            self._key = _copy_key(other._key)
            self._conn = other._conn.reconnect(other._timeout_ms)
            self._timeout_ms = other._timeout_ms
        elif len(args) == 2 and isinstance(args[0], int) and isinstance(args[1], DBConnector):
            db_id, other = args
            self._dbId = db_id
            self._conn = other._conn.reconnect(other._timeout_ms)
            self._timeout_ms = other._timeout_ms
        elif args and isinstance(args[0], str):
            self._connect_by_name(*args)
        elif len(args) == 4 and isinstance(args[0], int):
            db_id, host, port, timeout_ms = args
            self._dbId, self._timeout_ms = db_id, timeout_ms
            self._conn = RedisConnection.tcp(host, port, timeout_ms)
        elif len(args) == 3 and isinstance(args[0], int):
            db_id, path, timeout_ms = args
            self._dbId, self._timeout_ms = db_id, timeout_ms
            self._conn = RedisConnection.unix(path, timeout_ms)
        else:
            raise TypeError(
                "DBConnector(dbName, timeout, isTcpConn=False[, netns]), DBConnector(dbId, hostname, port, timeout), "
                f"DBConnector(dbId, unixPath, timeout), DBConnector(other) or DBConnector(dbId, other), not {args!r}"
            )
        self._select()

    def _connect_by_name(
        self, dbName: str, timeout_ms: int, isTcpConn: bool = False, netns: str | SonicDBKey = ""
    ) -> None:
        key = _copy_key(netns) if isinstance(netns, SonicDBKey) else SonicDBKey(netns or "")
        self._dbId = SonicDBConfig.getDbId(dbName, key)
        self._dbName = dbName
        self._key = key
        self._timeout_ms = timeout_ms
        if isTcpConn:
            host, port = SonicDBConfig.getDbHostname(dbName, key), SonicDBConfig.getDbPort(dbName, key)
            self._conn = RedisConnection.tcp(host, port, timeout_ms)
        else:
            self._conn = RedisConnection.unix(SonicDBConfig.getDbSock(dbName, key), timeout_ms)

    def _select(self) -> None:
        try:
            self._conn.command("SELECT", self._dbId)
        except RedisError:
            self._conn.close()
            raise

    @staticmethod
    def select(db: DBConnector) -> None:
        """SELECT the connector's database again."""
        db._select()

    @property
    def connection(self) -> RedisConnection:
        """The socket and reader under this connector (what the layer's tables send through)."""
        return self._conn

    # -- identity -------------------------------------------------------------------------

    def getDbId(self) -> int:
        return self._dbId

    def getDbName(self) -> str:
        return self._dbName

    def getNamespace(self) -> str:
        return self._key.netns

    @property
    def namespace(self) -> str:
        return self._key.netns

    def getDBKey(self) -> SonicDBKey:
        return _copy_key(self._key)

    def newConnector(self, timeout: int) -> DBConnector:
        """A new connection to the same server and database."""
        other = DBConnector.__new__(DBConnector)
        other._dbId, other._dbName, other._key = self._dbId, self._dbName, _copy_key(self._key)
        other._timeout_ms = timeout
        other._conn = self._conn.reconnect(timeout)
        other._select()
        return other

    def pubsub(self) -> PubSub:
        """A redis-py-like PubSub on a connection of its own."""
        return PubSub(lambda: self.newConnector(0).connection)

    def close(self) -> None:
        """Close the socket (the binding closes it when the object is destroyed)."""
        self._conn.close()

    def setClientName(self, clientName: str) -> None:
        self._conn.command("CLIENT", "SETNAME", clientName)

    def getClientName(self) -> str:
        name = self._conn.command("CLIENT", "GETNAME")
        return name if isinstance(name, str) else ""

    # -- keys -----------------------------------------------------------------------------

    def delete(self, key: str | Sequence[str]) -> int | None:
        """DEL of one key (the count deleted), or of a list of keys in DELs of 128 (None)."""
        if isinstance(key, str):
            return int(self._conn.command("DEL", key))
        keys = list(key)
        chunks = [keys[i:i + KEY_DEL_CHUNK_SIZE] for i in range(0, len(keys), KEY_DEL_CHUNK_SIZE)]
        self._conn.pipeline([("DEL", *chunk) for chunk in chunks])
        return None

    def _del(self, key: str | Sequence[str]) -> int | None:
        """The name older SWIG gave `del`; programs still call it."""
        return self.delete(key)

    def exists(self, key: str) -> bool:
        check_strings("DBConnector_exists", key)
        if " " in key or "\t" in key:
            raise RuntimeError(f"EXISTS failed, invalid space or tab in single key: {key!r}")
        return int(self._conn.command("EXISTS", key)) > 0

    def keys(self, key: str) -> tuple[str, ...]:
        """KEYS with `key` as the pattern."""
        return tuple(self._conn.command("KEYS", key))

    def scan(self, cursor: int = 0, match: str = "", count: int = 10) -> tuple[int, tuple[str, ...]]:
        """One SCAN step: the next cursor and the keys it returned."""
        cur, keys = self._conn.command("SCAN", cursor, "MATCH", match, "COUNT", count)
        return int(cur), tuple(keys)

    def set(self, key: str, value: str | int) -> bool:
        """SET; an int value (a bool too) is stored as its number, as by the binding's int overload."""
        return bool(self._conn.command("SET", key, set_value(key, value)) == "OK")

    def get(self, key: str) -> str | None:
        check_strings("DBConnector_get", key)
        value = self._conn.command("GET", key)
        if value is not None and not isinstance(value, str):
            raise RuntimeError(f"GET failed on {key!r}: the key holds no string")
        return value

    def incr(self, key: str) -> int:
        return int(self._conn.command("INCR", key))

    def decr(self, key: str) -> int:
        return int(self._conn.command("DECR", key))

    def rpush(self, list: str, item: str) -> int:
        return int(self._conn.command("RPUSH", list, item))

    def blpop(self, list: str, timeout: int) -> str | None:
        """The popped item, or None after `timeout` seconds."""
        reply = self._conn.command("BLPOP", list, timeout)
        return None if reply is None else str(reply[1])

    # -- hashes ---------------------------------------------------------------------------

    def hset(self, key: str, field: str, value: str) -> None:
        check_strings("DBConnector_hset", key, field, value)
        self._conn.command("HSET", key, field, value)

    def hget(self, key: str, field: str) -> str | None:
        check_strings("DBConnector_hget", key, field)
        return self._conn.command("HGET", key, field)  # type: ignore[no-any-return]

    def hexists(self, key: str, field: str) -> bool:
        check_strings("DBConnector_hexists", key, field)
        return int(self._conn.command("HEXISTS", key, field)) > 0

    def hdel(self, key: str, field: str | Sequence[str]) -> int:
        """HDEL of one field or of several; the count deleted."""
        fields = [field] if isinstance(field, str) else list(field)
        return int(self._conn.command("HDEL", key, *fields))

    def hgetall(self, key: str) -> FieldValueMap | FieldValueDict:
        """The hash as the binding's FieldValueMap (a std::map proxy, not a dict), fields in byte order."""
        return field_value_map(self._conn.command("HGETALL", key))

    def hmset(self, multiHash: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        """One HSET per hash, pipelined. The binding has no conversion from a Python object to this
        argument (a C++ unordered_map), so it refuses every call: strict, so does the layer."""
        if not permissive():
            raise TypeError(HMSET_REFUSED)
        self._conn.pipeline([("HSET", key, *(x for fv in fvs for x in fv)) for key, fvs in multiHash.items() if fvs])

    # -- pub/sub and server ---------------------------------------------------------------

    def subscribe(self, pattern: str) -> None:
        self._conn.command("SUBSCRIBE", pattern)

    def psubscribe(self, pattern: str) -> None:
        self._conn.command("PSUBSCRIBE", pattern)

    def punsubscribe(self, pattern: str) -> None:
        self._conn.command("PUNSUBSCRIBE", pattern)

    def publish(self, channel: str, message: str) -> int:
        check_strings("DBConnector_publish", channel, message)
        return int(self._conn.command("PUBLISH", channel, message))

    def config_set(self, key: str, value: str) -> None:
        self._conn.command("CONFIG", "SET", key, value)

    def flushdb(self) -> bool:
        return bool(self._conn.command("FLUSHDB") == "OK")

    def getall(self) -> dict[str, dict[str, dict[str, str]]]:
        """Every hash whose key holds the database's separator: table -> row -> fields, as
        ConfigDBConnector.get_config reads them (KEYS *, then an HGETALL per key, all in one write)."""
        separator = SonicDBConfig.getSeparator(self)
        keys = [key for key in self._conn.command("KEYS", "*") if separator in key]
        rows: dict[str, dict[str, dict[str, str]]] = {}
        for key, flat in zip(keys, self._conn.pipeline([("HGETALL", key) for key in keys])):
            if flat:
                table, _, row = key.partition(separator)
                rows.setdefault(table, {})[row] = dict(field_value_map(flat))
        return {
            table: {row: rows[table][row] for row in sorted(rows[table], key=cpp_order)}
            for table in sorted(rows, key=cpp_order)
        }

    def __repr__(self) -> str:
        return f"DBConnector({self._dbName or self._dbId!r}, {self._conn.where})"
