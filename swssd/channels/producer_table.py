"""ProducerTable: the ordered JSON operation queue (`TABLE_KEY_VALUE_OP_QUEUE`)."""

from __future__ import annotations

import json

from ..fields import FieldValuesLike, as_field_values
from ..lua import PT_ENQUEUE
from ..redis.connector import DBConnector, ScriptCall
from .table import TableBase


def encode_field_values(fvs: FieldValuesLike) -> str:
    """The C++ JSon::buildJson form: a flat array ["f1","v1","f2","v2"], compact, UTF-8 kept."""
    flat = [x for fv in as_field_values(fvs) for x in fv]
    return json.dumps(flat, separators=(",", ":"), ensure_ascii=False)


class ProducerTable(TableBase):
    """Enqueues (key, JSON values, S|D + op) triples and PUBLISHes; order is kept end to end.

    With `buffered=True` nothing is sent until `flush()`.
    """

    def __init__(self, db: DBConnector, name: str, buffered: bool = False) -> None:
        super().__init__(db, name)
        self.buffered = buffered
        self._queued: list[ScriptCall] = []

    async def set(self, key: str, fvs: FieldValuesLike, op: str = "SET", prefix: str = "") -> None:
        await self._enqueue(key, encode_field_values(fvs), "S" + op)

    async def delete(self, key: str, op: str = "DEL", prefix: str = "") -> None:
        await self._enqueue(key, "{}", "D" + op)

    async def flush(self) -> None:
        queued, self._queued = self._queued, []
        await self.db.evalsha_many(queued)

    async def _enqueue(self, key: str, value: str, op: str) -> None:
        call: ScriptCall = (PT_ENQUEUE, [self.op_queue, self.channel], [key, value, op, "G"])
        if self.buffered:
            self._queued.append(call)
        else:
            await self.db.evalsha(*call, resend=False)  # a resent LPUSH would enqueue twice
