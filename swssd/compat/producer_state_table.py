"""ProducerStateTable: writes to a table's key set and state hashes with the C++ library's Lua
scripts (swssd/lua) and the same EVALSHA arguments, so a C++ or swssd ConsumerStateTable pops them.

Not buffered, each write is one EVALSHA round trip; setBuffered(True) keeps writes until flush()
(or a non-buffered write) sends them in one go. The temporary view (create_temp_view /
apply_temp_view) is not provided yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..lua import PST_APPLY_VIEW, PST_BATCHED_DEL, PST_BATCHED_SET, PST_CLEAR, PST_DEL, PST_SET, Script
from ..schema import DEL_SET_SUFFIX, KEY_SET_SUFFIX, STATE_PREFIX
from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .table import TableBase, flat_pairs


class ProducerStateTable(TableBase):
    """ProducerStateTable(db, tableName)."""

    def __init__(self, db: DBConnector, tableName: str) -> None:
        super().__init__(tableName, SonicDBConfig.getSeparator(db))
        self._db = db
        self._conn = db.connection
        self._buffered = False
        self._queued: list[tuple[Script, list[str], list[Any]]] = []
        self._channel = self.getChannelName(db.getDbId())
        self._key_set = tableName + KEY_SET_SUFFIX
        self._del_set = tableName + DEL_SET_SUFFIX
        self._conn.load_scripts(PST_SET, PST_DEL, PST_BATCHED_SET, PST_BATCHED_DEL, PST_CLEAR, PST_APPLY_VIEW)

    def getKeySetName(self) -> str:
        return self._key_set

    def getDelKeySetName(self) -> str:
        return self._del_set

    def getStateHashPrefix(self) -> str:
        return STATE_PREFIX

    def getDbConnector(self) -> DBConnector:
        return self._db

    def setBuffered(self, buffered: bool) -> None:
        self._buffered = buffered

    def _call(self, script: Script, keys: list[str], args: list[Any]) -> None:
        if self._buffered:
            self._queued.append((script, keys, args))
            return
        if self._queued:
            self.flush()
        self._conn.evalsha(script, keys, args)

    def set(self, key: str, values: Iterable[tuple[str, str]], op: str = "SET", prefix: str = "") -> None:
        """Set fields of one entry (op and prefix unused, as in C++)."""
        flat = flat_pairs(values)
        state_hash = STATE_PREFIX + self.getKeyName(key)
        self._call(PST_SET, [self._channel, self._key_set, *([state_hash] * (len(flat) // 2))], ["G", key, *flat])

    def delete(self, key: str | Sequence[str], op: str = "DEL", prefix: str = "") -> None:
        """Delete one entry, or a list of entries in one batched EVALSHA."""
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
        keys = [self._channel, self._key_set, STATE_PREFIX + self.getTableName() + self.getTableNameSeparator()]
        args: list[Any] = ["G"]
        for key, values in entries:
            flat = flat_pairs(values)
            keys.append(key)
            args += [str(len(flat) // 2), *flat]
        self._call(PST_BATCHED_SET, keys, args)

    def flush(self) -> None:
        """Send the buffered writes in one write, then read their answers."""
        queued, self._queued = self._queued, []
        self._conn.evalsha_many(queued)

    def count(self) -> int:
        """Keys changed and not popped yet (SCARD of the key set)."""
        return int(self._conn.command("SCARD", self._key_set))

    def clear(self) -> None:
        """Drop everything pending: the key set, the state hashes, the del set."""
        self.flush()
        self._conn.evalsha(PST_CLEAR, [self._key_set, STATE_PREFIX + self.getTableName(), self._del_set], [])
