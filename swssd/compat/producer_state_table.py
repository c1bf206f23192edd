"""ProducerStateTable: writes to a table's key set and state hashes with the C++ library's Lua
scripts (swssd/lua) and the same EVALSHA arguments, so a C++ or swssd ConsumerStateTable pops them.

It writes through a RedisPipeline, its own connection unless one is given: not buffered, each
write is one EVALSHA round trip; buffered (setBuffered(True), or a pipeline given with
buffered=True) writes wait in the pipeline until flush() or until it is full, then go in one
write. Between create_temp_view() and apply_temp_view() writes go to a view in memory; applying
it publishes only what differs from the table as the C++ table_dump script reads it (which sees
only ':' tables, as in C++).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from ..channels.config_entries import cpp_order
from ..channels.temp_view import temp_view_difference
from ..lua import PST_APPLY_VIEW, PST_BATCHED_DEL, PST_BATCHED_SET, PST_CLEAR, PST_DEL, PST_SET, TABLE_DUMP, Script
from ..schema import DEL_SET_SUFFIX, KEY_SET_SUFFIX, STATE_PREFIX
from .arguments import set_pairs
from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .redis_pipeline import RedisPipeline
from .table import TableBase

log = logging.getLogger(__name__)


class ProducerStateTable(TableBase):
    """ProducerStateTable(db, tableName), or ProducerStateTable(pipeline, tableName, buffered)."""

    def __init__(self, db: DBConnector | RedisPipeline, tableName: str, buffered: bool = False) -> None:
        pipe = db if isinstance(db, RedisPipeline) else RedisPipeline(db, 1)
        super().__init__(tableName, SonicDBConfig.getSeparator(pipe.getDBConnector()))
        self._pipe = pipe
        self._buffered = buffered and isinstance(db, RedisPipeline)
        self._channel = self.getChannelName(pipe.getDbId())
        self._key_set = tableName + KEY_SET_SUFFIX
        self._del_set = tableName + DEL_SET_SUFFIX
        self._temp_view: dict[str, dict[str, str]] | None = None
        pipe.flush()
        pipe.connection.load_scripts(PST_SET, PST_DEL, PST_BATCHED_SET, PST_BATCHED_DEL, PST_CLEAR, PST_APPLY_VIEW)

    def getKeySetName(self) -> str:
        return self._key_set

    def getDelKeySetName(self) -> str:
        return self._del_set

    def getStateHashPrefix(self) -> str:
        return STATE_PREFIX

    def getDbConnector(self) -> DBConnector:
        return self._pipe.getDBConnector()

    def setBuffered(self, buffered: bool) -> None:
        self._buffered = buffered

    def _call(self, script: Script, keys: list[str], args: list[Any]) -> None:
        self._pipe.evalsha(script, keys, args, self._buffered)

    def set(self, key: str, values: Iterable[tuple[str, str]], op: str = "SET", prefix: str = "") -> None:
        """Set fields of one entry (op and prefix unused, as in C++)."""
        flat = set_pairs("ProducerStateTable_set", key, values, op, prefix)
        if self._temp_view is not None:
            self._temp_view.setdefault(key, {}).update(zip(flat[::2], flat[1::2]))
            return
        state_hash = STATE_PREFIX + self.getKeyName(key)
        self._call(PST_SET, [self._channel, self._key_set, *([state_hash] * (len(flat) // 2))], ["G", key, *flat])

    def delete(self, key: str | Sequence[str], op: str = "DEL", prefix: str = "") -> None:
        """Delete one entry, or a list of entries in one batched EVALSHA."""
        if self._temp_view is not None:
            for gone in [key] if isinstance(key, str) else key:
                self._temp_view.pop(gone, None)
            return
        if isinstance(key, str):
            keys = [self._channel, self._key_set, STATE_PREFIX + self.getKeyName(key), self._del_set]
            self._call(PST_DEL, keys, ["G", key, "''", "''"])
            return
        state_prefix = STATE_PREFIX + self.getTableName() + self.getTableNameSeparator()
        self._call(PST_BATCHED_DEL, [self._channel, self._key_set, self._del_set, state_prefix, *key], ["G"])

    def _del(self, key: str | Sequence[str], op: str = "DEL", prefix: str = "") -> None:
        """The name older SWIG gave `del`."""
        self.delete(key, op, prefix)

    def set_many(self, entries: Iterable[tuple[str, Iterable[tuple[str, str]]]]) -> None:
        """Several entries in one EVALSHA (the C++ batched set of KeyOpFieldsValuesTuples)."""
        if self._temp_view is not None:
            for key, values in entries:
                self.set(key, values)
            return
        keys = [self._channel, self._key_set, STATE_PREFIX + self.getTableName() + self.getTableNameSeparator()]
        args: list[Any] = ["G"]
        for key, values in entries:
            flat = set_pairs("ProducerStateTable_set", key, values)
            keys.append(key)
            args += [str(len(flat) // 2), *flat]
        self._call(PST_BATCHED_SET, keys, args)

    def flush(self) -> None:
        """Send the buffered writes in one write, then read their answers."""
        self._pipe.flush()

    def count(self) -> int:
        """Keys changed and not popped yet (SCARD of the key set)."""
        return int(self._pipe.read("SCARD", self._key_set))

    def clear(self) -> None:
        """Drop everything pending: the key set, the state hashes, the del set."""
        self._pipe.evalsha(PST_CLEAR, [self._key_set, STATE_PREFIX + self.getTableName(), self._del_set], [], False)

    def create_temp_view(self) -> None:
        """Collect the following writes in memory (a view started before is dropped)."""
        if self._temp_view is not None:
            log.warning("create_temp_view() called for table %s when another temp view is under work, "
                        "%d objects in existing temp view will be discarded.",
                        self.getTableName(), len(self._temp_view))
        self._temp_view = {}

    def apply_temp_view(self) -> None:
        """Make the table what the view holds: pending changes dropped (clear), then one EVALSHA
        that sets the keys that differ and deletes those gone or missing fields, as C++ does."""
        if self._temp_view is None:
            raise RuntimeError(f"apply_temp_view() called for table {self.getTableName()}, "
                               "however no temp view was created.")
        target = self._temp_view
        self.clear()
        self._pipe.flush()
        dumped = json.loads(self._pipe.connection.evalsha(TABLE_DUMP, [self.getTableName()], ["''"]))
        start = len(self.getTableName()) + 1
        current = {key[start:]: {f: v for f, v in fields.items() if f != "NULL"} for key, fields in dumped.items()}
        keys_to_set, keys_to_del = temp_view_difference(current, target)
        script_keys = [self._channel, self._key_set, self._del_set]
        args: list[Any] = ["G", len(keys_to_set), *keys_to_set, len(keys_to_del), *keys_to_del]
        for key in sorted(target, key=cpp_order):
            fields = target[key]
            script_keys.append(STATE_PREFIX + self.getKeyName(key))
            args.append(len(fields))
            for field in sorted(fields, key=cpp_order):
                args += (field, fields[field])
        self._pipe.evalsha(PST_APPLY_VIEW, script_keys, args, False)
        self._temp_view = None
