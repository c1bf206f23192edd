"""ConsumerTableBase: what the consumers share, as the C++ class: a table name and separator, a
subscription to wait on, a pop batch size, and pop() served one at a time from the last pops().
TableConsumable is the C++ base above it, with the default pop batch size."""

from __future__ import annotations

from collections import deque
from typing import Any

from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .selectable import RedisSelect
from .table import TableBase

#: the C++ TableConsumable::DEFAULT_POP_BATCH_SIZE
DEFAULT_POP_BATCH_SIZE = 128

Entry = tuple[str, str, tuple[tuple[str, str], ...]]
"""(key, op, field/value pairs): a KeyOpFieldsValuesTuple as the binding hands it over."""


class TableConsumable(TableBase, RedisSelect):
    """The binding's base of every consumer; programs name it for its DEFAULT_POP_BATCH_SIZE
    (featured: `SubscriberStateTable(db, table, TableConsumable.DEFAULT_POP_BATCH_SIZE, pri)`)."""

    DEFAULT_POP_BATCH_SIZE = DEFAULT_POP_BATCH_SIZE


class ConsumerTableBase(TableConsumable):
    """A consumer of table `tableName` on `db`."""

    def __init__(self, db: DBConnector, tableName: str, popBatchSize: int = DEFAULT_POP_BATCH_SIZE,
                 pri: int = 0) -> None:
        TableBase.__init__(self, tableName, SonicDBConfig.getSeparator(db))
        RedisSelect.__init__(self, pri)
        self._db = db
        self.POP_BATCH_SIZE = popBatchSize
        self._buffer: deque[Entry] = deque()

    def getDbConnector(self) -> DBConnector:
        """The connector the table was made with."""
        return self._db

    def pop_entries(self, prefix: str = "") -> list[Entry]:
        """One batch of changes from Redis (each consumer kind its own way)."""
        raise NotImplementedError

    def pops(self, prefix: str = "") -> list[Any]:
        """[keys, ops, fvss] of one batch, as the binding's output arguments (transpose_pops()
        turns them into (key, op, fvs) entries)."""
        entries = self.pop_entries(prefix)
        return [tuple(e[0] for e in entries), tuple(e[1] for e in entries), tuple(e[2] for e in entries)]

    def pop(self, prefix: str = "") -> list[Any]:
        """[key, op, fvs] of the next change, popping a batch when none is left; ["", "", ()]
        when Redis has none either."""
        if not self._buffer:
            self._buffer.extend(self.pop_entries(prefix))
            if not self._buffer:
                return ["", "", ()]
        key, op, fvs = self._buffer.popleft()
        return [key, op, fvs]
