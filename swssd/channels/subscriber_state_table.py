"""SubscriberStateTable: a table written with plain hash writes, followed by keyspace events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import structlog
from redis.exceptions import NoPermissionError, ResponseError

from ..errors import KeyspaceEventsOffError
from ..fields import DEL_COMMAND, SET_COMMAND, FieldValues, KeyOpFieldsValues
from ..redis.connector import DBConnector
from ..redis.scan import glob_escape
from .selectable import Selectable, Subscription
from .table import TableBase, strip_special

log = structlog.get_logger(__name__)

#: Keyspace events after which a key is gone without a `del` event of its own.
_GONE_EVENTS = frozenset({"del", "expired", "evicted", "rename_from", "move_from"})
#: Keys a start-up or resync read asks SCAN for, and HGETALLs sent in one pipeline: small
#: enough that handling one chunk never holds the event loop long (BENCHMARKS.md).
_SCAN_COUNT = 256
_READ_CHUNK = 256
#: At most this many characters of a bad key in a log line.
_EXCERPT = 200


def keyspace_events_sufficient(flags: str) -> bool:
    """Whether `notify-keyspace-events` publishes keyspace events for hash and generic commands."""
    return "K" in flags and ("A" in flags or ("g" in flags and "h" in flags))


class SubscriberStateTable(Selectable, TableBase):
    """The C++ SubscriberStateTable: SET with the entry's full fields for every keyspace event of
    `TABLE<sep>key`, DEL when the key was deleted; existing entries come first, as SETs.

    PSUBSCRIBEs `__keyspace@<db id>__:TABLE<sep>*` on Select's shared pub/sub connection. As in
    C++, an entry is read with HGETALL when it is popped (so it carries the fields of that moment),
    a key that reads back empty without a delete is skipped, and field names are cut at their
    first '@' as C++ Table::get does (`raw_fields=True` keeps them, for ConfigDBConnector).

    Beyond C++:
    - several events for one key before a pop cost one read, and a batch's reads are pipelined;
      a key deleted and set again between two pops comes as DEL then SET;
    - pops() returns at most `pop_batch_size` changes (C++ returns everything buffered); one
      that raises (a connection dropped during a read) keeps what it had gathered for the next;
    - after the pub/sub connection comes back, the table is read again and what differs from
      what was delivered is delivered (SET for new or changed entries, DEL for every delivered
      key that vanished, whether or not an event of it was waiting to be popped: the table
      remembers which keys it delivered as present, one small hash per key);
      events of an expired, evicted or renamed key count as its deletion;
    - a key under the table's prefix that is not a hash is logged, counted and skipped;
    - keyspace events are checked again after every reconnect, before the table is read again:
      with `enable_keyspace_events` they are turned on again (a restarted Redis forgets a CONFIG
      SET), without it pops() raises KeyspaceEventsOffError instead of going on deaf
      (`raise_when_deaf=False`: the daemon, which reports it in /health, goes on reading).

    Deleted-and-set-again is seen only through the `del` event: unlike the key-set channel, a
    keyspace consumer sees the writes, not the writer's intent.
    """

    def __init__(
        self,
        db: DBConnector,
        name: str,
        pop_batch_size: int = 128,
        priority: int = 0,
        *,
        raw_fields: bool = False,
        enable_keyspace_events: bool = False,
        raise_when_deaf: bool = True,
    ) -> None:
        Selectable.__init__(self, db, pop_batch_size, priority)
        TableBase.__init__(self, db, name)
        self.raw_fields = raw_fields
        self.enable_keyspace_events = enable_keyspace_events
        self.raise_when_deaf = raise_when_deaf
        #: a reconnect happened: keyspace events are checked before the table is read again
        self._recheck = False
        self._refusal_told = False
        self.prefix = f"{name}{self.separator}"
        self._channel_prefix = f"__keyspace@{db.db_id}__:{self.prefix}"
        self._channel_prefix_len = len(self._channel_prefix)
        self._pattern = f"__keyspace@{db.db_id}__:{glob_escape(self.prefix)}*"
        #: keys with events since their last read -> whether one of the events deleted the key
        self._pending: dict[str, bool] = {}
        #: hash of the fields last delivered per existing key (what a resync compares against)
        self._delivered: dict[str, int] = {}
        self._resync_needed = True
        self._resync: AsyncIterator[list[KeyOpFieldsValues]] | None = None
        self._read_before = False
        #: entries of the table's first read still in the buffer, and whether the read running is it
        self._existing_buffered = 0
        self._first_read = False
        #: how many of the last pops()'s first entries were existing entries (the table's first
        #: read), not changes: a tool that counts changes (`swssd watch --count`) skips them
        self.existing_popped = 0
        #: entries set aside: not a hash, or an event on a channel outside the table
        self.bad_entries = 0
        #: times the table was read again after a pub/sub reconnect
        self.resyncs = 0
        #: whether Redis publishes the keyspace events this table needs (None: not known)
        self.keyspace_events: bool | None = None

    # -- Select's side ------------------------------------------------------------------

    @property
    def subscription(self) -> Subscription:
        return Subscription(self._pattern, pattern=True)

    @property
    def ready(self) -> bool:
        return bool(self._buffer) or bool(self._pending) or self._resync_needed or self._resync is not None

    def on_message(self, channel: str, data: str) -> None:
        if not channel.startswith(self._channel_prefix):
            self.bad_entries += 1
            log.error("keyspace event outside the table", table=self.name, channel=channel[:_EXCERPT])
            return
        key = channel[self._channel_prefix_len:]
        pending = self._pending
        if data in _GONE_EVENTS:
            pending[key] = True
        elif key not in pending:
            pending[key] = False

    def on_resubscribed(self) -> None:
        self._recheck = True
        self._resync_needed = True

    async def on_subscribed(self) -> None:
        await self.check_keyspace_events()
        self._resync_needed = True

    # -- popping ------------------------------------------------------------------------

    async def pops(self) -> list[KeyOpFieldsValues]:
        """Up to pop_batch_size changes: entries found by a (re)read of the table first, then
        the keys that had events, each read once."""
        out: list[KeyOpFieldsValues] = []
        self.existing_popped = 0
        try:
            await self._pops_into(out)
        except BaseException:
            # Handed to nobody, yet counted as delivered: back in front, for the next pops()
            # (dropped, a read that failed midway once lost entries for good).
            self._buffer.extendleft(reversed(out))
            self._existing_buffered += self.existing_popped
            self.existing_popped = 0
            raise
        return out

    async def _pops_into(self, out: list[KeyOpFieldsValues]) -> None:
        want = self.pop_batch_size
        buffer = self._buffer
        while len(out) < want:
            if buffer:
                out.append(buffer.popleft())
                if self._existing_buffered:
                    self._existing_buffered -= 1
                    self.existing_popped += 1
                continue
            if self._resync_needed:
                if self._recheck:  # before the read: a change after it must raise an event
                    await self._recheck_keyspace_events()
                self._resync_needed = False
                self._first_read = not self._read_before
                self._resync = self._read_table()
            if self._resync is None:
                break
            try:
                chunk = await anext(self._resync)
                buffer.extend(chunk)
                if self._first_read:
                    self._existing_buffered += len(chunk)
            except StopAsyncIteration:
                self._resync = None
            except BaseException:
                self._resync = None
                self._resync_needed = True
                raise
        if len(out) < want and self._pending:
            out.extend(await self._read_pending(want - len(out)))

    async def _read_pending(self, count: int) -> list[KeyOpFieldsValues]:
        pending = self._pending
        taken: dict[str, bool] = {}
        for key in pending:
            taken[key] = pending[key]
            if len(taken) >= count:
                break
        for key in taken:
            del pending[key]
        try:
            entries = await self._read(list(taken))
        except BaseException:
            for key, gone in pending.items():  # events that came meanwhile stay behind ours
                taken[key] = taken.get(key, False) or gone
            self._pending = taken
            raise
        out: list[KeyOpFieldsValues] = []
        for key, gone in taken.items():
            fvs = entries.get(key)
            if gone:
                out.append(self._deleted(key))
            if fvs:
                out.append(self._set(key, fvs))
        return out

    async def _read_table(self) -> AsyncIterator[list[KeyOpFieldsValues]]:
        """The table read again, in chunks: SET where an entry differs from what was delivered,
        DEL for delivered keys that are gone. Keys with events pending are left to those, a
        delivered one found gone marked deleted: its `del` event may have been published while
        the connection was down, and the pending read alone skips a key that reads back empty."""
        if self._read_before:
            self.resyncs += 1
            log.info("re-reading table after pub/sub reconnect", table=self.name)
        seen: set[str] = set()
        cursor = 0
        match = glob_escape(self.prefix) + "*"
        plen = len(self.prefix)
        while True:
            cursor, names = await self.db.redis.execute_command(
                "SCAN", cursor, "MATCH", match, "COUNT", _SCAN_COUNT
            )
            keys = sorted({n[plen:] for n in names} - seen)
            seen.update(keys)
            entries = await self._read(keys)
            chunk: list[KeyOpFieldsValues] = []
            for key in keys:
                fvs = entries.get(key)
                if key in self._pending:
                    if not fvs and key in self._delivered:
                        self._pending[key] = True
                    continue
                if fvs:
                    if self._delivered.get(key) != hash(tuple(fvs)):
                        chunk.append(self._set(key, fvs))
                elif key in self._delivered:
                    chunk.append(self._deleted(key))
            yield chunk
            if int(cursor) == 0:
                break
        gone = []
        for key in self._delivered:
            if key in seen:
                continue
            if key in self._pending:
                self._pending[key] = True
            else:
                gone.append(key)
        self._read_before = True
        yield [self._deleted(key) for key in sorted(gone)]

    async def _read(self, keys: list[str]) -> dict[str, FieldValues]:
        """HGETALL of each key, pipelined; keys that are absent, empty or not hashes are left out."""
        out: dict[str, FieldValues] = {}
        for start in range(0, len(keys), _READ_CHUNK):
            chunk = keys[start:start + _READ_CHUNK]
            replies = await self.db.execute_many([("HGETALL", self.prefix + key) for key in chunk])
            for key, reply in zip(chunk, replies):
                if isinstance(reply, Exception):
                    self._bad_entry(key, reply)
                elif reply:
                    out[key] = self._pairs(reply)
        return out

    def _pairs(self, flat: list[str] | dict[str, str]) -> FieldValues:
        items: Any = flat.items() if isinstance(flat, dict) else zip(flat[::2], flat[1::2])
        if self.raw_fields:
            return list(items)
        return [(strip_special(f) if "@" in f else f, v) for f, v in items]

    def _set(self, key: str, fvs: FieldValues) -> KeyOpFieldsValues:
        self._delivered[key] = hash(tuple(fvs))
        # tuple.__new__ skips NamedTuple's Python-level __new__ (once per change)
        return tuple.__new__(KeyOpFieldsValues, (key, SET_COMMAND, fvs))

    def _deleted(self, key: str) -> KeyOpFieldsValues:
        self._delivered.pop(key, None)
        return tuple.__new__(KeyOpFieldsValues, (key, DEL_COMMAND, []))

    def _bad_entry(self, key: str, error: Exception) -> None:
        self.bad_entries += 1
        log.error("entry skipped: not readable as a hash", table=self.name, key=key[:_EXCERPT], error=str(error))

    # -- keyspace events ----------------------------------------------------------------

    async def _recheck_keyspace_events(self) -> None:
        """After a reconnect: on again if allowed, else raise (unless the caller reports it)."""
        sufficient = await self.check_keyspace_events()
        self._recheck = False
        if sufficient is False and self.raise_when_deaf:
            self._recheck = True
            raise KeyspaceEventsOffError(self.deaf_reason())

    def deaf_reason(self) -> str:
        """One sentence on why this table misses changes, naming the setting to fix."""
        return (f"Redis at {self.db.address} does not publish keyspace events (notify-keyspace-events lacks "
                f"K and A or g+h): table {self.name} gets no change; set notify-keyspace-events AKE in "
                "redis.conf, or enable_keyspace_events")

    async def check_keyspace_events(self) -> bool | None:
        """Whether Redis publishes the events this table lives on (None: not allowed to look).
        With `enable_keyspace_events`, they are turned on when off; turned on while the table
        was already being followed, the table is read again (events were missed meanwhile).
        Said in one line when off; a refused CONFIG GET (a minimal ACL) once. Raises what
        Redis raises when it cannot be reached."""
        try:
            reply = await self.db.redis.execute_command("CONFIG", "GET", "notify-keyspace-events")
        except NoPermissionError:
            # A minimal ACL leaves CONFIG GET out: it would read every setting, requirepass too.
            if not self._refusal_told:
                self._refusal_told = True
                log.warning("notify-keyspace-events not checked: this Redis user may not run CONFIG GET; "
                            "keyspace events must be on (AKE, as SONiC sets them) for this table's later changes",
                            table=self.name)
            return None
        except ResponseError as exc:
            if not self._refusal_told:
                self._refusal_told = True
                log.warning("cannot check notify-keyspace-events", table=self.name, error=str(exc))
            return None
        flags = _config_value(reply)
        known = self.keyspace_events
        self.keyspace_events = keyspace_events_sufficient(flags)
        if self.keyspace_events:
            if known is False and self._read_before:
                self._resync_needed = True  # on again: what changed while they were off is read
                self.wake()
            return True
        if self.enable_keyspace_events:
            wanted = flags + "".join(c for c in "Kgh" if c not in flags)
            await self.db.redis.execute_command("CONFIG", "SET", "notify-keyspace-events", wanted)
            self.keyspace_events = True
            log.info("enabled keyspace notifications", address=self.db.address, notify_keyspace_events=wanted,
                     table=self.name)
            if known is not None and self._read_before:
                self._resync_needed = True  # turned off meanwhile: what changed then is read
                self.wake()
            return True
        if known is not False:
            log.warning(
                f"Redis at {self.db.address} does not publish keyspace events (notify-keyspace-events is "
                f"{flags!r}): {self.name} gets its existing entries but no later change. Set "
                "notify-keyspace-events to AKE in redis.conf (as SONiC does), or have swssd turn them on: "
                "--enable-keyspace-events (swssd watch), enable_keyspace_events = true in [daemon] (swssd run), "
                "enable_keyspace_events=True (the library)",
                table=self.name,
            )
        return False


def _config_value(reply: Any) -> str:
    """The value of a one-parameter CONFIG GET reply (a dict with RESP3/callbacks, else a pair)."""
    if isinstance(reply, dict):
        return str(next(iter(reply.values()), ""))
    return str(reply[1]) if len(reply) > 1 else ""
