"""Selectable and RedisSelect: what a Select waits on, as the C++ classes define it.

A Selectable has a file descriptor, reads what arrived on it (readData), says whether it holds
data (hasData) and more than one item (hasCachedData, which keeps it ready), and has a priority
(higher first) and a last-used time (older first among equals). RedisSelect is one subscription
connection whose messages are only counted: each select() that returns it stands for one.
"""

from __future__ import annotations

import itertools
from typing import TypeVar

from .arguments import permissive
from .connection import RedisConnection
from .dbconnector import DBConnector
from .swig import SwigObject, proxy, swig_repr, target_of

S = TypeVar("S", bound="Selectable")

#: a global use counter: the C++ steady_clock stamp's role (which was used longer ago)
_clock = itertools.count(1)


class Selectable:
    """Base of everything a Select can wait on; abstract, as the binding's: Select.select() hands
    out a proxy of this class (see swig.py), which has only these methods."""

    def __init__(self, pri: int = 0) -> None:
        if type(self) is Selectable:
            raise AttributeError("No constructor defined - class is abstract")
        self._priority = pri
        self._last_used = next(_clock)

    def getFd(self) -> int:
        raise NotImplementedError

    def readData(self) -> int:
        raise NotImplementedError

    def hasData(self) -> bool:
        return True

    def hasCachedData(self) -> bool:
        return False

    def initializedWithData(self) -> bool:
        return False

    def updateAfterRead(self) -> None:
        """Called when select() returns this object."""

    def getPri(self) -> int:
        return self._priority

    def _update_last_used(self) -> None:
        self._last_used = next(_clock)

    def _select_order(self) -> tuple[int, int]:
        """Which ready object select() returns first: highest priority, then least recently used."""
        return -self._priority, self._last_used

    def __repr__(self) -> str:
        this = self.__dict__.get("this") or SwigObject(f"swss::{type(self).__name__} *", self)
        return swig_repr(self, this)


class RedisSelect(Selectable):
    """A subscription on a connection of its own; what arrives is counted, not kept."""

    #: the C++ SUBSCRIBE_TIMEOUT, in milliseconds
    SUBSCRIBE_TIMEOUT = 1000

    def __init__(self, pri: int = 0) -> None:
        super().__init__(pri)
        self._subscribe: DBConnector | None = None
        self._queue_length = -1

    @property
    def _conn(self) -> RedisConnection:
        if self._subscribe is None:
            raise RuntimeError("RedisSelect: not subscribed")
        return self._subscribe.connection

    def getFd(self) -> int:
        return self._conn.fileno()

    def getDbConnector(self) -> DBConnector | None:
        """The subscription's connector."""
        return self._subscribe

    def readData(self) -> int:
        """Count the messages one read completes (the socket is readable)."""
        conn = self._conn
        with conn.reading():
            conn.fill()
            while conn.buffered_reply() is not False:
                self._queue_length += 1
        return 0

    def hasData(self) -> bool:
        return self._queue_length > 0

    def hasCachedData(self) -> bool:
        return self._queue_length > 1

    def initializedWithData(self) -> bool:
        return self._queue_length > 0

    def updateAfterRead(self) -> None:
        self._queue_length -= 1

    def setQueueLength(self, queueLength: int) -> None:
        self._queue_length = queueLength

    def subscribe(self, db: DBConnector, channelName: str) -> None:
        """SUBSCRIBE on a new connection to `db`'s database (its confirmation read)."""
        self._subscribe = db.newConnector(self.SUBSCRIBE_TIMEOUT)
        self._subscribe.subscribe(channelName)

    def psubscribe(self, db: DBConnector, channelName: str) -> None:
        """PSUBSCRIBE on a new connection to `db`'s database (its confirmation read)."""
        self._subscribe = db.newConnector(self.SUBSCRIBE_TIMEOUT)
        self._subscribe.psubscribe(channelName)


def as_selected(selectable: Selectable) -> Selectable:
    """What Select.select() returns for `selectable`: as the binding, a new base-class proxy
    (`pop` and the rest need a cast); the object itself when the layer is permissive."""
    return selectable if permissive() else proxy(Selectable, selectable, "swss::Selectable")


def cast_selectable(temp: Selectable | None, cls: type[S], function: str) -> S | None:
    """The binding's CastSelectableTo...(temp): a dynamic_cast to `cls`, returned as a new proxy of
    `cls` (so a ConsumerStateTable cast to RedisSelect has no `pop`); None when it is not one."""
    if temp is None:
        return None
    if not isinstance(temp, Selectable):
        raise TypeError(f"in method '{function}', argument 1 of type 'swss::Selectable *'")
    target = target_of(temp)
    if not isinstance(target, cls):
        return None
    return target if permissive() else proxy(cls, target, f"swss::{cls.__name__}")


def CastSelectableToRedisSelectObj(temp: Selectable | None) -> RedisSelect | None:
    """The binding's cast of a Select.select() result (or any Selectable) to a RedisSelect."""
    return cast_selectable(temp, RedisSelect, "CastSelectableToRedisSelectObj")
