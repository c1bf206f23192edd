"""ProducerTable: the ordered operation queue (`TABLE_KEY_VALUE_OP_QUEUE`) with the C++ library's
enqueue script (swssd/lua) and arguments; values as JSON by the asyncio library's encoder."""

from __future__ import annotations

from collections.abc import Iterable

from ..channels.producer_table import encode_field_values
from ..lua import PT_ENQUEUE
from ..schema import OP_QUEUE_SUFFIX
from .arguments import set_pairs
from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .redis_pipeline import RedisPipeline
from .table import TableBase

#: ops a buffered ProducerTable keeps until flush() (C++: only these are buffered)
BUFFERED_OPS = ("create", "set", "bulkset")


class ProducerTable(TableBase):
    """ProducerTable(db, tableName), or ProducerTable(pipeline, tableName, buffered). As in C++, the
    separator is looked up by the database's name, so the connector needs one."""

    def __init__(self, db: DBConnector | RedisPipeline, tableName: str, buffered: bool = False) -> None:
        pipe = db if isinstance(db, RedisPipeline) else RedisPipeline(db, 1)
        super().__init__(tableName, SonicDBConfig.getSeparator(pipe.getDbName()))
        self._pipe = pipe
        self._buffered = buffered and isinstance(db, RedisPipeline)
        self._queue = tableName + OP_QUEUE_SUFFIX
        self._channel = self.getChannelName(pipe.getDbId())
        pipe.flush()
        pipe.connection.load_scripts(PT_ENQUEUE)

    def getKeyValueOpQueueTableName(self) -> str:
        return self._queue

    def setBuffered(self, buffered: bool) -> None:
        self._buffered = buffered

    def _enqueue(self, key: str, value: str, op: str, buffered: bool) -> None:
        self._pipe.evalsha(PT_ENQUEUE, [self._queue, self._channel], [key, value, op, "G"], buffered)

    def set(self, key: str, values: Iterable[tuple[str, str]], op: str = "SET", prefix: str = "") -> None:
        """Enqueue (key, JSON of the pairs, "S" + op); only create/set/bulkset ops wait when buffered."""
        flat = [x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else x
                for x in set_pairs("ProducerTable_set", key, values)]  # bytes go as they are, as in C++
        pairs = list(zip(*[iter(flat)] * 2))
        self._enqueue(key, encode_field_values(pairs), "S" + op, self._buffered and op in BUFFERED_OPS)

    def delete(self, key: str, op: str = "DEL", prefix: str = "") -> None:
        """Enqueue (key, "{}", "D" + op)."""
        self._enqueue(key, "{}", "D" + op, self._buffered)

    def _del(self, key: str, op: str = "DEL", prefix: str = "") -> None:
        """The name older SWIG gave `del`."""
        self.delete(key, op, prefix)

    def flush(self) -> None:
        """Send what waits, one EVALSHA per operation in order, in one write."""
        self._pipe.flush()
