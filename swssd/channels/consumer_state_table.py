"""ConsumerStateTable: pops changed entries out of the key set with the C++ pops script."""

from __future__ import annotations

from typing import Any

from ..fields import DEL_COMMAND, SET_COMMAND, KeyOpFieldsValues
from ..lua import CST_POPS, CST_POPS_FAST, CST_POPS_TRACKED
from ..redis.connector import DBConnector
from .consumer_base import ConsumerTableBase


class ConsumerStateTable(ConsumerTableBase):
    """The consumer side of the state-table channel.

    Each popped entry carries only the fields changed since the last pop; an entry whose state
    hash is empty comes as DEL. The script also moves the fields into `TABLE<sep>key`.

    When a key is deleted and set again between two pops, the C++ script returns one SET with
    the new fields while the old entry is gone from the table. With `track_deletes=True` swssd's
    own variant of the script (same effect on Redis) reports that as DEL followed by SET, which
    is what a capture needs to be replayed exactly.

    With `fast_scripts=True` the pops run swssd's own script (`consumer_state_table_pops_fast.lua`):
    the same changes to Redis and the same entries (tracked, as above) in fewer commands: one HSET
    per entry instead of one per field, one DEL of the batch's state hashes. Off by default.

    `prefetch=True` (or a number of pops): see ConsumerTableBase (the next pops run in Redis while
    the caller works).
    """

    def __init__(
        self,
        db: DBConnector,
        name: str,
        pop_batch_size: int = 128,
        priority: int = 0,
        track_deletes: bool = False,
        fast_scripts: bool = False,
        *,
        prefetch: int = 0,
    ) -> None:
        super().__init__(db, name, pop_batch_size, priority, prefetch=prefetch)
        self.track_deletes = track_deletes
        self.fast_scripts = fast_scripts

    async def has_pending(self) -> bool:
        return int(await self.db.redis.execute_command("SCARD", self.key_set)) > 0

    async def _pop_batch(self) -> list[Any]:
        keys = [self.key_set, self.name + self.separator, self.del_set]
        args: list[str | int] = [self.pop_batch_size, self.state_prefix]
        script = CST_POPS_FAST if self.fast_scripts else CST_POPS_TRACKED if self.track_deletes else CST_POPS
        return await self.db.evalsha(script, keys, args, resend=False)  # type: ignore[no-any-return]

    def parse(self, reply: list[Any]) -> list[KeyOpFieldsValues]:
        if not reply:
            return []
        if not self.track_deletes:
            return _parse_untracked(reply)
        make = _new_task
        out: list[KeyOpFieldsValues] = []
        for key, flat, deleted in reply:
            task = make(key, _pairs(flat))
            if deleted and task.fvs:
                out.append(make(key, []))
            out.append(task)
        return out


def _parse_untracked(
    reply: list[Any], new: Any = tuple.__new__, cls: type = KeyOpFieldsValues, zip: Any = zip, iter: Any = iter
) -> list[KeyOpFieldsValues]:
    """A reply of [key, [field, value, ...], ...] entries as tasks: the hot path of a drain, one
    comprehension with its names bound as defaults (a quarter less time than a call per entry)."""
    return [
        new(cls, (entry[0], SET_COMMAND if entry[1] else DEL_COMMAND, list(zip(it, it))))
        for entry in reply
        for it in (iter(entry[1]),)
    ]


def _pairs(flat: list[str]) -> list[tuple[str, str]]:
    """Field/value pairs of a flat list (JSON writes an empty one as {})."""
    it = iter(flat)
    return list(zip(it, it))


def _new_task(key: str, fvs: list[tuple[str, str]]) -> KeyOpFieldsValues:
    """SET with fields, DEL without; tuple.__new__ skips NamedTuple's Python-level __new__ (hot path)."""
    return tuple.__new__(KeyOpFieldsValues, (key, SET_COMMAND if fvs else DEL_COMMAND, fvs))
