"""A whole table read with SCAN, what the daemon and the tools use instead of KEYS.

`Table.keys()` and `Table.dump()` keep the C++ library's KEYS (getKeys, table_dump.lua). KEYS
blocks Redis for the whole keyspace and needs the `+keys` ACL permission, which lists every key
name; SCAN walks the keyspace in chunks. Its MATCH pattern is the table's prefix with glob
characters escaped, so a table named `*` reads `*:x` and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from ..fields import FieldValues
from .connector import DBConnector

#: Keys asked of each SCAN, and HGETALLs sent in one pipeline.
SCAN_COUNT = 512


@dataclass
class TableContents:
    """What read_table found: entries (without the placeholder field "NULL") and the names of
    keys under the table's prefix that are not hashes."""

    entries: dict[str, FieldValues] = field(default_factory=dict)
    not_hashes: list[str] = field(default_factory=list)


def glob_escape(text: str) -> str:
    """`text` as a literal inside a Redis glob pattern."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def table_pattern(table: str, separator: str) -> str:
    """The SCAN MATCH pattern of the table's entry hashes: `TABLE<sep>*`, the name escaped."""
    return glob_escape(table + separator) + "*"


async def scan_table(db: DBConnector, table: str, count: int = SCAN_COUNT) -> AsyncIterator[TableContents]:
    """`table`'s entries a SCAN step at a time (pipelined HGETALLs), so a caller can bound what it
    holds. Not atomic (unlike table_dump.lua): a key written meanwhile may be seen or not. A key
    that is not a hash is listed, not raised."""
    prefix = table + db.separator
    seen: set[str] = set()
    cursor = 0
    while True:
        cursor, found = await db.redis.scan(cursor, match=table_pattern(table, db.separator), count=count)
        names = sorted({str(n) for n in found} - seen)  # SCAN may return a key twice
        seen.update(names)
        chunk = TableContents()
        replies = await db.execute_many([("HGETALL", name) for name in names])
        for name, reply in zip(names, replies):
            if isinstance(reply, Exception):
                if not str(reply).startswith("WRONGTYPE"):
                    raise reply
                chunk.not_hashes.append(name)
            elif reply:  # empty: deleted since SCAN saw it
                pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
                chunk.entries[name[len(prefix):]] = [(f, v) for f, v in pairs if f != "NULL"]
        yield chunk
        if int(cursor) == 0:
            return


async def read_table(db: DBConnector, table: str, count: int = SCAN_COUNT) -> TableContents:
    """Every entry of `table` (scan_table's chunks together)."""
    out = TableContents()
    async for chunk in scan_table(db, table, count):
        out.entries.update(chunk.entries)
        out.not_hashes.extend(chunk.not_hashes)
    return out
