"""Listening to CONFIG_DB: swsscommon's ConfigDBConnector.subscribe/unsubscribe/listen, and the
same changes as an async iterator (events()).

Each followed table is a SubscriberStateTable (raw fields, so `field@` lists survive for
raw_to_typed) on one Select: one pub/sub connection for all tables, and after it comes back
every table is read again and what changed meanwhile is delivered (swsscommon's listen() loses
what was published while its connection was down).

A table's initial data is the SubscriberStateTable's own first read of it, not a get_table:
its keyspace events are held back until that read is done, so the read holds exactly the
entries as they were read, and the held events are then handled as changes, as swsscommon
handles the events queued behind its get_table. Hence swsscommon's cache check: the first
change of a key that is in the initial data is not fired when it equals the initial entry, and
the entry leaves the cache either way.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, NamedTuple, Protocol, TypeAlias, cast

from ..fields import DEL_COMMAND
from ..redis.connector import DBConnector
from .config_entries import ConfigKey, TypedConfig, TypedEntry
from .selector import Select
from .subscriber_state_table import SubscriberStateTable

Handler: TypeAlias = Callable[[str, ConfigKey, TypedEntry | None], Awaitable[Any] | Any]
"""handler(table, key, data): a plain function, or a coroutine function (awaited)."""
InitDataHandler: TypeAlias = Callable[[TypedConfig], Awaitable[Any] | Any]
"""init_data_handler({table: {key: entry}}): a plain function, or a coroutine function."""
Change: TypeAlias = tuple[str, str, TypedEntry | None]


class TypedTables(Protocol):
    """What listening reads through: ConfigDBConnector's database and its typing of keys and
    entries (so listened entries are typed as its get_* type them)."""

    @property
    def db(self) -> DBConnector: ...
    def deserialize_key(self, key: str) -> ConfigKey: ...
    def _typed_entry(self, raw: Mapping[str, str]) -> TypedEntry: ...
    def _typed_rows(self, rows: Mapping[str, Mapping[str, str]]) -> dict[ConfigKey, TypedEntry]: ...


class ConfigEvent(NamedTuple):
    """One change of a followed table; `data` is the typed entry, None once the key is gone."""

    table: str
    key: ConfigKey
    data: TypedEntry | None


class _ListenedTable(SubscriberStateTable):
    """A followed table: subscribed on creation; its keyspace events wait while its existing
    entries are read, so nothing but that read makes it ready until the read is done."""

    def __init__(self, db: DBConnector, name: str, select: Select) -> None:
        super().__init__(db, name, raw_fields=True)
        #: events that came while the existing entries are read; None once they are read
        self._held_events: list[tuple[str, str]] | None = []
        self.subscribed = select.add(self)

    @property
    def reading_initial(self) -> bool:
        return self._held_events is not None

    def on_message(self, channel: str, data: str) -> None:
        if self._held_events is not None:
            self._held_events.append((channel, data))
        else:
            super().on_message(channel, data)

    async def read_initial(self) -> dict[str, dict[str, str]]:
        """The table's entries, row -> hash, read after the subscription is in place (a write
        between the two is in the read or in an event); then the held events go in."""
        await self.subscribed
        rows: dict[str, dict[str, str]] = {}
        while self.ready:
            for row, op, fvs in await self.pops():
                if op == DEL_COMMAND:  # only after a pub/sub reconnect during the read
                    rows.pop(row, None)
                else:
                    rows[row] = dict(fvs)
        held, self._held_events = self._held_events or [], None
        for channel, data in held:
            super().on_message(channel, data)
        return rows


class _InitialData:
    """swsscommon listen()'s init_data cache, which keeps a key's first change from repeating
    its initial entry. Looked up with the key as given: listen() gives the row string, so, as
    in swsscommon, entries of tuple keys are never hit."""

    def __init__(self, data: Mapping[str, Mapping[ConfigKey, TypedEntry]]) -> None:
        self._data = {table: dict(rows) for table, rows in data.items()}

    def hit(self, table: str, key: ConfigKey, data: TypedEntry | None) -> bool:
        """Whether this first change of a cached entry repeats it; the entry leaves the cache."""
        rows = self._data.get(table)
        if rows is None or key not in rows:
            return False
        hit = rows.pop(key) == data
        if not rows:
            del self._data[table]
        return hit


class _Listening:
    """The followed tables of one listen() or events(), on one Select."""

    def __init__(self, connector: TypedTables) -> None:
        self.connector = connector
        self.select = Select()
        self.tables: dict[str, _ListenedTable] = {}
        self.stopping = False
        self._waiting: asyncio.Future[Any] | None = None

    def follow(self, name: str) -> None:
        if name not in self.tables:
            self.tables[name] = _ListenedTable(self.connector.db, name, self.select)

    def drop(self, name: str) -> None:
        table = self.tables.pop(name, None)
        if table is not None:
            self.select.remove(table)

    @property
    def keyspace_events(self) -> bool | None:
        """False when Redis does not publish the keyspace events of some table (said in the log
        as each table subscribes), None when not known (yet)."""
        known = [table.keyspace_events for table in self.tables.values()]
        if False in known:
            return False
        return None if None in known or not known else True

    async def read_initial(self, names: list[str]) -> dict[str, dict[ConfigKey, TypedEntry]]:
        """Each table's entries as get_table types and orders them; the tables read concurrently."""
        reads = [asyncio.ensure_future(self.tables[name].read_initial()) for name in names]
        try:
            rows = await asyncio.gather(*reads)
        except BaseException:
            for read in reads:
                read.cancel()
            raise
        return {name: self.connector._typed_rows(r) for name, r in zip(names, rows)}

    async def next_changes(self) -> list[Change]:
        """The changes of the next table with any, as (table, row, data); [] once stopping."""
        while not self.stopping:
            self._waiting = waiting = asyncio.ensure_future(self.select.select())
            try:
                table = await waiting
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if self.stopping and task is not None and not task.cancelling():
                    return []  # stop() woke us, not a cancellation of our task
                raise
            finally:
                self._waiting = None
            assert isinstance(table, _ListenedTable)
            if table.reading_initial:
                # followed since listening began: from now on, its entries are not changes
                await table.read_initial()
                continue
            typed = self.connector._typed_entry
            changes = [
                (table.name, row, None if op == DEL_COMMAND else typed(dict(fvs)))
                for row, op, fvs in await table.pops()
            ]
            if changes:
                return changes
        return []

    def stop(self) -> None:
        """Make next_changes() return [] now, or when it is next called."""
        self.stopping = True
        if self._waiting is not None:
            self._waiting.cancel()

    async def close(self) -> None:
        self.stop()
        await self.select.close()


def _copy(entry: TypedEntry) -> TypedEntry:
    """The caller's own entry: handlers may change it without changing the cache it is checked
    against."""
    return {field: list(value) if isinstance(value, list) else value for field, value in entry.items()}


async def _call(function: Callable[..., Any], *args: Any) -> None:
    """Call a handler; await what it returns when that is awaitable (a coroutine function's call)."""
    result = function(*args)
    if inspect.isawaitable(result):
        await result


class ConfigDBListening:
    """swsscommon ConfigDBConnector's subscribe/unsubscribe/listen, for ConfigDBConnector (whose
    db, deserialize_key, _typed_entry and _typed_rows it uses: entries typed as get_* type them).

    `handlers` and `fire_init_data` are swsscommon's attributes of the same names.
    """

    def __init__(self) -> None:
        #: table -> handler(table, key, data), called by listen()
        self.handlers: dict[str, Handler] = {}
        #: table -> whether listen() passes the table's existing entries through its handler
        self.fire_init_data: dict[str, bool] = {}
        self._listening: _Listening | None = None

    def subscribe(self, table: str, handler: Handler, fire_init_data: bool = False) -> None:
        """Have listen() call `handler(table, key, data)` for each change of `table` (again:
        the handler is replaced). With fire_init_data, listen() first passes the table's
        existing entries through it, else they go to its init_data_handler, if any.

        While listen() runs, the table is followed once its subscription is in place, its
        existing entries neither fired nor passed on (swsscommon reads initial data only when
        listen() starts)."""
        self.handlers[table] = handler
        self.fire_init_data[table] = fire_init_data
        if self._listening is not None:
            self._listening.follow(table)

    def unsubscribe(self, table: str) -> None:
        """No more handler calls for `table`, also from a running listen()."""
        self.handlers.pop(table, None)
        if self._listening is not None:
            self._listening.drop(table)

    async def listen(self, init_data_handler: InitDataHandler | None = None) -> None:
        """Call the subscribed handlers with every change until stop() (then return), until
        cancelled, or until a handler or Redis raises (the pub/sub connection is closed in every
        case). Handlers may be coroutine functions: awaited, one call at a time, in order.

        As swsscommon's listen(): first the existing entries of every fire_init_data table go
        through its handler (keys as deserialize_key gives them), then init_data_handler gets
        `{table: {key: entry}}` of the other tables, if it is given; then changes, as
        `handler(table, row, data)` with the row string as key (not deserialized, as in
        swsscommon) and the typed entry, None when the key is gone. A key's first change is not
        fired when it equals the key's initial entry (the initial data of tables that went to a
        handler or to init_data_handler); with tuple keys the row string never matches, so, as
        in swsscommon, such a change is fired.

        Beyond swsscommon:
        - entries are read when their change is handled: several writes to a key in between
          are one change (swsscommon reads once per keyspace event: the same latest entry,
          once per event);
        - a key that is gone (deleted, expired, evicted, renamed, its last field HDEL'd) is one
          change with data None (swsscommon gives {} for events other than `del`);
        - after the pub/sub connection comes back, what changed meanwhile is delivered;
        - keys that are not hashes are logged and skipped (swsscommon's listen() raises);
        - a table's initial data and its changes both come from keys `<table><sep>*`, the table
          name as given (swsscommon reads initial data of the upper-cased name);
        - handlers get their own copies of initial entries.
        A Redis that does not publish keyspace events gets one warning line per table, at the
        start: initial data still comes, changes never do.
        """
        if self._listening is not None:
            raise RuntimeError(f"listen() already runs on {self!r}")
        listening = self._listening = _Listening(cast(TypedTables, self))  # mixed into it only
        try:
            tables = list(self.handlers)
            for table in tables:
                listening.follow(table)
            initial = await listening.read_initial(tables)
            init_data = {t: initial[t] for t in tables if init_data_handler is not None or self.fire_init_data[t]}
            init_callback_data: TypedConfig = {}
            for table, rows in init_data.items():
                if self.fire_init_data[table]:
                    for key, entry in rows.items():
                        await self._fire(table, key, _copy(entry))
                else:
                    init_callback_data[table] = {key: _copy(entry) for key, entry in rows.items()}
            if init_data_handler is not None:
                await _call(init_data_handler, init_callback_data)
            cache = _InitialData(init_data)
            while not listening.stopping:
                for table, row, data in await listening.next_changes():
                    if table in self.handlers and not cache.hit(table, row, data):
                        await self._fire(table, row, data)
                    if listening.stopping:
                        break
        finally:
            self._listening = None
            await listening.close()

    async def _fire(self, table: str, key: ConfigKey, data: TypedEntry | None) -> None:
        handler = self.handlers.get(table)
        if handler is not None:
            await _call(handler, table, key, data)

    def stop(self) -> None:
        """Make a running listen() return, after the handler call in progress, if any (a
        listen() task that has not started yet is not running)."""
        if self._listening is not None:
            self._listening.stop()

    def events(self, tables: Iterable[str], *, fire_init_data: bool = True) -> ConfigEvents:
        """The changes of `tables` as an async iterator of ConfigEvent: see ConfigEvents."""
        return ConfigEvents(cast(TypedTables, self), tables, fire_init_data=fire_init_data)


class ConfigEvents:
    """listen() for asyncio code: the changes of some tables as ConfigEvent(table, key, data).

        async with config_db.events(["PORT", "VLAN"]) as events:
            async for table, key, data in events:
                ...

    Entering reads the tables' entries into `initial` ({table: {key: entry}}, as get_table
    gives them) once their keyspace events are subscribed. With fire_init_data (the default)
    these entries come first, as events, then changes; without, only changes come. What comes
    is what listen() hands to handlers subscribed with the same fire_init_data and with an
    init_data_handler, with one difference: keys are always deserialize_key'd, for changes too
    (listen() passes a change's row string), so the first change of a key whose data equals
    its initial entry is never repeated, tuple keys included.

    Leaving the `async with`, or aclose(), closes the pub/sub connection; an exception or a
    cancellation while waiting for the next event closes it too. Without `async with` the
    tables are subscribed at the first iteration (and a `break` leaves the connection open
    until aclose()). Each ConfigEvents has its own Select; listen() may run beside it.
    """

    def __init__(self, connector: TypedTables, tables: Iterable[str], *, fire_init_data: bool = True) -> None:
        self.connector = connector
        self.tables = list(dict.fromkeys(tables))
        self.fire_init_data = fire_init_data
        #: {table: {key: entry}}: the tables' entries when they were read, filled by start()
        self.initial: TypedConfig = {}
        self._listening: _Listening | None = None
        self._cache = _InitialData({})
        self._ready: deque[ConfigEvent] = deque()
        self._closed = False

    @property
    def keyspace_events(self) -> bool | None:
        """False when Redis does not publish the keyspace events of some table: no change
        will come. None before start()."""
        return None if self._listening is None else self._listening.keyspace_events

    async def start(self) -> ConfigEvents:
        """Subscribe the tables and read their entries (done once; entering does it)."""
        if self._listening is not None or self._closed:
            return self
        listening = self._listening = _Listening(self.connector)
        try:
            for table in self.tables:
                listening.follow(table)
            initial = await listening.read_initial(self.tables)
        except BaseException:
            await self.aclose()
            raise
        if self._closed:
            return self
        self._cache = _InitialData(initial)
        self.initial = {t: {key: _copy(entry) for key, entry in rows.items()} for t, rows in initial.items()}
        if self.fire_init_data:
            self._ready.extend(
                ConfigEvent(table, key, _copy(entry)) for table, rows in initial.items() for key, entry in rows.items()
            )
        return self

    def __aiter__(self) -> ConfigEvents:
        return self

    async def __anext__(self) -> ConfigEvent:
        try:
            await self.start()
            deserialize = self.connector.deserialize_key
            while not self._ready:
                if self._closed or self._listening is None:
                    raise StopAsyncIteration
                for table, row, data in await self._listening.next_changes():
                    key = deserialize(row)
                    if not self._cache.hit(table, key, data):
                        self._ready.append(ConfigEvent(table, key, data))
            return self._ready.popleft()
        except StopAsyncIteration:
            raise
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop: an iteration waiting for an event ends, the pub/sub connection is closed."""
        self._closed = True
        self._ready.clear()
        if self._listening is not None:
            await self._listening.close()

    async def __aenter__(self) -> ConfigEvents:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
