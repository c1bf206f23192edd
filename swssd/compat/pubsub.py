"""PubSub: the redis-py-like pub/sub object of DBConnector.pubsub(), as the binding's C++ PubSub.

psubscribe() opens a connection of its own (a second psubscribe replaces it, as in C++) and reads
the confirmation; get_message(timeout) and listen_message() return a keyspace message as a dict
of type, pattern, channel and data, or {} when nothing came. Waiting is a poll() on the socket,
so a signal handler that raises interrupts it, as the binding's interrupt_on_signal does, and the
subscription stays; one that raises while a message is being read leaves the connection unusable
(RuntimeError from then on, see swssd.compat.connection): it may have eaten part of a message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .connection import RedisConnection

#: how long listen_message waits per round, in seconds (the C++ GET_MESSAGE_INTERVAL)
LISTEN_INTERVAL = 600.0


def message_dict(reply: Any) -> dict[str, str]:
    """A pmessage as the binding's map: type, pattern, channel, data (empty strings when the
    reply is not a four-element pmessage, as the C++ RedisMessage)."""
    if isinstance(reply, list) and len(reply) == 4:
        return {"type": str(reply[0]), "pattern": str(reply[1]), "channel": str(reply[2]), "data": str(reply[3])}
    return {"type": "", "pattern": "", "channel": "", "data": ""}


class PubSub:
    """Subscriptions of one DBConnector, read on a connection of their own (`connect` makes it:
    DBConnector.pubsub() passes a new connection to the same database)."""

    def __init__(self, connect: Callable[[], RedisConnection]) -> None:
        self._connect = connect
        self._conn: RedisConnection | None = None

    def psubscribe(self, pattern: str) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = self._connect()
        self._conn.command("PSUBSCRIBE", pattern)

    def punsubscribe(self, pattern: str) -> None:
        """PUNSUBSCRIBE, and the connection closed (even when it fails: it is of no use after)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.command("PUNSUBSCRIBE", pattern)
            finally:
                conn.close()

    def get_message(self, timeout: float = 0.0, interrupt_on_signal: bool = False) -> dict[str, str]:
        """The next message within `timeout` seconds, else {}."""
        if self._conn is None:
            return {}
        reply = self._conn.next_reply(timeout)
        return {} if reply is False else message_dict(reply)

    def listen_message(self, interrupt_on_signal: bool = False) -> dict[str, str]:
        """The next message, waiting as long as it takes."""
        while True:
            message = self.get_message(LISTEN_INTERVAL, interrupt_on_signal)
            if message:
                return message

    def getFd(self) -> int:
        """The subscription socket's file descriptor (-1 before psubscribe)."""
        return self._conn.fileno() if self._conn is not None else -1
