"""Select: wait for any of several Selectables, as the C++ class (epoll on their file descriptors).

select(timeout_ms=-1) returns [state, selectable]: OBJECT with the one to read (the highest
priority ready, the least recently returned among equals), TIMEOUT with None, or ERROR. As the
binding, the one to read comes back as a new base-class Selectable proxy (not the object added:
compare getFd(), or cast it); SWSSD_COMPAT_PERMISSIVE=1 returns the object itself. A ready
object holding more than one item stays ready, so it comes back at once. A signal handler that
raises interrupts the wait (Python runs handlers inside epoll); interrupt_on_signal is accepted.
"""

from __future__ import annotations

import logging
import select
from typing import Any

from .selectable import Selectable, as_selected
from .swig import target_of

log = logging.getLogger(__name__)


class Select:
    """Select(): add Selectables, then select(timeout_ms)."""

    OBJECT = 0
    ERROR = 1
    TIMEOUT = 2
    SIGNALINT = 3

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._objects: dict[int, Selectable] = {}
        self._ready: set[Selectable] = set()

    def addSelectable(self, selectable: Selectable) -> None:
        selectable = target_of(selectable)
        fd = selectable.getFd()
        if fd in self._objects:
            log.warning("Selectable is already added to the list, ignoring.")
            return
        self._objects[fd] = selectable
        if selectable.initializedWithData():
            self._ready.add(selectable)
        self._epoll.register(fd, select.EPOLLIN)

    def addSelectables(self, selectables: list[Selectable]) -> None:
        for selectable in selectables:
            self.addSelectable(selectable)

    def removeSelectable(self, selectable: Selectable) -> None:
        selectable = target_of(selectable)
        fd = selectable.getFd()
        self._objects.pop(fd, None)
        self._ready.discard(selectable)
        self._epoll.unregister(fd)

    def isQueueEmpty(self) -> bool:
        return not self._ready

    @staticmethod
    def resultToString(result: int) -> str:
        return {0: "OBJECT", 1: "ERROR", 2: "TIMEOUT", 3: "SIGNALINT"}.get(result, "UNKNOWN")

    def select(self, timeout: int = -1, interrupt_on_signal: bool = False) -> list[Any]:
        """[state, selectable]: look at what is ready now, then wait up to `timeout` ms (-1: for ever)."""
        result = self._poll(0)
        if result[0] != self.TIMEOUT or timeout == 0:
            return result
        return self._poll(timeout)

    def _poll(self, timeout_ms: int) -> list[Any]:
        try:
            events = self._epoll.poll(timeout_ms / 1000 if timeout_ms >= 0 else -1, max(len(self._objects), 1))
        except OSError as exc:
            log.error("epoll failed: %s", exc)
            return [self.ERROR, None]
        # An object leaves the ready set only once it is known to hold nothing more: a signal
        # handler raising anywhere in here loses no wake-up (an interrupted read leaves its
        # connection failing, so the object returns ERROR from then on).
        for fd, _ in events:
            selectable = self._objects[fd]
            self._ready.add(selectable)
            try:
                selectable.readData()
            except RuntimeError as exc:
                log.error("readData error: %s", exc)
                return [self.ERROR, None]
        while self._ready:
            selectable = min(self._ready, key=Selectable._select_order)
            selectable._update_last_used()
            if not selectable.hasData():
                self._ready.discard(selectable)
                continue
            if not selectable.hasCachedData():
                self._ready.discard(selectable)
            selectable.updateAfterRead()
            return [self.OBJECT, as_selected(selectable)]
        return [self.TIMEOUT, None]
