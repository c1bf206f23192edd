"""NotificationProducer: PUBLISH of `["op","data","field","value",...]` on a channel (through a
RedisPipeline, as in C++), the message built by the asyncio library's encoder
(swssd.channels.notification_producer)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..channels.notification_producer import encode_notification
from .arguments import FVS, permissive
from .containers import FieldValuePairs
from .dbconnector import DBConnector
from .redis_pipeline import RedisPipeline


class NotificationProducer:
    """NotificationProducer(db, channel), or NotificationProducer(pipeline, channel, buffered)."""

    def __init__(self, db: DBConnector | RedisPipeline, channel: str, buffered: bool = False) -> None:
        self._pipe = db if isinstance(db, RedisPipeline) else RedisPipeline(db, 1)
        self._buffered = buffered and isinstance(db, RedisPipeline)
        self._channel = channel

    def send(self, op: str, data: str, values: Iterable[tuple[str, str]]) -> int:
        """PUBLISH the notification: the number of subscribers that received it, or -1 when
        buffered (it waits in the pipeline)."""
        command = ("PUBLISH", self._channel, encode_notification(op, data, _send_pairs(values)))
        if self._buffered:
            self._pipe.write(command, True)
            return -1
        return int(self._pipe.read(*command))


def _send_pairs(values: Any) -> list[tuple[str, str]]:
    """send()'s pairs: the binding takes only a FieldValuePairs (a non-const reference), so a plain
    list is its TypeError, None its ValueError. Permissive: any iterable of pairs."""
    if permissive() or isinstance(values, FieldValuePairs):
        return list(values)
    kind = f"'{FVS} &'"
    if values is None:
        raise ValueError(f"invalid null reference in method 'NotificationProducer_send', argument 4 of type {kind}")
    raise TypeError(f"in method 'NotificationProducer_send', argument 4 of type {kind}")
