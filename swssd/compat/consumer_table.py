"""ConsumerTable: the consumer of a ProducerTable's operation queue, with the C++ library's pops
script (swssd/lua) and its arguments; waits on `TABLE_CHANNEL@<db id>`."""

from __future__ import annotations

from ..lua import CT_POPS
from ..schema import OP_QUEUE_SUFFIX
from .consumer_table_base import DEFAULT_POP_BATCH_SIZE, ConsumerTableBase, Entry
from .dbconnector import DBConnector
from .redis_command import REDIS_REPLY_INTEGER
from .redis_transactioner import discarded_on_failure, exec_results


class ConsumerTable(ConsumerTableBase):
    """ConsumerTable(db, tableName, popBatchSize=128, pri=0)."""

    def __init__(self, db: DBConnector, tableName: str, popBatchSize: int = DEFAULT_POP_BATCH_SIZE,
                 pri: int = 0) -> None:
        super().__init__(db, tableName, popBatchSize, pri)
        self._modify_redis = True
        conn = db.connection
        conn.load_scripts(CT_POPS)
        # As C++: the queue's length read in the transaction that subscribes; a queue that is not
        # a list: RuntimeError with the binding's message.
        while True:
            conn.command("WATCH", self.getKeyValueOpQueueTableName())
            with discarded_on_failure(conn):
                conn.command("MULTI")
                conn.command("LLEN", self.getKeyValueOpQueueTableName())
                self.subscribe(db, self.getChannelName(db.getDbId()))
                conn.command("LLEN", self.getKeyValueOpQueueTableName())
                result = exec_results(conn.command("EXEC"), (REDIS_REPLY_INTEGER, REDIS_REPLY_INTEGER))
            if result is not None:
                break
        self.setQueueLength(result[0] // 3)  # key, value and op are three list items

    def getKeyValueOpQueueTableName(self) -> str:
        return self.getTableName() + OP_QUEUE_SUFFIX

    def setModifyRedis(self, modify: bool) -> None:
        """False: pop without applying the ops to the table's hashes."""
        self._modify_redis = modify

    def pop_entries(self, prefix: str = "") -> list[Entry]:
        reply = self._db.connection.evalsha(
            CT_POPS,
            [self.getKeyValueOpQueueTableName(), prefix + self.getTableName()],
            [self.POP_BATCH_SIZE, 1 if self._modify_redis else 0],
        )
        entries: list[Entry] = []
        for item in reply or ():
            if len(item) % 2:
                raise RuntimeError("invalid number of elements in returned table")
            entries.append((item[0], item[1], tuple(zip(item[2::2], item[3::2]))))
        return entries
