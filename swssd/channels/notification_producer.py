"""NotificationProducer: one-shot messages PUBLISHed on a raw channel, nothing stored in Redis."""

from __future__ import annotations

import json

from ..fields import FieldValuesLike, as_field_values
from ..redis.connector import DBConnector


def encode_notification(op: str, data: str, values: FieldValuesLike) -> str:
    """The message C++ NotificationProducer::send publishes: JSon::buildJson of (op, data) put in
    front of the values, i.e. `["op","data","f1","v1",...]`, compact, non-ASCII as raw UTF-8.

    Raises TypeError for an item that is not a str (C++ has only strings there, and its consumers
    reject anything else) and ValueError for text that is not valid Unicode (lone surrogates, e.g.
    undecodable bytes kept as surrogate escapes): nlohmann::json refuses to dump invalid UTF-8.
    """
    flat = [op, data]
    for field, value in as_field_values(values):
        flat += (field, value)
    for item in flat:
        if not isinstance(item, str):
            raise TypeError(f"notification items must be str, not {type(item).__name__}: {item!r:.200}")
    msg = json.dumps(flat, separators=(",", ":"), ensure_ascii=False)
    if not msg.isascii():
        try:
            msg.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"notification text is not valid UTF-8: {exc.reason} at {exc.start}") from None
    return msg


class NotificationProducer:
    """The C++ NotificationProducer: `send(op, data, values)` PUBLISHes on `channel` as given
    (not `<TABLE>_CHANNEL@<db id>`); pub/sub is server-wide, so the database id does not matter.

    Only subscribers connected at that moment get a message. With `buffered=True` (the C++
    RedisPipeline mode) messages wait for `flush()` and `send` returns -1, as in C++.
    """

    def __init__(self, db: DBConnector, channel: str, buffered: bool = False) -> None:
        self.db = db
        self.channel = channel
        self.buffered = buffered
        self._queued: list[tuple[str, str, str]] = []

    async def send(self, op: str, data: str, values: FieldValuesLike = ()) -> int:
        """PUBLISH one notification; the number of subscribers that got it (-1 when buffered).

        Never resent after a dropped connection (a subscriber could get it twice): the error
        reaches the caller, as in C++.
        """
        command = ("PUBLISH", self.channel, encode_notification(op, data, values))
        if self.buffered:
            self._queued.append(command)
            return -1
        (reply,) = await self.db.execute_many([command])
        if isinstance(reply, Exception):
            raise reply
        return int(reply)

    async def flush(self) -> None:
        """Send the buffered notifications in one pipeline, in order."""
        queued, self._queued = self._queued, []
        for reply in await self.db.execute_many(queued):
            if isinstance(reply, Exception):
                raise reply

    def __repr__(self) -> str:
        return f"NotificationProducer({self.channel!r}, db={self.db.name or self.db.db_id})"
