"""ConsumerStateTable: the consumer of a ProducerStateTable's key set, with the C++ library's pops
script (swssd/lua) and its arguments; waits on `TABLE_CHANNEL@<db id>`."""

from __future__ import annotations

from typing import Any

from ..lua import CST_POPS
from ..schema import DEL_SET_SUFFIX, KEY_SET_SUFFIX, STATE_PREFIX
from .consumer_table_base import DEFAULT_POP_BATCH_SIZE, ConsumerTableBase, Entry
from .dbconnector import DBConnector
from .redis_command import REDIS_REPLY_INTEGER
from .redis_transactioner import discarded_on_failure, exec_results


class ConsumerStateTable(ConsumerTableBase):
    """ConsumerStateTable(db, tableName, popBatchSize=128, pri=0)."""

    def __init__(self, db: DBConnector, tableName: str, popBatchSize: int = DEFAULT_POP_BATCH_SIZE,
                 pri: int = 0) -> None:
        super().__init__(db, tableName, popBatchSize, pri)
        conn = db.connection
        conn.load_scripts(CST_POPS)
        # As C++: subscribe inside a transaction watching the key set, so the count of keys
        # pending (the first select()s' worth) matches the moment the subscription began. A key
        # set that is not a set: RuntimeError with the binding's message.
        while True:
            conn.command("WATCH", self.getKeySetName())
            with discarded_on_failure(conn):
                conn.command("MULTI")
                conn.command("SCARD", self.getKeySetName())
                self.subscribe(db, self.getChannelName(db.getDbId()))
                result = exec_results(conn.command("EXEC"), (REDIS_REPLY_INTEGER,))
            if result is not None:
                break
        self.setQueueLength(result[0])

    def getKeySetName(self) -> str:
        return self.getTableName() + KEY_SET_SUFFIX

    def getDelKeySetName(self) -> str:
        return self.getTableName() + DEL_SET_SUFFIX

    def getStateHashPrefix(self) -> str:
        return STATE_PREFIX

    def _pop_reply(self) -> Any:
        """One EVALSHA of the pops script."""
        return self._db.connection.evalsha(
            CST_POPS,
            [self.getKeySetName(), self.getTableName() + self.getTableNameSeparator(), self.getDelKeySetName()],
            [self.POP_BATCH_SIZE, STATE_PREFIX],
        )

    def pop_entries(self, prefix: str = "") -> list[Entry]:
        """A key with fields is a SET, one without a DEL."""
        entries: list[Entry] = []
        for key, flat in self._pop_reply() or ():
            fvs = tuple(zip(flat[::2], flat[1::2]))
            entries.append((key, "SET" if fvs else "DEL", fvs))
        return entries

    def pops(self, prefix: str = "") -> list[Any]:
        """[keys, ops, fvss] in one pass over the reply (the drain's path)."""
        keys: list[str] = []
        ops: list[str] = []
        fvss: list[tuple[tuple[str, str], ...]] = []
        for key, flat in self._pop_reply() or ():
            fvs = tuple(zip(flat[::2], flat[1::2]))
            keys.append(key)
            ops.append("SET" if fvs else "DEL")
            fvss.append(fvs)
        return [tuple(keys), tuple(ops), tuple(fvss)]
