"""Table: direct, blocking access to a table's hashes (`TABLE<sep>key`), as the C++ swss::Table.

The separator is the database's, from SonicDBConfig (by the connector's name, else its id). As in
C++, a Table writes through a RedisPipeline, its own connection unless one is given, get() and
hget() cut field names and hget's value at the first '@' (SONiC's `ports@` list marker), and set()
with no pairs sends nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..channels.table import strip_special
from ..schema import CHANNEL_SUFFIX
from .arguments import check_strings, set_pairs
from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .redis_pipeline import RedisPipeline

#: the C++ DEFAULT_DB_TTL: no expiry
DEFAULT_DB_TTL = -1


class TableBase:
    """A table's name, separator and the key and channel names derived from them."""

    def __init__(self, tableName: str, tableSeparator: str) -> None:
        if tableSeparator not in (":", "|") or not tableSeparator:
            raise ValueError(f"Invalid table name separator {tableSeparator!r}: SONiC accepts ':' or '|'")
        self._tableName = tableName
        self._separator = tableSeparator

    def getTableName(self) -> str:
        return self._tableName

    def getKeyName(self, key: str) -> str:
        """`TABLE<sep>key`, or the bare table name for the empty key."""
        return f"{self._tableName}{self._separator}{key}" if key else self._tableName

    def getTableNameSeparator(self) -> str:
        return self._separator

    def getChannelName(self, tag: str | int | None = None) -> str:
        """`TABLE_CHANNEL`, or `TABLE_CHANNEL@tag`."""
        channel = self._tableName + CHANNEL_SUFFIX
        return channel if tag is None else f"{channel}@{tag}"


class Table(TableBase):
    """Table(db, tableName), or Table(pipeline, tableName, buffered) on a RedisPipeline."""

    def __init__(self, db: DBConnector | RedisPipeline, tableName: str, buffered: bool = False) -> None:
        pipe = db if isinstance(db, RedisPipeline) else RedisPipeline(db, 1)
        super().__init__(tableName, SonicDBConfig.getSeparator(pipe.getDBConnector()))
        self._pipe = pipe
        self._buffered = buffered and isinstance(db, RedisPipeline)

    def set(
        self, key: str, values: Iterable[tuple[str, str]], op: str = "", prefix: str = "", ttl: int = DEFAULT_DB_TTL
    ) -> None:
        """HSET every pair in one command (then EXPIRE with a ttl); nothing for no pairs."""
        flat = set_pairs("Table_set", key, values, op, prefix)
        if not flat:
            return
        name = self.getKeyName(key)
        if ttl == DEFAULT_DB_TTL:
            self._pipe.write(("HSET", name, *flat), self._buffered)
        else:
            self._pipe.write(("HSET", name, *flat), True)
            self._pipe.write(("EXPIRE", name, ttl), self._buffered)

    def get(self, key: str) -> list[Any]:
        """[True, the entry's pairs] or [False, ()] when it does not exist: a list, as the binding
        returns a bool with an output argument."""
        flat = self._pipe.read("HGETALL", f"{self._tableName}{self._separator}{key}" if key else self._tableName)
        if not flat:
            return [False, ()]
        fields = flat[::2]
        if "@" in "".join(fields):  # rare: only then a call per field
            fields = [strip_special(field) for field in fields]
        return [True, tuple(zip(fields, flat[1::2]))]

    def get_many(self, keys: list[str]) -> list[tuple[tuple[str, str], ...]]:
        """The pairs of each entry (() for one that does not exist), one HGETALL each in one write."""
        self._pipe.flush()
        replies = self._pipe.connection.pipeline([("HGETALL", self.getKeyName(key)) for key in keys])
        out = []
        for flat in replies:
            fields = flat[::2]
            if "@" in "".join(fields):
                fields = [strip_special(field) for field in fields]
            out.append(tuple(zip(fields, flat[1::2])))
        return out

    def hget(self, key: str, field: str) -> list[Any]:
        """[True, value] or [False, ""] when the entry or field does not exist."""
        check_strings("Table_hget", key, field)
        value = self._pipe.read("HGET", self.getKeyName(key), field)
        if value is None:
            return [False, ""]
        return [True, strip_special(value)]

    def hset(self, key: str, field: str, value: str, op: str = "", prefix: str = "") -> None:
        check_strings("Table_hset", key, field, value)
        self._pipe.write(("HSET", self.getKeyName(key), field, value), self._buffered)

    def delete(self, key: str, op: str = "", prefix: str = "") -> None:
        """DEL of the entry (on a buffered pipeline it waits there, as in C++)."""
        self._pipe.write(("DEL", self.getKeyName(key)), True)

    def _del(self, key: str, op: str = "", prefix: str = "") -> None:
        """The name older SWIG gave `del`; programs still call it."""
        self.delete(key, op, prefix)

    def hdel(self, key: str, field: str, op: str = "", prefix: str = "") -> None:
        self._pipe.write(("HDEL", self.getKeyName(key), field), True)

    def ttl(self, key: str) -> list[Any]:
        """[True, seconds left] as Redis's TTL reports them (-1 no expiry, -2 no key)."""
        return [True, int(self._pipe.read("TTL", self.getKeyName(key)))]

    def getKeys(self) -> tuple[str, ...]:
        """The entry keys, by `KEYS TABLE<sep>*`."""
        start = len(self._tableName) + 1
        return tuple(k[start:] for k in self._pipe.read("KEYS", f"{self._tableName}{self._separator}*"))

    def getContent(self) -> tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]:
        """Every entry as (key, "", pairs)."""
        return tuple((key, "", self.get(key)[1]) for key in self.getKeys())

    def setBuffered(self, buffered: bool) -> None:
        self._buffered = buffered

    def flush(self) -> None:
        self._pipe.flush()


def transpose_pops(m: tuple[tuple[str, ...], ...] | list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """pops()'s (keys, ops, fvss) as a list of (key, op, fvs), as the binding's helper."""
    return [tuple(m[j][i] for j in range(len(m))) for i in range(len(m[0]))]
