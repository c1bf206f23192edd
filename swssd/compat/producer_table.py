"""ProducerTable: the ordered operation queue (`TABLE_KEY_VALUE_OP_QUEUE`) with the C++ library's
enqueue script (swssd/lua) and arguments; values as JSON by the asyncio library's encoder."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..channels.producer_table import encode_field_values
from ..lua import PT_ENQUEUE
from ..schema import OP_QUEUE_SUFFIX
from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .table import TableBase, flat_pairs

#: ops a buffered ProducerTable keeps until flush() (C++: only these are buffered)
BUFFERED_OPS = ("create", "set", "bulkset")


class ProducerTable(TableBase):
    """ProducerTable(db, tableName)."""

    def __init__(self, db: DBConnector, tableName: str) -> None:
        super().__init__(tableName, SonicDBConfig.getSeparator(db))
        self._db = db
        self._conn = db.connection
        self._buffered = False
        self._queued: list[list[Any]] = []
        self._queue = tableName + OP_QUEUE_SUFFIX
        self._channel = self.getChannelName(db.getDbId())
        self._conn.load_scripts(PT_ENQUEUE)

    def getKeyValueOpQueueTableName(self) -> str:
        return self._queue

    def setBuffered(self, buffered: bool) -> None:
        self._buffered = buffered

    def _enqueue(self, key: str, value: str, op: str, flush: bool) -> None:
        self._queued.append([key, value, op, "G"])
        if flush:
            self.flush()

    def set(self, key: str, values: Iterable[tuple[str, str]], op: str = "SET", prefix: str = "") -> None:
        """Enqueue (key, JSON of the pairs, "S" + op)."""
        pairs = list(zip(*[iter(flat_pairs(values))] * 2))
        self._enqueue(key, encode_field_values(pairs), "S" + op, not self._buffered or op not in BUFFERED_OPS)

    def delete(self, key: str, op: str = "DEL", prefix: str = "") -> None:
        """Enqueue (key, "{}", "D" + op)."""
        self._enqueue(key, "{}", "D" + op, not self._buffered)

    def _del(self, key: str, op: str = "DEL", prefix: str = "") -> None:
        """The name older SWIG gave `del`."""
        self.delete(key, op, prefix)

    def flush(self) -> None:
        """Send what is queued, one EVALSHA per operation in order, in one write."""
        queued, self._queued = self._queued, []
        self._conn.evalsha_many([(PT_ENQUEUE, [self._queue, self._channel], args) for args in queued])
