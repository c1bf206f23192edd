"""NotificationConsumer: the messages of NotificationProducer, taken off a raw pub/sub channel."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import NamedTuple

import structlog

from ..fields import FieldValues, KeyOpFieldsValues
from ..redis.connector import DBConnector
from .selectable import Selectable, Subscription

log = structlog.get_logger(__name__)

#: The C++ defaults (DEFAULT_NC_POP_BATCH_SIZE, and the constructor's `pri`).
DEFAULT_NC_POP_BATCH_SIZE = 2048
DEFAULT_NC_PRIORITY = 100
#: Notifications held before new ones are dropped: about Redis's own pub/sub output buffer limit
#: (32 MB) at a few hundred bytes each, the bound a C++ subscriber that falls behind meets.
DEFAULT_QUEUE_LIMIT = 100_000
#: At most this many characters of a bad message in a log line.
_EXCERPT = 200


def peek_op(msg: str) -> str:
    """The op of a message without parsing it, as C++ peekOp: the text between `["` and the
    next `"` (escapes not undone); "" when the message does not start that way."""
    if len(msg) < 3 or msg[0] != "[" or msg[1] != '"':
        return ""
    end = msg.find('"', 2)
    return "" if end < 0 else msg[2:end]


def parse_notification(msg: str) -> KeyOpFieldsValues:
    """A message as C++ NotificationConsumer::pops hands it over: KeyOpFieldsValues(data, op,
    [(field, value), ...]) from `["op","data","f1","v1",...]`.

    Raises ValueError for what C++ JSon::readJson / pop would throw on: not JSON, not an array,
    fewer than two items, an odd number of items, an item that is not a string, text that is not
    valid UTF-8. As C++ does, the payload is read up to a NUL and a leading UTF-8 BOM is skipped.
    """
    text = msg.partition("\0")[0]  # C++ copies the reply's C string
    if text.startswith("\ufeff"):
        text = text[1:]  # nlohmann::json skips a BOM, Python's json refuses it
    try:
        items = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(items, list):
        raise ValueError(f"not a JSON array but {type(items).__name__}")
    if len(items) < 2 or len(items) % 2:
        raise ValueError(f"{len(items)} items; want op, data, then field/value pairs")
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"an item is {type(item).__name__}, not a string")
        if not item.isascii():
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError("not valid UTF-8 (lone surrogate)") from None
    return KeyOpFieldsValues(items[1], items[0], list(zip(items[2::2], items[3::2])))


class Notification(NamedTuple):
    """One notification as C++ pop(op, data, values) and swsscommon's pop() return it."""

    op: str
    data: str
    fvs: FieldValues


class NotificationConsumer(Selectable):
    """The C++ NotificationConsumer: SUBSCRIBEs `channel` as given (pub/sub is server-wide, the
    database id plays no part) and hands over what NotificationProducer sends, in order.

    pops() returns KeyOpFieldsValues(key=data, op=op, fvs=values), the tuples C++ pops() fills;
    pop() returns one Notification(op, data, fvs), in the order of C++ pop(op, data, values) and
    swsscommon's `(op, data, fvs) = pop()`.

    It receives through a Select: the subscription exists once `await select.add(consumer)`
    returns. Notifications are not stored: what was sent before that, or while the pub/sub
    connection was down (counted in `resubscriptions`, and logged), is lost, as in C++.

    Beyond C++:
    - pops() returns at most `pop_batch_size` notifications (C++ returns everything it has read
      off the socket, and stops reading more once it holds that many);
    - a malformed message is logged (its first 200 characters) and counted in `malformed`, and
      the messages around it are delivered; C++ pop and pops throw (pops losing its batch);
    - at most `queue_limit` notifications wait; newer ones are dropped, counted in `dropped` and
      logged when dropping starts and stops (C++ holds an unbounded queue, but leaves unread
      messages in the socket, until Redis disconnects it at its pub/sub output buffer limit);
    - pop() on an empty consumer returns None where C++ throws.

    `op_allowlist`, as C++ setOpAllowList: when given, messages whose op (peek_op) is not in it
    are dropped on arrival, unparsed, and counted in `dropped_allowlist`; `received` counts every
    message that arrived. The LruDedup queue policy of C++ is not provided.
    """

    def __init__(
        self,
        db: DBConnector,
        channel: str,
        pop_batch_size: int = DEFAULT_NC_POP_BATCH_SIZE,
        priority: int = DEFAULT_NC_PRIORITY,
        *,
        queue_limit: int = DEFAULT_QUEUE_LIMIT,
        op_allowlist: Iterable[str] | None = None,
    ) -> None:
        super().__init__(db, pop_batch_size, priority)
        if queue_limit < 1:
            raise ValueError(f"queue_limit must be at least 1, not {queue_limit}")
        self.channel = channel
        self.queue_limit = queue_limit
        self.op_allowlist = frozenset(op_allowlist or ())
        #: messages that arrived on the channel
        self.received = 0
        #: messages that could not be read as a notification
        self.malformed = 0
        #: notifications dropped because `queue_limit` were waiting
        self.dropped = 0
        #: messages dropped because their op is not in `op_allowlist`
        self.dropped_allowlist = 0
        #: times the subscription was re-established (notifications may have been lost each time)
        self.resubscriptions = 0
        self._dropped_before_overflow: int | None = None

    # -- Select's side ------------------------------------------------------------------

    @property
    def subscription(self) -> Subscription:
        return Subscription(self.channel)

    @property
    def ready(self) -> bool:
        return bool(self._buffer)

    def on_message(self, channel: str, data: str) -> None:
        self.received += 1
        if self.op_allowlist:
            op = peek_op(data.partition("\0")[0])
            if not op or op not in self.op_allowlist:
                self.dropped_allowlist += 1
                return
        buffer = self._buffer
        if len(buffer) >= self.queue_limit:
            self._overflow()
            return
        try:
            item = parse_notification(data)
        except ValueError as exc:
            self.malformed += 1
            log.error(
                "malformed notification dropped", channel=self.channel, reason=str(exc), message=data[:_EXCERPT]
            )
            return
        if self._dropped_before_overflow is not None:
            log.warning(
                "notification buffer has room again",
                channel=self.channel,
                dropped=self.dropped - self._dropped_before_overflow,
            )
            self._dropped_before_overflow = None
        buffer.append(item)

    def _overflow(self) -> None:
        if self._dropped_before_overflow is None:
            self._dropped_before_overflow = self.dropped
            log.error(
                "notification buffer full: dropping new notifications until it drains",
                channel=self.channel,
                queue_limit=self.queue_limit,
            )
        self.dropped += 1

    def on_resubscribed(self) -> None:
        self.resubscriptions += 1
        log.warning(
            "notifications sent while the pub/sub connection was down are lost",
            channel=self.channel,
            resubscriptions=self.resubscriptions,
        )

    async def on_subscribed(self) -> None:
        """Nothing to look for: notifications are not stored, so none predate the subscription."""

    # -- popping ------------------------------------------------------------------------

    async def pops(self) -> list[KeyOpFieldsValues]:
        """Up to pop_batch_size notifications, oldest first, as KeyOpFieldsValues(data, op, fvs)."""
        buffer = self._buffer
        return [buffer.popleft() for _ in range(min(len(buffer), self.pop_batch_size))]

    async def pop(self) -> Notification | None:  # type: ignore[override]
        """The oldest notification as swsscommon's pop() gives it, `op, data, fvs = await pop()`;
        None when none waits (C++ throws)."""
        if not self._buffer:
            return None
        data, op, fvs = self._buffer.popleft()
        return Notification(op, data, fvs)

    def __repr__(self) -> str:
        return f"NotificationConsumer({self.channel!r}, db={self.db.name or self.db.db_id})"
