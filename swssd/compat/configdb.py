"""ConfigDBConnector and ConfigDBPipeConnector: CONFIG_DB's typed entries, as the binding's classes
(the C++ ConfigDBConnector_Native and ConfigDBPipeConnector_Native under their %pythoncode).

The typed conversions, key (de)serialization, upper-casing and std::map ordering are
swssd.channels.config_entries', shared with the asyncio ConfigDBConnector. Redis sees the C++
library's commands in its order; calls that C++ makes one round trip at a time (get_table's
HGETALLs, set_entry's HDELs, mod_config's writes, a transaction's queued commands) are written
together here and their replies read after, which changes nothing in what Redis holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..channels.config_entries import (
    ConfigKey,
    TypedEntry,
    ascii_upper,
    cpp_order,
    deserialize_key,
    hset_command,
    raw_to_typed,
    require_str,
    serialize_key,
    typed_config_to_raw,
    typed_to_raw,
)
from .connection import RedisError
from .dbconnector import DBConnector
from .pubsub import PubSub
from .sonicv2connector import SonicV2Connector

RawEntry = dict[str, str]
RawTable = dict[str, RawEntry]
RawConfig = dict[str, RawTable]
Handler = Callable[[str, Any, Any], object]

#: SCAN's COUNT in ConfigDBPipeConnector (the C++ REDIS_SCAN_BATCH_SIZE)
REDIS_SCAN_BATCH_SIZE = 30


def _sorted(mapping: Mapping[str, Any]) -> list[str]:
    return sorted(mapping, key=cpp_order)


def _row_map(flat: list[str]) -> RawEntry:
    """HGETALL's flat reply as a std::map."""
    pairs = dict(zip(flat[::2], flat[1::2]))
    return {f: pairs[f] for f in _sorted(pairs)}


def _check_types(data: RawConfig) -> None:
    """TypeError before anything is written, as the binding's conversion to a C++ map refuses
    the whole call for one name that is not a str."""
    for table_name, rows in data.items():
        require_str("table name", table_name)
        for key, entry in rows.items():
            require_str("key", key)
            for field, value in entry.items():
                require_str("field name", field)
                require_str("value", value)


class ConfigDBConnector(SonicV2Connector):
    """ConfigDBConnector(use_unix_socket_path=False, namespace=''); connect() to CONFIG_DB, or
    db_connect() to another database (its separator then separates table, key and key parts)."""

    INIT_INDICATOR = "CONFIG_DB_INITIALIZED"

    def __init__(self, use_unix_socket_path: bool = False, namespace: str | None = "", **kwargs: Any) -> None:
        if "decode_responses" in kwargs and kwargs.pop("decode_responses") is not True:
            raise ValueError("decode_responses must be True if specified, False is not supported")
        super().__init__(use_unix_socket_path=use_unix_socket_path, namespace=namespace or "")
        self._db_name = ""
        self._table_name_separator = "|"
        self._key_separator = "|"
        # As the binding: on an instance these use its separator, on the class they are static.
        self.serialize_key = self._serialize_key  # type: ignore[assignment]
        self.deserialize_key = self._deserialize_key  # type: ignore[assignment]
        self.handlers: dict[str, Handler] = {}
        self.fire_init_data: dict[str, bool] = {}
        self.pubsub: PubSub | None = None

    def __enter__(self) -> ConfigDBConnector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def KEY_SEPARATOR(self) -> str:
        return self._key_separator

    @property
    def TABLE_NAME_SEPARATOR(self) -> str:
        return self._table_name_separator

    @property
    def db_name(self) -> str:
        return self._db_name

    def getKeySeparator(self) -> str:
        return self._key_separator

    def getTableNameSeparator(self) -> str:
        return self._table_name_separator

    def getDbName(self) -> str:
        return self._db_name

    # -- connecting -----------------------------------------------------------------------

    def db_connect(self, db_name: str, wait_for_init: bool = False, retry_on: bool = False) -> None:
        """Connect `db_name` and use its separator; with wait_for_init, return once
        CONFIG_DB_INITIALIZED holds a non-empty value."""
        self._db_name = db_name
        self._key_separator = self._table_name_separator = self.get_db_separator(db_name)
        SonicV2Connector.connect(self, db_name, retry_on)
        if wait_for_init:
            self._wait_for_init()

    def connect(self, wait_for_init: bool = True, retry_on: bool = False) -> None:  # type: ignore[override]
        """db_connect('CONFIG_DB', ...)."""
        self.db_connect("CONFIG_DB", wait_for_init, retry_on)

    def _wait_for_init(self) -> None:
        """Follow the indicator's keyspace events until it is set. C++ subscribes only after its
        first GET, so a flag set in between is missed; here the GET is repeated once subscribed."""
        client = self.get_redis_client(self._db_name)
        if client.get(self.INIT_INDICATOR):
            return
        pattern = f"__keyspace@{self.get_dbid(self._db_name)}__:{self.INIT_INDICATOR}"
        pubsub = client.pubsub()
        pubsub.psubscribe(pattern)
        initialized = client.get(self.INIT_INDICATOR)
        while not initialized:
            item = pubsub.listen_message()
            if item["type"] == "pmessage" and item["channel"].split(":", 1)[1:] == [self.INIT_INDICATOR]:
                initialized = client.get(self.INIT_INDICATOR)
        pubsub.punsubscribe(pattern)

    def _client(self) -> DBConnector:
        return self.get_redis_client(self._db_name)

    # -- keys and typed values ------------------------------------------------------------

    raw_to_typed = staticmethod(raw_to_typed)
    typed_to_raw = staticmethod(typed_to_raw)
    serialize_key = staticmethod(serialize_key)
    deserialize_key = staticmethod(deserialize_key)

    def _serialize_key(self, key: ConfigKey) -> str:
        return serialize_key(key, self.KEY_SEPARATOR)

    def _deserialize_key(self, key: str) -> ConfigKey:
        return deserialize_key(key, self.KEY_SEPARATOR)

    # -- subscriptions --------------------------------------------------------------------

    def subscribe(self, table: str, handler: Handler, fire_init_data: bool = False) -> None:
        self.handlers[table] = handler
        self.fire_init_data[table] = fire_init_data

    def unsubscribe(self, table: str) -> None:
        self.handlers.pop(table, None)

    def __fire(self, table: str, key: Any, data: Any) -> None:
        handler = self.handlers.get(table)
        if handler is not None:
            handler(table, key, data)

    def listen(self, init_data_handler: Callable[[dict[str, Any]], object] | None = None) -> None:
        """Follow the subscribed tables for ever: existing entries first (through the handlers of
        fire_init_data tables, the others to init_data_handler), then each change, except a key's
        first change when it equals its initial entry. A signal handler that raises ends it."""
        client = self._client()
        self.pubsub = client.pubsub()
        self.pubsub.psubscribe(f"__keyspace@{self.get_dbid(self._db_name)}__:*")
        init_data = {
            table: self.get_table(table)
            for table in self.handlers
            if init_data_handler or self.fire_init_data[table]
        }
        not_fired: dict[str, Any] = {}
        for table, rows in init_data.items():
            if self.fire_init_data[table]:
                for row, entry in rows.items():
                    self.__fire(table, row, entry)
            else:
                not_fired[table] = rows
        if init_data_handler:
            init_data_handler(not_fired)
        while True:
            item = self.pubsub.listen_message(interrupt_on_signal=True)
            if item.get("type") != "pmessage":
                continue
            key = item["channel"].split(":", 1)[1]
            table, sep, row = key.partition(self.TABLE_NAME_SEPARATOR)
            if not sep or table not in self.handlers:
                continue
            data = None if item["data"] == "del" else raw_to_typed(dict(client.hgetall(key)))
            if table in init_data and row in init_data[table]:
                cache_hit = init_data[table][row] == data
                del init_data[table][row]
                if not init_data[table]:
                    del init_data[table]
                if cache_hit:
                    continue
            self.__fire(table, row, data)

    # -- typed entries --------------------------------------------------------------------

    def set_entry(self, table: str, key: ConfigKey, data: Mapping[str, Any] | None) -> None:
        """Replace the entry (fields not in `data` are removed); None deletes it."""
        self._set_entry_raw(table, self.serialize_key(key), typed_to_raw(data))

    def mod_entry(self, table: str, key: ConfigKey, data: Mapping[str, Any] | None) -> None:
        """Add or change the given fields; None deletes the entry."""
        self._mod_entry_raw(table, self.serialize_key(key), typed_to_raw(data))

    def get_entry(self, table: str, key: ConfigKey) -> TypedEntry:
        """The typed entry; {} when it does not exist."""
        return raw_to_typed(self._get_entry_raw(table, self.serialize_key(key)))

    def get_keys(self, table: str, split: bool = True) -> list[ConfigKey]:
        """The table's keys, deserialized (with split=False, whole Redis keys)."""
        pattern = f"{ascii_upper(table)}{self._table_name_separator}*"
        rows = []
        for key in self._client().keys(pattern):
            rows.append(key.partition(self._table_name_separator)[2] if split else key)
        return [self.deserialize_key(row) for row in rows]

    def get_table(self, table: str) -> dict[ConfigKey, TypedEntry]:
        """{key: typed entry}, keys deserialized, in std::map order of the Redis rows."""
        return {self.deserialize_key(row): raw_to_typed(entry) for row, entry in self._get_table_raw(table).items()}

    def delete_table(self, table: str) -> None:
        """KEYS of the table, then a DEL of each."""
        client = self._client()
        keys = client.keys(f"{ascii_upper(table)}{self._table_name_separator}*")
        client.connection.pipeline([("DEL", key) for key in keys])

    def mod_config(self, data: Mapping[str, Any]) -> None:
        """Write several tables: a table of {} is left alone, None deletes the table, an entry of
        None is deleted, other entries are modified as mod_entry does."""
        raw_config: RawConfig = typed_config_to_raw(data, self.serialize_key)
        _check_types(raw_config)
        self._mod_config_raw(raw_config)

    def get_config(self) -> dict[str, dict[ConfigKey, TypedEntry]]:
        """Every table of the database: {table: {key: typed entry}}."""
        result: dict[str, dict[ConfigKey, TypedEntry]] = {}
        for table_name, rows in self._get_config_raw().items():
            for row, entry in rows.items():
                result.setdefault(table_name, {})[self.deserialize_key(row)] = raw_to_typed(entry)
        return result

    # -- raw operations (the C++ ConfigDBConnector_Native) ---------------------------------

    def _hash(self, table: str, key: str) -> str:
        return f"{ascii_upper(table)}{self._table_name_separator}{key}"

    def _get_entry_raw(self, table: str, key: str) -> RawEntry:
        return _row_map(self._client().connection.command("HGETALL", self._hash(table, key)))

    def _set_entry_commands(self, table: str, key: str, data: RawEntry) -> list[tuple[object, ...]]:
        """DEL, or HSET then an HDEL per field the entry has and `data` lacks (read first)."""
        hash_key = self._hash(table, key)
        if not data:
            return [("DEL", hash_key)]
        original = self._get_entry_raw(table, key)
        return [hset_command(hash_key, data), *(("HDEL", hash_key, f) for f in original if f not in data)]

    def _set_entry_raw(self, table: str, key: str, data: RawEntry) -> None:
        self._client().connection.pipeline(self._set_entry_commands(table, key, data))

    def _mod_entry_command(self, table: str, key: str, data: RawEntry) -> tuple[object, ...]:
        hash_key = self._hash(table, key)
        return hset_command(hash_key, data) if data else ("DEL", hash_key)

    def _mod_entry_raw(self, table: str, key: str, data: RawEntry) -> None:
        self._client().connection.command(*self._mod_entry_command(table, key, data))

    def _get_table_raw(self, table: str) -> RawTable:
        conn = self._client().connection
        keys = conn.command("KEYS", f"{ascii_upper(table)}{self._table_name_separator}*")
        entries = conn.pipeline([("HGETALL", key) for key in keys])
        rows: RawTable = {}
        for key, flat in zip(keys, entries):
            _, sep, row = key.partition(self._table_name_separator)
            if sep:
                rows[row] = _row_map(flat)
        return {row: rows[row] for row in _sorted(rows)}

    def _mod_config_raw(self, data: RawConfig) -> None:
        """Tables in std::map order: an empty one deleted as delete_table does, else each entry
        modified; writes between two KEYS go out together."""
        conn = self._client().connection
        pending: list[tuple[object, ...]] = []
        for table_name in _sorted(data):
            table_data = data[table_name]
            if not table_data:
                conn.pipeline(pending)
                pending = []
                self.delete_table(table_name)
                continue
            pending += [self._mod_entry_command(table_name, key, table_data[key]) for key in _sorted(table_data)]
        conn.pipeline(pending)

    def _get_config_raw(self) -> RawConfig:
        return self._client().getall()


class ConfigDBPipeConnector(ConfigDBConnector):
    """ConfigDBConnector whose set_entry and mod_config run in one MULTI/EXEC each and whose
    get_config reads by SCAN, each batch's HGETALLs in a MULTI/EXEC (empty entries kept)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)

    def _transaction(self, commands: list[tuple[object, ...]]) -> list[Any]:
        """MULTI, the commands, EXEC: EXEC's replies; RuntimeError for any error among them."""
        replies = self._client().connection.pipeline([("MULTI",), *commands, ("EXEC",)])
        results: list[Any] = replies[-1] or []
        for result, command in zip(results, commands):
            if isinstance(result, Exception):
                raise RedisError(f"{command[0]} failed in a transaction: {result}")
        return results

    def _scan(self, pattern: str) -> list[str]:
        """Every key SCAN returns for `pattern`, COUNT 30 a step as in C++."""
        client = self._client()
        found: list[str] = []
        cursor = -1
        while cursor != 0:
            cursor, keys = client.scan(max(cursor, 0), pattern, REDIS_SCAN_BATCH_SIZE)
            found += keys
        return found

    def _set_entry_raw(self, table: str, key: str, data: RawEntry) -> None:
        self._transaction(self._set_entry_commands(table, key, data))

    def _mod_config_raw(self, data: RawConfig) -> None:
        """One transaction; the keys of tables to delete are SCANned first (C++ scans on another
        connection while its transaction is open: the same keys, the same DELs)."""
        commands: list[tuple[object, ...]] = []
        for table_name in _sorted(data):
            table_data = data[table_name]
            if not table_data:
                pattern = f"{ascii_upper(table_name)}{self._table_name_separator}*"
                commands += [("DEL", key) for key in self._scan(pattern)]
                continue
            commands += [self._mod_entry_command(table_name, key, table_data[key]) for key in _sorted(table_data)]
        self._transaction(commands)

    def _get_config_raw(self) -> RawConfig:
        client = self._client()
        data: RawConfig = {}
        cursor = -1
        while cursor != 0:
            cursor, keys = client.scan(max(cursor, 0), "*", REDIS_SCAN_BATCH_SIZE)
            rows = [key for key in keys if self._table_name_separator in key]
            for key, flat in zip(rows, self._transaction([("HGETALL", key) for key in rows])):
                table_name, _, row = key.partition(self._table_name_separator)
                data.setdefault(table_name, {})[row] = _row_map(flat)
        return {t: {row: data[t][row] for row in _sorted(data[t])} for t in _sorted(data)}
