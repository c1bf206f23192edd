"""Table naming shared by every channel kind, and the plain Table (hashes `TABLE<sep>key`)."""

from __future__ import annotations

import json

from ..fields import FieldValues, FieldValuesLike, as_field_values
from ..lua import TABLE_DUMP
from ..redis.connector import DBConnector
from ..schema import CHANNEL_SUFFIX, DEL_SET_SUFFIX, KEY_SET_SUFFIX, OP_QUEUE_SUFFIX, STATE_PREFIX

TableDump = dict[str, dict[str, str]]


def strip_special(name: str) -> str:
    """`name` up to its first '@' (C++ Table::stripSpecialSym)."""
    at = name.find("@")
    return name if at < 0 else name[:at]


class TableBase:
    """The Redis names the C++ TableBase, TableName_KeySet and TableName_KeyValueOpQueues derive."""

    def __init__(self, db: DBConnector, name: str) -> None:
        self.db = db
        self.name = name
        self.separator = db.separator

    def key_name(self, key: str) -> str:
        """`TABLE<sep>key`, or the bare table name for the empty key (as C++ getKeyName)."""
        return f"{self.name}{self.separator}{key}" if key else self.name

    @property
    def channel(self) -> str:
        """`<TABLE>_CHANNEL@<db id>`."""
        return f"{self.name}{CHANNEL_SUFFIX}@{self.db.db_id}"

    @property
    def key_set(self) -> str:
        return self.name + KEY_SET_SUFFIX

    @property
    def del_set(self) -> str:
        return self.name + DEL_SET_SUFFIX

    @property
    def state_prefix(self) -> str:
        return STATE_PREFIX

    @property
    def op_queue(self) -> str:
        return self.name + OP_QUEUE_SUFFIX

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, db={self.db.name or self.db.db_id})"


class Table(TableBase):
    """Direct access to a table's hashes, as the C++ swss::Table."""

    async def set(self, key: str, fvs: FieldValuesLike) -> None:
        """HSET all pairs in one command; nothing is sent for no pairs (as C++)."""
        pairs = as_field_values(fvs)
        if not pairs:
            return
        flat = [x for fv in pairs for x in fv]
        await self.db.redis.execute_command("HSET", self.key_name(key), *flat)

    async def get(self, key: str) -> FieldValues | None:
        """The entry's pairs, or None when the entry does not exist.

        As C++ Table::get, every field name is cut at its first '@' (`ports@` reads as `ports`):
        SONiC marks list-valued CONFIG_DB fields that way. ConfigDBConnector reads raw hashes.
        """
        flat = await self.db.redis.execute_command("HGETALL", self.key_name(key))
        if not flat:
            return None
        items = flat.items() if isinstance(flat, dict) else zip(flat[::2], flat[1::2])
        return [(strip_special(f), v) for f, v in items]

    async def delete(self, key: str) -> None:
        await self.db.redis.execute_command("DEL", self.key_name(key))

    async def hget(self, key: str, field: str) -> str | None:
        """The field's value, cut at its first '@' as C++ Table::hget does."""
        value = await self.db.redis.execute_command("HGET", self.key_name(key), field)
        return None if value is None else strip_special(value)

    async def hset(self, key: str, field: str, value: str) -> None:
        await self.db.redis.execute_command("HSET", self.key_name(key), field, value)

    async def hdel(self, key: str, field: str) -> None:
        await self.db.redis.execute_command("HDEL", self.key_name(key), field)

    async def keys(self) -> list[str]:
        """Entry keys, by `KEYS TABLE<sep>*` as the C++ getKeys."""
        prefix = f"{self.name}{self.separator}"
        found = await self.db.redis.execute_command("KEYS", f"{prefix}*")
        return [k[len(prefix):] for k in found]

    async def dump(self) -> TableDump:
        """Every entry with its fields.

        With ':' this is the C++ library's table_dump.lua (one atomic EVALSHA); that script
        hard-codes ':', so '|' tables are read with KEYS and pipelined HGETALLs instead.
        """
        if self.separator == ":":
            raw = await self.db.evalsha(TABLE_DUMP, [self.name], ["''"])
            plen = len(self.name) + 1
            return {
                k[plen:]: {f: v for f, v in fields.items() if f != "NULL"}
                for k, fields in json.loads(raw).items()
            }
        keys = await self.keys()
        pipe = self.db.redis.pipeline(transaction=False)
        for key in keys:
            pipe.hgetall(self.key_name(key))
        values = await pipe.execute()
        return {k: v for k, v in zip(keys, values) if v}
