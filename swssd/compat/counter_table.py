"""CounterTable and its counter kinds (PortCounter, MacsecCounter): a counter read by object name
through the name maps of COUNTERS_DB and GB_COUNTERS_DB, as the C++ classes the binding exposes
(sonic-utilities' portstat reads port counters with `CounterTable(db).get(PortCounter(), port)`).

A counter kind maps a name to (database id, object id); the table reads `COUNTERS:<oid>` there.
A port with a gearbox (its `<name>_line` in GB_COUNTERS_DB's map), read in UNION mode, adds the
gearbox sides' error and discard counters to the ASIC's: the C++ does that in a Lua script from
the switch's /usr/share/swss; here it is two pipelined reads, the sums formatted as that script's
Lua numbers print ("%.14g").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .schema import COUNTERS_DB, COUNTERS_MACSEC_NAME_MAP, COUNTERS_PORT_NAME_MAP, COUNTERS_TABLE, GB_COUNTERS_DB
from .table import Table, TableBase

T = TypeVar("T")
KeyPair = tuple[int, str]

#: the gearbox counters added to an ASIC port counter in UNION mode: (system side field, line side
#: field), "" for a side that has none (the C++ portcounter.lua's list)
GEARBOX_FIELDS: dict[str, tuple[str, str]] = {
    "SAI_PORT_STAT_IF_IN_ERRORS": ("SAI_PORT_STAT_IF_OUT_ERRORS", "SAI_PORT_STAT_IF_IN_ERRORS"),
    "SAI_PORT_STAT_IF_IN_DISCARDS": ("SAI_PORT_STAT_IF_OUT_DISCARDS", "SAI_PORT_STAT_IF_IN_DISCARDS"),
    "SAI_PORT_STAT_IF_OUT_ERRORS": ("SAI_PORT_STAT_IF_IN_ERRORS", "SAI_PORT_STAT_IF_OUT_ERRORS"),
    "SAI_PORT_STAT_IF_OUT_DISCARDS": ("SAI_PORT_STAT_IF_IN_DISCARDS", "SAI_PORT_STAT_IF_OUT_DISCARDS"),
    "SAI_PORT_STAT_ETHER_RX_OVERSIZE_PKTS": ("SAI_PORT_STAT_ETHER_TX_OVERSIZE_PKTS",
                                            "SAI_PORT_STAT_ETHER_RX_OVERSIZE_PKTS"),
    "SAI_PORT_STAT_ETHER_TX_OVERSIZE_PKTS": ("SAI_PORT_STAT_ETHER_RX_OVERSIZE_PKTS",
                                            "SAI_PORT_STAT_ETHER_TX_OVERSIZE_PKTS"),
    "SAI_PORT_STAT_ETHER_STATS_UNDERSIZE_PKTS": ("", "SAI_PORT_STAT_ETHER_STATS_UNDERSIZE_PKTS"),
    "SAI_PORT_STAT_ETHER_STATS_JABBERS": ("", "SAI_PORT_STAT_ETHER_STATS_JABBERS"),
    "SAI_PORT_STAT_ETHER_STATS_FRAGMENTS": ("", "SAI_PORT_STAT_ETHER_STATS_FRAGMENTS"),
    "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES": ("", "SAI_PORT_STAT_IF_IN_FEC_NOT_CORRECTABLE_FRAMES"),
    "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS": ("", "SAI_PORT_STAT_IF_IN_FEC_SYMBOL_ERRORS"),
}


class CounterTable(TableBase):
    """CounterTable(db, tableName="COUNTERS"): reads on connections of its own to the connector's
    server, one to its database and one to GB_COUNTERS_DB."""

    def __init__(self, db: DBConnector, tableName: str = COUNTERS_TABLE) -> None:
        counters = db.newConnector(0)
        super().__init__(tableName, SonicDBConfig.getSeparator(counters))
        self._counters_db = counters
        self._gbcounters_db = DBConnector(GB_COUNTERS_DB, counters)
        self._tables: dict[int, Table] = {}

    def getCountersDB(self) -> DBConnector:
        return self._counters_db

    def getGbcountersDB(self) -> DBConnector:
        return self._gbcounters_db

    def get(self, counter: Counter, key: str) -> list[Any]:
        """[True, the counter's pairs] or [False, ()] when the name maps to nothing."""
        if counter.usingLuaTable(self, key):
            pairs = _union_get(self, counter.getLuaKeys(self, key))
            return [True, pairs] if pairs else [False, ()]
        db_id, oid = counter.getKey(self, key)
        if not oid:
            return [False, ()]
        return self._table((db_id, oid)).get(oid)

    def hget(self, counter: Counter, key: str, field: str) -> list[Any]:
        """[True, value] or [False, ""]."""
        if counter.usingLuaTable(self, key):
            value = _union_hget(self, counter.getLuaKeys(self, key), field)
            return [False, ""] if value is None else [True, value]
        db_id, oid = counter.getKey(self, key)
        if not oid:
            return [False, ""]
        return self._table((db_id, oid)).hget(oid, field)

    def _table(self, key: KeyPair) -> Table:
        """The Table the C++ builds for each read, built once per database here."""
        db_id = GB_COUNTERS_DB if key[0] == GB_COUNTERS_DB else COUNTERS_DB
        if db_id not in self._tables:
            db = self._gbcounters_db if db_id == GB_COUNTERS_DB else self._counters_db
            self._tables[db_id] = Table(db, self.getTableName())
        return self._tables[db_id]


class KeyCache(Generic[T]):
    """A name -> key cache a counter kind fills from the name maps when enabled (the C++ KeyCache:
    at() raises IndexError for an unknown name, get() returns the default)."""

    def __init__(self, caching: Callable[[CounterTable, KeyCache[T]], None]) -> None:
        self._caching = caching
        self._keys: dict[str, T] = {}
        self._enabled = False

    def enabled(self) -> bool:
        return self._enabled

    def enable(self, t: CounterTable) -> None:
        self.refresh(t)
        self._enabled = True

    def disable(self) -> None:
        self._keys.clear()
        self._enabled = False

    def empty(self) -> bool:
        return not self._keys

    def clear(self) -> None:
        self._keys.clear()

    def at(self, name: str) -> T:
        try:
            return self._keys[name]
        except KeyError:
            raise IndexError(f"{name!r} is not in the key cache") from None

    def __getitem__(self, name: str) -> T:
        return self.at(name)

    def get(self, name: str, default: T | None = None) -> T | None:
        return self._keys.get(name, default)

    def insert(self, name: str, key: T) -> None:
        """Add `name` unless it is there already (std::unordered_map::insert)."""
        self._keys.setdefault(name, key)

    def refresh(self, t: CounterTable) -> None:
        self._keys.clear()
        self._caching(t, self)


class Counter:
    """A counter kind: how a name becomes (database id, object id), and whether the gearbox union
    applies."""

    def getLuaScript(self) -> str:
        return "return nil"

    def getLuaArgv(self) -> tuple[str, ...]:
        return ()

    def usingLuaTable(self, t: CounterTable, name: str) -> bool:
        return False

    def getLuaKeys(self, t: CounterTable, name: str) -> tuple[str, ...]:
        return ()

    def getKey(self, t: CounterTable, name: str) -> KeyPair:
        raise NotImplementedError("Counter is abstract: use PortCounter or MacsecCounter")


class PortCounter(Counter):
    """PortCounter(mode=Mode_UNION): a port by name; ASIC, SYSTEMSIDE or LINESIDE reads one side,
    UNION the ASIC's with its gearbox's added."""

    Mode_UNION = 0
    Mode_ASIC = 1
    Mode_SYSTEMSIDE = 2
    Mode_LINESIDE = 3
    _cache: ClassVar[KeyCache[str] | None] = None

    def __init__(self, mode: int = Mode_UNION) -> None:
        self._mode = mode

    def usingLuaTable(self, t: CounterTable, name: str) -> bool:
        """Only in UNION mode, and only for a port with a gearbox line side."""
        return self._mode == self.Mode_UNION and t.getGbcountersDB().hget(COUNTERS_PORT_NAME_MAP, name + "_line") \
            is not None

    def getLuaKeys(self, t: CounterTable, name: str) -> tuple[str, ...]:
        """(ASIC oid, system side oid, line side oid), () unless all three are known."""
        if self._mode != self.Mode_UNION:
            return ()
        names = (name, name + "_system", name + "_line")
        cache = self.keyCacheInstance()
        if cache.enabled():
            oids = tuple(cache.get(n) for n in names)
        else:
            oids = (t.getCountersDB().hget(COUNTERS_PORT_NAME_MAP, name),
                    *(t.getGbcountersDB().hget(COUNTERS_PORT_NAME_MAP, n) for n in names[1:]))
        return tuple(oid for oid in oids if oid) if all(oids) else ()

    def getKey(self, t: CounterTable, name: str) -> KeyPair:
        """(COUNTERS_DB or GB_COUNTERS_DB, oid), (-1, "") for an unknown port."""
        gearbox = self._mode in (self.Mode_SYSTEMSIDE, self.Mode_LINESIDE)
        db_id = GB_COUNTERS_DB if gearbox else COUNTERS_DB
        port = name + ("_system" if self._mode == self.Mode_SYSTEMSIDE else "_line") if gearbox else name
        cache = self.keyCacheInstance()
        if cache.enabled():
            oid = cache.get(port)
        else:
            oid = (t.getGbcountersDB() if gearbox else t.getCountersDB()).hget(COUNTERS_PORT_NAME_MAP, port)
        return (db_id, oid) if oid is not None else (-1, "")

    @staticmethod
    def keyCacheInstance() -> KeyCache[str]:
        """The process-wide cache of port names (both databases' maps)."""
        if PortCounter._cache is None:
            PortCounter._cache = KeyCache(_cache_port_keys)
        return PortCounter._cache


class MacsecCounter(Counter):
    """MacsecCounter(): a MACsec SA by name, in COUNTERS_DB's map, else GB_COUNTERS_DB's."""

    _cache: ClassVar[KeyCache[KeyPair] | None] = None

    def getKey(self, t: CounterTable, name: str) -> KeyPair:
        cache = self.keyCacheInstance()
        if cache.enabled():
            return cache.get(name) or (-1, "")
        oid = t.getCountersDB().hget(COUNTERS_MACSEC_NAME_MAP, name)
        if oid is not None:
            return (COUNTERS_DB, oid)
        oid = t.getGbcountersDB().hget(COUNTERS_MACSEC_NAME_MAP, name)
        return (GB_COUNTERS_DB, oid) if oid is not None else (-1, "")

    @staticmethod
    def keyCacheInstance() -> KeyCache[KeyPair]:
        if MacsecCounter._cache is None:
            MacsecCounter._cache = KeyCache(_cache_macsec_keys)
        return MacsecCounter._cache


def _cache_port_keys(t: CounterTable, cache: KeyCache[str]) -> None:
    for db in (t.getCountersDB(), t.getGbcountersDB()):
        for name, oid in db.hgetall(COUNTERS_PORT_NAME_MAP).items():
            cache.insert(name, oid)


def _cache_macsec_keys(t: CounterTable, cache: KeyCache[KeyPair]) -> None:
    for db_id, db in ((COUNTERS_DB, t.getCountersDB()), (GB_COUNTERS_DB, t.getGbcountersDB())):
        for name, oid in db.hgetall(COUNTERS_MACSEC_NAME_MAP).items():
            cache.insert(name, (db_id, oid))


def _lua_number(value: float) -> str:
    """A number as Redis's Lua 5.1 tostring() prints it."""
    return f"{value:.14g}"


def _gearbox_sum(t: CounterTable, oids: tuple[str, ...], fields: list[str]) -> list[float]:
    """For each ASIC field, the sum of its gearbox sides' counters (0 for a field with none)."""
    prefix = t.getTableName() + t.getTableNameSeparator()
    reads = [(i, side, GEARBOX_FIELDS[f][side]) for i, f in enumerate(fields) if f in GEARBOX_FIELDS
             for side in (0, 1) if GEARBOX_FIELDS[f][side]]
    replies = t.getGbcountersDB().connection.pipeline(
        [("HGET", prefix + oids[1 + side], field) for _, side, field in reads])
    sums = [0.0] * len(fields)
    for (i, _, _), reply in zip(reads, replies):
        if reply is not None:
            sums[i] += float(reply)
    return sums


def _union_get(t: CounterTable, oids: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    if len(oids) < 3:
        return ()
    flat = t.getCountersDB().connection.command("HGETALL", t.getKeyName(oids[0]))
    fields, values = flat[::2], flat[1::2]
    sums = _gearbox_sum(t, oids, fields)
    return tuple((f, _lua_number(float(v) + s)) for f, v, s in zip(fields, values, sums))


def _union_hget(t: CounterTable, oids: tuple[str, ...], field: str) -> str | None:
    if len(oids) < 3 or not field:
        return None
    value = t.getCountersDB().connection.command("HGET", t.getKeyName(oids[0]), field)
    if value is None:
        return None
    return _lua_number(float(value) + _gearbox_sum(t, oids, [field])[0])
