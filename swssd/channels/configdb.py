"""ConfigDBConnector: CONFIG_DB's typed entries, read and written as swsscommon's Python
ConfigDBConnector (ConfigDBPipeConnector for get_config/mod_config) leaves them in Redis.

Typed values follow swsscommon's conventions: a field `name@` holds a comma-joined list (a Python
list here), any other value is stored as `str(value)`, an entry with no fields is stored as
`NULL: NULL` and the `NULL` field is dropped on read, tuple keys are joined with the separator.
Table names are upper-cased (ASCII only, as C++ toupper) in every entry, table and key access;
get_config returns table names as Redis holds them. Fields are written in std::map order (bytes),
so a new hash's fields sit in Redis in the same order as after the C++ call.

subscribe/unsubscribe/listen and the async iterator events() are in configdb_listener.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, cast

from ..redis.connector import DBConnector
from ..redis.dbconfig import SonicDBConfig, SonicDBGlobalConfig
from .config_entries import (
    CONFIG_DB_ID,
    CONFIG_DB_SEPARATOR,
    ConfigKey,
    RawEntry,
    TypedConfig,
    TypedEntry,
    ascii_upper,
    cpp_order,
    deserialize_key,
    hset_command,
    in_cpp_order,
    raw_to_typed,
    require_str,
    serialize_key,
    typed_config_to_raw,
    typed_to_raw,
)
from .configdb_listener import ConfigDBListening

#: SCAN's COUNT hint: the C++ pipe connector asks for 30, more means fewer round trips, same keys
SCAN_COUNT = 1000


class ConfigDBConnector(ConfigDBListening):
    """swsscommon's ConfigDBConnector over one DBConnector (CONFIG_DB, or any database: its
    separator separates table from key and the parts of tuple keys).

    set_entry's replace and mod_config run in one MULTI/EXEC each, as ConfigDBPipeConnector
    does; get_config reads SCAN batches, each batch's HGETALLs in a MULTI/EXEC with the next SCAN
    riding in the same round trip. get_table's HGETALLs and delete_table's DELs, which the C++
    sends one by one after KEYS, go in one MULTI/EXEC: fewer round trips, the same data.

    subscribe(), unsubscribe(), listen(), stop() and events() follow tables (ConfigDBListening).
    """

    typed_to_raw = staticmethod(typed_to_raw)
    raw_to_typed = staticmethod(raw_to_typed)

    def __init__(self, db: DBConnector) -> None:
        super().__init__()
        self.db = db
        self.separator = db.separator

    @classmethod
    async def connect(
        cls,
        db_name: str = "CONFIG_DB",
        config: SonicDBConfig | SonicDBGlobalConfig | str | os.PathLike[str] | None = None,
        *,
        namespace: str | None = None,
        **options: Any,
    ) -> ConfigDBConnector:
        """Connect as DBConnector.connect does (database_config.json, or database_global.json
        with a multi-ASIC `namespace`; `options`: username, password, ssl)."""
        return cls(await DBConnector.connect(db_name, config, namespace=namespace, **options))

    @classmethod
    async def from_url(
        cls,
        url: str,
        db_id: int = CONFIG_DB_ID,
        separator: str = CONFIG_DB_SEPARATOR,
        name: str = "CONFIG_DB",
    ) -> ConfigDBConnector:
        """Connect by URL, to CONFIG_DB's id and separator unless told otherwise."""
        return cls(await DBConnector.from_url(url, db_id=db_id, separator=separator, name=name))

    # -- keys -----------------------------------------------------------------------------

    def serialize_key(self, key: ConfigKey) -> str:
        """`key` as it appears after `TABLE<sep>` in Redis, with this database's separator."""
        return serialize_key(key, self.separator)

    def deserialize_key(self, key: str) -> ConfigKey:
        """A Redis row key back to a string or tuple, with this database's separator."""
        return deserialize_key(key, self.separator)

    def _typed_entry(self, raw: Mapping[str, str]) -> TypedEntry:
        """A hash typed as swsscommon types it: fields in std::map order, so of `f` and `f@`
        the list wins, as it does there."""
        return raw_to_typed(in_cpp_order(raw))

    def _typed_rows(self, rows: Mapping[str, Mapping[str, str]]) -> dict[ConfigKey, TypedEntry]:
        """Rows (key after `TABLE<sep>` -> hash) as swsscommon's get_table returns them: in
        std::map order of the row strings, keys deserialized, entries typed."""
        return {self.deserialize_key(row): self._typed_entry(rows[row]) for row in sorted(rows, key=cpp_order)}

    def _hash(self, table: str, key: ConfigKey) -> str:
        return f"{ascii_upper(table)}{self.separator}{self.serialize_key(key)}"

    def _pattern(self, table: str) -> str:
        """The KEYS/SCAN pattern of a table; glob characters in `table` stay globs, as in C++."""
        return f"{ascii_upper(table)}{self.separator}*"

    # -- entries --------------------------------------------------------------------------

    async def set_entry(self, table: str, key: ConfigKey, data: Mapping[str, Any] | None) -> None:
        """Replace the entry with `data` (fields not in it are removed); None deletes it,
        {} leaves only `NULL: NULL`. HGETALL, then HSET and one HDEL per dropped field in
        MULTI/EXEC, as ConfigDBPipeConnector.set_entry."""
        hash_key = self._hash(table, key)
        raw = typed_to_raw(data)
        if not raw:
            await self.db.redis.delete(hash_key)
            return
        hset = hset_command(hash_key, raw)
        original = cast(RawEntry, await self.db.redis.hgetall(hash_key))  # decode_responses: str
        async with self.db.redis.pipeline(transaction=True) as pipe:
            pipe.execute_command(*hset)
            for field in sorted(original, key=cpp_order):
                if field not in raw:
                    pipe.hdel(hash_key, field)
            await pipe.execute()

    async def mod_entry(self, table: str, key: ConfigKey, data: Mapping[str, Any] | None) -> None:
        """Merge `data` into the entry (other fields stay); None deletes it, {} adds `NULL: NULL`."""
        hash_key = self._hash(table, key)
        raw = typed_to_raw(data)
        if not raw:
            await self.db.redis.delete(hash_key)
            return
        await self.db.redis.execute_command(*hset_command(hash_key, raw))

    async def get_entry(self, table: str, key: ConfigKey) -> TypedEntry:
        """The typed entry; {} when it does not exist."""
        return self._typed_entry(cast(RawEntry, await self.db.redis.hgetall(self._hash(table, key))))

    async def get_keys(self, table: str, split: bool = True) -> list[ConfigKey]:
        """The table's keys (KEYS, in Redis's order), deserialized; with split=False the whole
        Redis key is deserialized, table name included, as swsscommon does."""
        keys = cast(list[str], await self.db.redis.keys(self._pattern(table)))
        if split:
            keys = [_row(key, self.separator) or "" for key in keys]
        return [self.deserialize_key(key) for key in keys]

    async def get_table(self, table: str) -> dict[ConfigKey, TypedEntry]:
        """Every entry of the table: KEYS, then all HGETALLs in one MULTI/EXEC."""
        keys = cast(list[str], await self.db.redis.keys(self._pattern(table)))
        if not keys:
            return {}
        async with self.db.redis.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.hgetall(key)
            entries = await pipe.execute()
        rows: dict[str, RawEntry] = {}
        for key, entry in zip(keys, entries):
            row = _row(key, self.separator)
            if row is not None:
                rows[row] = entry
        return self._typed_rows(rows)

    async def delete_table(self, table: str) -> None:
        """Delete every entry of the table: KEYS, then one DEL each in one MULTI/EXEC."""
        keys = cast(list[str], await self.db.redis.keys(self._pattern(table)))
        if not keys:
            return
        async with self.db.redis.pipeline(transaction=True) as pipe:
            for key in keys:
                pipe.delete(key)
            await pipe.execute()

    # -- whole configuration --------------------------------------------------------------

    async def mod_config(
        self, data: Mapping[str, Mapping[ConfigKey, Mapping[str, Any] | None] | None]
    ) -> None:
        """Merge many tables in one MULTI/EXEC, as ConfigDBPipeConnector.mod_config.

        A table given as {} is left alone, None deletes the table (its keys found by SCAN
        before the transaction, so entries this call creates survive, as in C++); per entry
        None deletes it and any other value is merged as mod_entry merges it. Tables run in
        std::map order of their names, entries in that of their keys, as the C++ receives them.
        """
        for table_name in data:
            require_str("table name", table_name)
        raw_config = typed_config_to_raw(data, self.serialize_key)

        commands: list[tuple[str, ...]] = []
        for table_name in sorted(raw_config, key=cpp_order):
            rows = raw_config[table_name]
            if not rows:
                commands += [("DEL", key) for key in await self._scan(self._pattern(table_name))]
                continue
            for raw_key in sorted(rows, key=cpp_order):
                hash_key = f"{ascii_upper(table_name)}{self.separator}{raw_key}"
                raw = rows[raw_key]
                commands.append(hset_command(hash_key, raw) if raw else ("DEL", hash_key))
        if not commands:
            return
        async with self.db.redis.pipeline(transaction=True) as pipe:
            for command in commands:
                pipe.execute_command(*command)
            await pipe.execute()

    async def _scan(self, pattern: str) -> list[str]:
        """Every key matching `pattern`, by SCAN (a key may come twice, as SCAN allows)."""
        found: list[str] = []
        cursor = 0
        while True:
            cursor, keys = await self.db.redis.scan(cursor, match=pattern, count=SCAN_COUNT)
            found += cast(list[str], keys)
            if cursor == 0:
                return found

    async def get_config(self) -> TypedConfig:
        """Every table of the database: `{table: {key: entry}}`; Redis keys without the
        separator are not config entries and are skipped.

        SCAN batches as ConfigDBPipeConnector.get_config, each batch's HGETALLs in one
        MULTI/EXEC with the next SCAN queued behind them: one round trip per batch.
        """
        raw_config: dict[str, dict[str, RawEntry]] = {}
        cursor, keys = cast(tuple[int, list[str]], await self.db.redis.scan(0, match="*", count=SCAN_COUNT))
        while True:
            wanted = [key for key in keys if self.separator in key]
            if not wanted and cursor == 0:
                break
            async with self.db.redis.pipeline(transaction=True) as pipe:
                for key in wanted:
                    pipe.hgetall(key)
                if cursor != 0:
                    pipe.scan(cursor, match="*", count=SCAN_COUNT)
                replies = await pipe.execute()
            for key, entry in zip(wanted, replies):
                table_name, _, row = key.partition(self.separator)
                merged = raw_config.setdefault(table_name, {}).setdefault(row, {})
                for field, value in entry.items():
                    merged.setdefault(field, value)  # std::map::emplace: a repeated key adds nothing
            if cursor == 0:
                break
            cursor, keys = replies[-1]

        return {table: self._typed_rows(raw_config[table]) for table in sorted(raw_config, key=cpp_order)}

    # -- lifetime -------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop listen(), if it runs, and close the underlying DBConnector."""
        self.stop()
        await self.db.close()

    async def __aenter__(self) -> ConfigDBConnector:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"ConfigDBConnector({self.db!r})"


def _row(key: str, separator: str) -> str | None:
    """What follows the first separator of a Redis key, or None without one."""
    pos = key.find(separator)
    return key[pos + 1:] if pos >= 0 else None
