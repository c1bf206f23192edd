"""ProducerStateTable: writes changes into `_TABLE:key` state hashes plus the key set, then PUBLISHes."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from typing import NamedTuple

import structlog

from ..errors import TempViewError
from ..fields import FieldValuesLike, KeyOpFieldsValues, as_field_values
from ..lua import (
    PST_APPLY_VIEW,
    PST_BATCHED_DEL,
    PST_BATCHED_SET,
    PST_BATCHED_SET_FAST,
    PST_CLEAR,
    PST_DEL,
    PST_SET,
    PST_SET_FAST,
    PST_SETS_FAST,
)
from ..redis.connector import DBConnector, ScriptCall
from ..redis.send_ahead import SendAhead
from .table import Table, TableBase, TableDump
from .temp_view import temp_view_difference

log = structlog.get_logger(__name__)

SetEntry = tuple[str, FieldValuesLike] | KeyOpFieldsValues


class _QueuedSet(NamedTuple):
    """A buffered producer's fast set, kept as its key and flat fields until flush() sends it with
    the sets next to it: its script call is only built there, once for the whole run."""

    key: str
    flat: list[str]


class ProducerStateTable(TableBase):
    """The producer side of SONiC's state-table channel, with the C++ library's EVALSHA arguments.

    With `buffered=True` nothing is sent until `flush()`, which pipelines every queued call in order.
    Between `create_temp_view()` and `apply_temp_view()` writes go to memory only; applying sends
    the minimal set/del diff against the current table in one EVALSHA.

    With `fast_scripts=True`, set and set_many run swssd's own scripts (`swssd/lua/*_fast.lua`):
    the same key set, state hashes and PUBLISH as the C++ scripts, with one HSET per entry instead
    of one per field (and one SADD per batch); a C++ consumer reads them as usual. Keyspace
    events differ (one `hset` per entry). Off by default: the default is byte-identical to C++.

    With `send_ahead=N`, a write returns once it is sent, while up to N writes before it still
    wait for Redis's answer (past that it waits for the oldest): the program builds its next
    call while Redis runs this one, where the C++ library (and the default) waits for each
    answer. The same EVALSHAs in the same order. An error reply comes with a later write, or
    with flush(), which waits for every answer (so do clear(), count(), apply_temp_view()). A
    write lost with the connection is sent again in order, as without it (see SendAhead). Off
    by default; not with `buffered`, which already sends its writes together.
    """

    def __init__(
        self, db: DBConnector, name: str, buffered: bool = False, fast_scripts: bool = False, *, send_ahead: int = 0
    ) -> None:
        if send_ahead < 0:
            raise ValueError(f"send_ahead must be a number of writes >= 0, not {send_ahead!r}")
        if send_ahead and buffered:
            raise ValueError("send_ahead is for an unbuffered producer: a buffered one sends its writes at flush()")
        super().__init__(db, name)
        self.buffered = buffered
        self.fast_scripts = fast_scripts
        self._ahead = SendAhead(db, send_ahead) if send_ahead else None
        self._queued: list[ScriptCall | _QueuedSet] = []
        self._temp_view: TableDump | None = None

    # -- writes -------------------------------------------------------------------------

    async def set(self, key: str, fvs: FieldValuesLike, op: str = "SET", prefix: str = "") -> None:
        """Set fields of one entry (op and prefix are accepted for C++ parity and unused, as there)."""
        pairs = as_field_values(fvs)
        if self._temp_view is not None:
            if pairs:
                self._temp_view.setdefault(key, {}).update(pairs)
            return
        if self.fast_scripts and self.buffered:
            self._queued.append(_QueuedSet(key, [*chain.from_iterable(pairs)]))  # fields copied now
            return
        state_hash = self.state_prefix + self.key_name(key)
        args = ["G", key, *chain.from_iterable(pairs)]
        if self.fast_scripts:
            call: ScriptCall = (PST_SET_FAST, [self.channel, self.key_set, state_hash], args)
        else:
            call = (PST_SET, [self.channel, self.key_set, *([state_hash] * len(pairs))], args)
        if self.buffered:
            self._queued.append(call)
        elif self._ahead is not None:
            await self._ahead.send(call)
        else:  # straight to the connector, not through _send: one coroutine less per call
            await self.db.evalsha(*call)

    async def delete(self, key: str, op: str = "DEL", prefix: str = "") -> None:
        """Delete one entry: the consumer removes it from its table on the next pop."""
        if self._temp_view is not None:
            self._temp_view.pop(key, None)
            return
        keys = [self.channel, self.key_set, self.state_prefix + self.key_name(key), self.del_set]
        await self._send((PST_DEL, keys, ["G", key, "''", "''"]))

    async def set_many(self, entries: Iterable[SetEntry]) -> None:
        """Set many entries in one EVALSHA (the C++ batched set)."""
        if self._temp_view is not None:
            for entry in entries:
                pairs = as_field_values(entry[-1])
                if pairs:
                    self._temp_view.setdefault(entry[0], {}).update(pairs)
            return
        keys = [self.channel, self.key_set, self._state_table_prefix()]
        args: list[str | int] = ["G"]
        for entry in entries:  # one pass: this loop is most of set_many's Python time
            pairs = as_field_values(entry[-1])
            keys.append(entry[0])
            args.append(str(len(pairs)))  # a str, as the arguments around it: wire.pack_command
            for pair in pairs:
                args += pair  # (field, value): faster than chain.from_iterable for a few pairs
        if len(keys) > 3:
            await self._send((PST_BATCHED_SET_FAST if self.fast_scripts else PST_BATCHED_SET, keys, args))

    async def delete_many(self, keys: Iterable[str]) -> None:
        """Delete many entries in one EVALSHA (the C++ batched del)."""
        batch = list(keys)
        if self._temp_view is not None:
            for key in batch:
                self._temp_view.pop(key, None)
            return
        if not batch:
            return
        script_keys = [self.channel, self.key_set, self.del_set, self._state_table_prefix(), *batch]
        await self._send((PST_BATCHED_DEL, script_keys, ["G"]))

    async def flush(self) -> None:
        """Send everything a buffered producer has queued, in order, in one pipeline; with
        send_ahead, wait for the answers to every write sent.

        With fast scripts, each run of consecutive single sets goes as one script call with their
        effect (producer_state_table_sets_fast.lua: the same hashes, key set and PUBLISHes, one per
        key the key set did not hold): one EVALSHA instead of one per set."""
        if self._ahead is not None:
            await self._ahead.wait()
        queued, self._queued = self._queued, []
        await self.db.evalsha_many(self._script_calls(queued))

    async def clear(self) -> None:
        """Drop every pending change of this table (key set, del set, state hashes)."""
        await self.flush()
        await self.db.evalsha(
            PST_CLEAR, [self.key_set, self.state_prefix + self.name, self.del_set], []
        )

    async def count(self) -> int:
        """How many entries wait in the key set for a consumer."""
        await self.flush()
        return int(await self.db.redis.execute_command("SCARD", self.key_set))

    # -- temp view ----------------------------------------------------------------------

    def create_temp_view(self) -> None:
        """Start collecting the table's target state in memory; a second call discards the first view."""
        if self._temp_view is not None:
            log.warning(
                "temp view replaced", table=self.name, discarded=len(self._temp_view)
            )
        self._temp_view = {}

    async def apply_temp_view(self) -> None:
        """Publish only the difference between the current table and the temp view (C++ semantics)."""
        if self._temp_view is None:
            raise TempViewError(
                f"apply_temp_view() called for table {self.name} without a temp view; "
                "call create_temp_view() first"
            )
        target = self._temp_view
        await self.clear()
        current = await Table(self.db, self.name).dump()
        keys_to_set, keys_to_del = temp_view_difference(current, target)

        script_keys = [self.channel, self.key_set, self.del_set]
        args: list[str | int] = ["G", len(keys_to_set), *keys_to_set, len(keys_to_del), *keys_to_del]
        for key in sorted(target):
            script_keys.append(self.state_prefix + self.key_name(key))
            fields = target[key]
            args.append(len(fields))
            for field in sorted(fields):
                args += (field, fields[field])
        await self.db.evalsha(PST_APPLY_VIEW, script_keys, args)
        self._temp_view = None

    @property
    def temp_view_active(self) -> bool:
        return self._temp_view is not None

    # -- internals ----------------------------------------------------------------------

    def _state_table_prefix(self) -> str:
        return f"{self.state_prefix}{self.name}{self.separator}"

    def _script_calls(self, queued: list[ScriptCall | _QueuedSet]) -> list[ScriptCall]:
        """What flush() sends, in order: each run of consecutive queued fast sets as one call
        (_sets_call), everything else as it was queued."""
        calls: list[ScriptCall] = []
        run: list[_QueuedSet] = []
        for item in queued:
            if isinstance(item, _QueuedSet):
                run.append(item)
                continue
            if run:
                calls.append(self._sets_call(run))
                run = []
            calls.append(item)
        if run:
            calls.append(self._sets_call(run))
        return calls

    def _sets_call(self, run: list[_QueuedSet]) -> ScriptCall:
        """One fast set as its set script call; several as one call of the sets script, which
        sends one PUBLISH per key the key set did not hold, as the separate calls would have."""
        head = [self.channel, self.key_set]
        prefix = self.state_prefix
        if len(run) == 1:
            key, flat = run[0]
            return (PST_SET_FAST, [*head, prefix + self.key_name(key)], ["G", key, *flat])
        keys: list[str | int] = [*head]
        args: list[str | int] = ["G"]
        for key, flat in run:
            keys.append(prefix + self.key_name(key))
            args += (key, str(len(flat) // 2), *flat)
        return (PST_SETS_FAST, keys, args)

    async def _send(self, call: ScriptCall) -> None:
        if self.buffered:
            self._queued.append(call)
        elif self._ahead is not None:
            await self._ahead.send(call)
        else:
            script, keys, args = call
            await self.db.evalsha(script, keys, args)

