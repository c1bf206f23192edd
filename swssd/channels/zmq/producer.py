"""ZmqProducerStateTable: the producer side of the ZMQ state-table channel."""

from __future__ import annotations

from collections.abc import Iterable

from ...fields import DEL_COMMAND, SET_COMMAND, FieldValuesLike, KeyOpFieldsValues, as_field_values
from ...redis.connector import DBConnector
from ..table import TableBase
from .db_updater import AsyncDBUpdater
from .serializer import header, serialize_with
from .sockets import ZmqClient
from .speedups import one_change_sender

SetEntry = tuple[str, FieldValuesLike] | KeyOpFieldsValues


class ZmqProducerStateTable(TableBase):
    """Sends changes of one table through a ZmqClient, as the C++ ZmqProducerStateTable: each call
    is one message of (db name, table name, changes); nothing goes through the Redis key set.

    With `db_persistence` (the C++ default) every change sent is also written to the Redis table
    by an AsyncDBUpdater, in order, after the send: SET replaces the entry, DEL removes it, an op
    of "HSET" merges fields (the op is not sent: the consumer gets SET). A change that cannot be
    sent (MessageTooLargeError, ZmqSendError) is not written either.

    The db's `name` (APPL_DB, ...) is what the message carries, so the consumer must use the same.
    """

    def __init__(self, db: DBConnector, name: str, client: ZmqClient, db_persistence: bool = True) -> None:
        super().__init__(db, name)
        if not db.name:
            raise ValueError("ZmqProducerStateTable needs a DBConnector with a database name (messages carry it)")
        self.client = client
        self.db_name = db.name
        self._header = header(db.name, name)
        self._send_one = one_change_sender(self._header)
        self._updater = AsyncDBUpdater(db, name) if db_persistence else None

    @property
    def db_persistence(self) -> bool:
        return self._updater is not None

    async def set(self, key: str, fvs: FieldValuesLike, op: str = SET_COMMAND, prefix: str = "") -> None:
        """Send one entry's fields (prefix is accepted for C++ parity and unused, as there).
        The hot path: the message built and handed to the socket without awaiting anything
        (as the C++ set() sends at once); only a full queue waits, to retry."""
        if type(fvs) is not list:
            fvs = as_field_values(fvs)
        client = self.client
        data = self._send_one(client.direct, key, fvs)
        if data is None:
            client.sent += 1
        elif not client.send_nowait(data):
            await client.send_bytes(data)
        if self._updater is not None:
            self._updater.update(key, op, fvs)

    async def delete(self, key: str, op: str = DEL_COMMAND, prefix: str = "") -> None:
        """Send the deletion of one entry: set() without fields, which is a DEL on the wire."""
        await self.set(key, [], op)

    async def set_many(self, entries: Iterable[SetEntry]) -> None:
        """Send many entries in one message (the C++ batched set): (key, fvs) pairs or
        KeyOpFieldsValues, whose op only matters to persistence."""
        changes = []
        for entry in entries:
            if len(entry) == 3:
                changes.append(tuple.__new__(KeyOpFieldsValues, (entry[0], entry[1], as_field_values(entry[2]))))
            else:
                changes.append(tuple.__new__(KeyOpFieldsValues, (entry[0], SET_COMMAND, as_field_values(entry[1]))))
        await self.send(changes)

    async def delete_many(self, keys: Iterable[str]) -> None:
        """Send the deletion of many entries in one message (the C++ batched del)."""
        await self.send([tuple.__new__(KeyOpFieldsValues, (key, DEL_COMMAND, [])) for key in keys])

    async def send(self, changes: list[KeyOpFieldsValues]) -> None:
        """Send sets and deletes in one message, in order (C++ send)."""
        data = serialize_with(self._header, changes)
        if not self.client.send_nowait(data):
            await self.client.send_bytes(data)
        updater = self._updater
        if updater is not None:
            for key, op, fvs in changes:
                updater.update(key, op, fvs)

    def db_updater_queue_size(self) -> int:
        """Changes not yet persisted (C++ dbUpdaterQueueSize); an error without persistence."""
        if self._updater is None:
            raise RuntimeError("Database persistence is not enabled")
        return self._updater.queue_size()

    async def flush(self) -> None:
        """Wait until every change sent so far is persisted (nothing to do without persistence)."""
        if self._updater is not None:
            await self._updater.flush()

    async def close(self) -> None:
        """Persist what is queued, then stop the updater (the client is the caller's)."""
        if self._updater is not None:
            await self._updater.close()
