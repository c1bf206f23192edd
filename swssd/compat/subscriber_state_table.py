"""SubscriberStateTable: a table followed through Redis keyspace events, as the C++ class: its
entries at construction first (as SETs), then per event the entry as it is when popped (a SET with
its fields, cut at '@' as Table.get does) or a DEL.

Events wait in the connection's reader (C memory) and are only counted when read off the socket,
so a program that selects without popping grows no Python objects, as with the binding.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import hiredis

from .consumer_table_base import DEFAULT_POP_BATCH_SIZE, ConsumerTableBase, Entry
from .dbconnector import DBConnector
from .selectable import Selectable, cast_selectable
from .table import Table


class SubscriberStateTable(ConsumerTableBase):
    """SubscriberStateTable(db, tableName, popBatchSize=128, pri=0)."""

    def __init__(self, db: DBConnector, tableName: str, popBatchSize: int = DEFAULT_POP_BATCH_SIZE,
                 pri: int = 0) -> None:
        super().__init__(db, tableName, popBatchSize, pri)
        self._table = Table(db, tableName)
        self._keyspace = f"__keyspace@{db.getDbId()}__:{tableName}{self._table.getTableNameSeparator()}*"
        self.psubscribe(db, self._keyspace)
        self._counter = hiredis.Reader()
        self._events = 0
        self._early: deque[Any] = deque()
        conn = self._conn
        while (reply := conn.buffered_reply()) is not False:  # arrived with the confirmation
            self._early.append(reply)
        self._initial: deque[Entry] = deque()
        for key in self._table.getKeys():
            found, fvs = self._table.get(key)
            if found:
                self._initial.append((key, "SET", fvs))

    def readData(self) -> int:
        """Count the events one read completes; they stay in the reader until popped."""
        conn = self._conn
        with conn.reading():
            self._counter.feed(conn.fill())
            while self._counter.gets() is not False:
                self._events += 1
        return 0

    def _pending(self) -> int:
        return len(self._buffer) + len(self._initial) + len(self._early) + self._events

    def hasData(self) -> bool:
        return self._pending() > 0

    def hasCachedData(self) -> bool:
        return self._pending() > 1

    def initializedWithData(self) -> bool:
        return bool(self._initial)

    def updateAfterRead(self) -> None:
        """Nothing: an event is spent when popped."""

    def pop_entries(self, prefix: str = "") -> list[Entry]:
        """The initial entries if any are left, else every event read so far."""
        if self._initial:
            initial = list(self._initial)
            self._initial.clear()
            return initial
        conn = self._conn
        with conn.reading():
            events = list(self._early)
            self._early.clear()
            for _ in range(self._events):
                events.append(conn.buffered_reply())
            self._events = 0
        changes: list[tuple[str, bool]] = []  # (key, deleted) per event, in order
        separator = self._table.getTableNameSeparator()
        for event in events:
            if not isinstance(event, list) or len(event) != 4 or event[1] != self._keyspace:
                continue
            _, _, table_entry = str(event[2]).partition(":")
            _, sep, key = table_entry.partition(separator)
            if sep:
                changes.append((key, event[3] == "del"))
        # The entries of every SET, read in one round trip (C++ reads them one by one: the same
        # commands, the same data, each key read once however many events it had here).
        to_read = list(dict.fromkeys(key for key, deleted in changes if not deleted))
        read = dict(zip(to_read, self._table.get_many(to_read)))
        entries: list[Entry] = []
        for key, deleted in changes:
            if deleted:
                entries.append((key, "DEL", ()))
            elif read[key]:
                entries.append((key, "SET", read[key]))
        return entries

def CastSelectableToSubscriberTableObj(temp: Selectable | None) -> SubscriberStateTable | None:
    """The binding's cast of a Select.select() result (or any Selectable) to a SubscriberStateTable:
    a new proxy whose pop() and pops() read the table."""
    return cast_selectable(temp, SubscriberStateTable, "CastSelectableToSubscriberTableObj")
