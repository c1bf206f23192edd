"""NotificationProducer: PUBLISH of `["op","data","field","value",...]` on a channel, the message
built by the asyncio library's encoder (swssd.channels.notification_producer)."""

from __future__ import annotations

from collections.abc import Iterable

from ..channels.notification_producer import encode_notification
from .dbconnector import DBConnector


class NotificationProducer:
    """NotificationProducer(db, channel)."""

    def __init__(self, db: DBConnector, channel: str) -> None:
        self._conn = db.connection
        self._channel = channel

    def send(self, op: str, data: str, values: Iterable[tuple[str, str]]) -> int:
        """PUBLISH the notification; the number of subscribers that received it."""
        return int(self._conn.command("PUBLISH", self._channel, encode_notification(op, data, list(values))))
