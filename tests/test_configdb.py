"""ConfigDBConnector against a real redis-server: swsscommon's test_redis_ut.py ConfigDBConnector
tests ported, plus the exact raw Redis contents after each call sequence.

The expected raw contents are written out by hand from sonic-swss-common's configdb.h (the
Python typed_to_raw/serialize_key in %pythoncode) and configdb.cpp (ConfigDBPipeConnector_Native):
the hash is to_upper(table) + "|" + key; set_entry sends HSET of the std::map (fields in byte
order) then one HDEL per old field not in the data; mod_entry sends HSET only; {} becomes
NULL: NULL, None a DEL. A Redis hash keeps its fields in insertion order (listpack) and HSET of an
existing field changes it in place, so the HGETALL order below follows from those commands.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio.connection import AbstractConnection

from swssd import DBConnector
from swssd.channels.config_entries import deserialize_key, raw_to_typed, serialize_key, typed_to_raw
from swssd.channels.configdb import SCAN_COUNT, ConfigDBConnector
from swssd.redis.embedded_redis import EmbeddedRedis

PORTS = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"]


@pytest.fixture
async def cdb(clean_redis: EmbeddedRedis) -> AsyncIterator[ConfigDBConnector]:
    """CONFIG_DB (id 4, '|') by URL."""
    conn = await ConfigDBConnector.from_url(clean_redis.url)
    yield conn
    await conn.close()


async def raw_state(cdb: ConfigDBConnector) -> dict[str, list[tuple[str, str]]]:
    """Every key of the database with its fields in HGETALL order."""
    r = cdb.db.redis
    return {key: list((await r.hgetall(key)).items()) for key in sorted(await r.keys("*"))}


async def command_calls(cdb: ConfigDBConnector) -> dict[str, int]:
    """INFO commandstats as {command: calls} since the last CONFIG RESETSTAT."""
    info = await cdb.db.redis.info("commandstats")
    return {name.removeprefix("cmdstat_"): stats["calls"] for name, stats in info.items()}


async def reset_stats(cdb: ConfigDBConnector) -> None:
    await cdb.db.redis.config_resetstat()


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts writes to Redis (redis-py sends a command or a whole pipeline in one write and
    then reads all replies, so one write is one round trip): `counter[0]`."""
    counter = [0]
    original = AbstractConnection.send_packed_command

    async def counting(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        counter[0] += 1
        await original(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)
    yield counter


# -- typed values, no Redis ----------------------------------------------------------------


def test_typed_to_raw_conventions() -> None:
    """configdb.h typed_to_raw: None -> {}, {} -> NULL: NULL, list -> 'f@' comma-joined,
    anything else str(value) (tuples, bools, ints, bytes, None included)."""
    assert typed_to_raw(None) == {}
    assert typed_to_raw({}) == {"NULL": "NULL"}
    assert typed_to_raw({"ports": PORTS, "empty": []}) == {"ports@": ",".join(PORTS), "empty@": ""}
    assert typed_to_raw({"b": True, "i": 9100, "f": 1.5, "n": None, "x": b"ab", "t": ("a", "b")}) == {
        "b": "True", "i": "9100", "f": "1.5", "n": "None", "x": "b'ab'", "t": "('a', 'b')",
    }
    with pytest.raises(TypeError):
        typed_to_raw({"ports": [1, 2]})  # ','.join of ints, as in swsscommon


def test_raw_to_typed_conventions() -> None:
    assert raw_to_typed(None) is None
    assert raw_to_typed({"NULL": "NULL"}) == {}
    assert raw_to_typed({"ports@": "a,b", "empty@": "", "mtu": "9100", "@": "x"}) == {
        "ports": ["a", "b"], "empty": [""], "mtu": "9100", "": ["x"],
    }
    # a plain field and its list twin: the later one wins (get_* feed fields in byte order)
    assert raw_to_typed({"a": "1", "a@": "2,3"}) == {"a": ["2", "3"]}


def test_keys_serialize_as_swsscommon() -> None:
    assert serialize_key(("Vlan100", "Ethernet0")) == "Vlan100|Ethernet0"
    assert serialize_key(("Vlan100", "Ethernet0"), ":") == "Vlan100:Ethernet0"
    assert serialize_key(5) == "5"  # type: ignore[arg-type]
    assert serialize_key(["a", "b"]) == "['a', 'b']"  # type: ignore[arg-type]  (only tuples join)
    assert deserialize_key("Vlan100|Ethernet0") == ("Vlan100", "Ethernet0")
    assert deserialize_key("a||b|") == ("a", "", "b", "")
    assert deserialize_key("Ethernet0") == "Ethernet0"
    assert deserialize_key("a:b", ":") == ("a", "b")


field_names = st.text(min_size=1, max_size=6).filter(lambda f: f != "NULL" and not f.endswith("@"))
values = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8)
list_values = st.lists(values.filter(lambda v: "," not in v), min_size=1, max_size=4)
typed_entries = st.dictionaries(field_names, st.one_of(values, list_values), max_size=5)


@given(typed_entries)
def test_typed_raw_round_trip(entry: dict[str, Any]) -> None:
    """What typed_to_raw writes, raw_to_typed reads back: for fields that are not 'NULL' and do
    not end in '@', string values, and non-empty lists of comma-free strings."""
    assert raw_to_typed(typed_to_raw(entry)) == entry


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(typed_entries, st.sampled_from(["k", ("a", "b"), "é|x"]))
def test_entry_round_trips_through_redis(redis_server: EmbeddedRedis, entry: dict[str, Any], key: Any) -> None:
    async def run() -> tuple[dict[str, Any], list[Any]]:
        async with await ConfigDBConnector.from_url(redis_server.url, db_id=11) as cdb:
            await cdb.set_entry("prop", key, entry)
            got = await cdb.get_entry("PROP", key), await cdb.get_keys("prop")
            await cdb.delete_table("prop")
            return got

    got_entry, got_keys = asyncio.run(run())
    assert got_entry == entry
    assert got_keys == [key if isinstance(key, tuple) else deserialize_key(key)]


# -- entries ------------------------------------------------------------------------------


async def test_configdb_connector_set_replace_delete(cdb: ConfigDBConnector) -> None:
    """test_redis_ut.py test_ConfigDBConnector."""
    await cdb.set_entry("TEST_PORT", "Ethernet111", {"alias": "etp1x"})
    assert (await cdb.get_config())["TEST_PORT"]["Ethernet111"]["alias"] == "etp1x"
    assert await raw_state(cdb) == {"TEST_PORT|Ethernet111": [("alias", "etp1x")]}

    await cdb.set_entry("TEST_PORT", "Ethernet111", {"mtu": "12345"})
    allconfig = await cdb.get_config()
    assert "alias" not in allconfig["TEST_PORT"]["Ethernet111"]
    assert allconfig["TEST_PORT"]["Ethernet111"]["mtu"] == "12345"
    # HSET mtu 12345; HDEL alias
    assert await raw_state(cdb) == {"TEST_PORT|Ethernet111": [("mtu", "12345")]}

    await cdb.delete_table("TEST_PORT")
    assert await cdb.get_config() == {}
    assert await raw_state(cdb) == {}


async def test_set_entry_fields_in_cpp_order_and_in_place(cdb: ConfigDBConnector) -> None:
    # std::map order: policy_desc < ports@ < type (bytes), whatever order the dict has
    await cdb.set_entry("acl_table", "EVERFLOW", {"type": "MIRROR", "ports": PORTS, "policy_desc": "x"})
    assert await raw_state(cdb) == {
        "ACL_TABLE|EVERFLOW": [("policy_desc", "x"), ("ports@", ",".join(PORTS)), ("type", "MIRROR")],
    }
    assert await cdb.get_entry("ACL_TABLE", "EVERFLOW") == {"policy_desc": "x", "ports": PORTS, "type": "MIRROR"}
    assert list(await cdb.get_entry("ACL_TABLE", "EVERFLOW")) == ["policy_desc", "ports", "type"]

    # HSET policy_desc y stage ingress type MIRROR (policy_desc, type changed in place, stage
    # appended); HDEL ports@
    await cdb.set_entry("ACL_TABLE", "EVERFLOW", {"type": "MIRROR", "stage": "ingress", "policy_desc": "y"})
    assert await raw_state(cdb) == {
        "ACL_TABLE|EVERFLOW": [("policy_desc", "y"), ("type", "MIRROR"), ("stage", "ingress")],
    }


async def test_null_entries(cdb: ConfigDBConnector) -> None:
    """{} stores NULL: NULL (test_ConfigDBPipeConnector 'entry clear'), dropped on read."""
    await cdb.set_entry("PORT_TABLE", "Ethernet1", {"alias": "etp1x"})
    await cdb.set_entry("PORT_TABLE", "Ethernet1", {})  # HSET NULL NULL; HDEL alias
    assert await raw_state(cdb) == {"PORT_TABLE|Ethernet1": [("NULL", "NULL")]}
    assert await cdb.get_entry("PORT_TABLE", "Ethernet1") == {}
    assert await cdb.get_config() == {"PORT_TABLE": {"Ethernet1": {}}}

    await cdb.set_entry("PORT_TABLE", "Ethernet1", {"mtu": "9100"})  # HSET mtu 9100; HDEL NULL
    assert await raw_state(cdb) == {"PORT_TABLE|Ethernet1": [("mtu", "9100")]}

    await cdb.mod_entry("PORT_TABLE", "Ethernet1", {})  # HSET NULL NULL, even on a populated entry
    assert await raw_state(cdb) == {"PORT_TABLE|Ethernet1": [("mtu", "9100"), ("NULL", "NULL")]}
    assert await cdb.get_entry("PORT_TABLE", "Ethernet1") == {"mtu": "9100"}


async def test_none_deletes_the_entry(cdb: ConfigDBConnector) -> None:
    await cdb.set_entry("PORT_TABLE", "Ethernet1", {"alias": "etp1x"})
    await cdb.set_entry("ACL_TABLE", "EVERFLOW", {"ports": PORTS})
    assert (await cdb.get_config())["ACL_TABLE"]["EVERFLOW"]["ports"] == PORTS
    await cdb.set_entry("PORT_TABLE", "Ethernet1", None)
    await cdb.mod_entry("ACL_TABLE", "EVERFLOW", None)
    assert await raw_state(cdb) == {}
    assert await cdb.get_config() == {}
    assert await cdb.get_entry("PORT_TABLE", "Ethernet1") == {}


async def test_mod_entry_merges_set_entry_replaces(cdb: ConfigDBConnector) -> None:
    await cdb.mod_entry("PORT", "Ethernet0", {"mtu": "9100", "speed": "100000"})
    await cdb.mod_entry("PORT", "Ethernet0", {"alias": "etp1", "mtu": "1500"})  # HSET alias etp1 mtu 1500
    assert await raw_state(cdb) == {"PORT|Ethernet0": [("mtu", "1500"), ("speed", "100000"), ("alias", "etp1")]}
    await cdb.set_entry("PORT", "Ethernet0", {"alias": "etp1", "mtu": "1500"})  # HSET ...; HDEL speed
    assert await raw_state(cdb) == {"PORT|Ethernet0": [("mtu", "1500"), ("alias", "etp1")]}


async def test_tuple_keys_and_get_keys(cdb: ConfigDBConnector) -> None:
    await cdb.set_entry("VLAN_MEMBER", ("Vlan100", "Ethernet0"), {"tagging_mode": "untagged"})
    await cdb.mod_entry("vlan_member", "Vlan100|Ethernet4", {"tagging_mode": "tagged"})
    await cdb.set_entry("VLAN", "Vlan100", {"vlanid": 100})
    assert await raw_state(cdb) == {
        "VLAN_MEMBER|Vlan100|Ethernet0": [("tagging_mode", "untagged")],
        "VLAN_MEMBER|Vlan100|Ethernet4": [("tagging_mode", "tagged")],
        "VLAN|Vlan100": [("vlanid", "100")],
    }
    assert sorted(await cdb.get_keys("VLAN_MEMBER")) == [("Vlan100", "Ethernet0"), ("Vlan100", "Ethernet4")]
    assert await cdb.get_keys("VLAN") == ["Vlan100"]  # pattern VLAN|*: VLAN_MEMBER| does not match
    # split=False deserializes the whole Redis key, as swsscommon does
    assert await cdb.get_keys("VLAN", split=False) == [("VLAN", "Vlan100")]
    assert await cdb.get_entry("VLAN_MEMBER", "Vlan100|Ethernet4") == {"tagging_mode": "tagged"}
    assert await cdb.get_entry("vlan_member", ("Vlan100", "Ethernet0")) == {"tagging_mode": "untagged"}
    assert await cdb.get_table("VLAN_MEMBER") == {
        ("Vlan100", "Ethernet0"): {"tagging_mode": "untagged"},
        ("Vlan100", "Ethernet4"): {"tagging_mode": "tagged"},
    }
    assert await cdb.get_config() == {
        "VLAN": {"Vlan100": {"vlanid": "100"}},
        "VLAN_MEMBER": {
            ("Vlan100", "Ethernet0"): {"tagging_mode": "untagged"},
            ("Vlan100", "Ethernet4"): {"tagging_mode": "tagged"},
        },
    }


async def test_values_and_keys_through_str(cdb: ConfigDBConnector) -> None:
    """Non-string values and keys go through str() as swsscommon's typed_to_raw/serialize_key."""
    values = {"enabled": True, "mtu": 9100, "raw": b"ab", "pair": ("a", "b")}
    await cdb.set_entry("T", 5, values)  # type: ignore[arg-type]
    assert await raw_state(cdb) == {
        "T|5": [("enabled", "True"), ("mtu", "9100"), ("pair", "('a', 'b')"), ("raw", "b'ab'")],
    }
    assert await cdb.get_keys("T") == ["5"]


async def test_table_names_upper_cased_ascii_only(cdb: ConfigDBConnector) -> None:
    """C++ to_upper is ::toupper per byte: 'é' stays, where str.upper() would change it."""
    await cdb.set_entry("port_é", "x", {"a": "1"})
    assert await raw_state(cdb) == {"PORT_é|x": [("a", "1")]}
    assert await cdb.get_table("Port_é") == {"x": {"a": "1"}}
    assert await cdb.get_config() == {"PORT_é": {"x": {"a": "1"}}}


async def test_refused_before_anything_is_sent(cdb: ConfigDBConnector) -> None:
    """Where swsscommon's conversion to std::map fails, nothing reaches Redis."""
    with pytest.raises(TypeError):
        await cdb.set_entry("T", "k", {1: "x"})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        await cdb.mod_config({"A": {"k": {"f": "v"}}, "T": {"k": {2: "x"}}})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        await cdb.mod_entry("T", ("a", 1), {"f": "v"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await cdb.mod_config({"A": {"k": {"f": "v"}}, 3: None})  # type: ignore[dict-item]
    assert await raw_state(cdb) == {}


async def test_get_table_and_separator_less_keys(cdb: ConfigDBConnector) -> None:
    """test_ConfigDBPipeConnectorSeparator: get_config skips keys without '|'; get_table('*')."""
    await cdb.set_entry("TEST_PORT", "Ethernet222", {"alias": "etp2x"})
    await cdb.db.redis.set("ItemWithoutSeparator", "item11")
    await cdb.db.redis.set("CONFIG_DB_INITIALIZED", "1")
    allconfig = await cdb.get_config()
    assert allconfig == {"TEST_PORT": {"Ethernet222": {"alias": "etp2x"}}}
    assert await cdb.get_table("*") == {"Ethernet222": {"alias": "etp2x"}}
    await cdb.delete_table("TEST_PORT")
    await cdb.db.redis.delete("ItemWithoutSeparator", "CONFIG_DB_INITIALIZED")
    assert await cdb.get_config() == {}


async def test_other_database_uses_its_separator(clean_redis: EmbeddedRedis) -> None:
    """test_ConfigDBConnectorSeparator: db_connect('APPL_DB') works with ':'."""
    async with ConfigDBConnector(await DBConnector.from_url(clean_redis.url, db_id=0, separator=":")) as cdb:
        await cdb.set_entry("TEST_PORT", ("Ethernet222", "x"), {"alias": "etp2x"})
        assert await raw_state(cdb) == {"TEST_PORT:Ethernet222:x": [("alias", "etp2x")]}
        assert await cdb.get_config() == {"TEST_PORT": {("Ethernet222", "x"): {"alias": "etp2x"}}}


async def test_connect_through_database_config(clean_redis: EmbeddedRedis) -> None:
    path = clean_redis.write_database_config()
    async with await ConfigDBConnector.connect(config=path) as cdb:
        assert (cdb.db.db_id, cdb.separator, cdb.db.name) == (4, "|", "CONFIG_DB")
        await cdb.set_entry("T", "k", {"f": "v"})
    async with await ConfigDBConnector.connect("STATE_DB", path) as sdb:
        assert (sdb.db.db_id, sdb.separator) == (6, "|")
        assert await sdb.get_config() == {}


async def test_connect_in_a_namespace(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    """namespace= goes to DBConnector.connect: database_global.json places asic0's CONFIG_DB
    (here db 12 of the same server)."""
    for run_dir in ("redis", "redis0"):
        (tmp_path / run_dir / "sonic-db").mkdir(parents=True)
    host = clean_redis.write_database_config(tmp_path / "redis" / "sonic-db" / "database_config.json")
    asic0 = json.loads(host.read_text())
    asic0["DATABASES"]["CONFIG_DB"]["id"] = 12
    (tmp_path / "redis0" / "sonic-db" / "database_config.json").write_text(json.dumps(asic0))
    global_config = tmp_path / "redis" / "sonic-db" / "database_global.json"
    global_config.write_text(json.dumps({"INCLUDES": [
        {"include": "database_config.json"},
        {"namespace": "asic0", "include": "../../redis0/sonic-db/database_config.json"},
    ]}))
    async with await ConfigDBConnector.connect(config=global_config, namespace="asic0") as cdb:
        assert (cdb.db.db_id, cdb.db.namespace) == (12, "asic0")
        await cdb.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
        assert await raw_state(cdb) == {"PORT|Ethernet0": [("mtu", "9100")]}


# -- whole configuration --------------------------------------------------------------------


async def test_mod_config_pipe_sequence(cdb: ConfigDBConnector) -> None:
    """test_redis_ut.py test_ConfigDBPipeConnector's mod_config and delete_table part."""
    allconfig: dict[str, Any] = {"PORT_TABLE": {"Ethernet1": {"alias": "etp1x"}}}
    await cdb.mod_config(allconfig)
    allconfig = await cdb.get_config()
    assert allconfig["PORT_TABLE"]["Ethernet1"]["alias"] == "etp1x"

    allconfig["VLAN_TABLE"] = {"Vlan1": {}}
    await cdb.mod_config(allconfig)
    allconfig = await cdb.get_config()
    assert allconfig["VLAN_TABLE"]["Vlan1"] == {}

    allconfig["ACL_TABLE"] = {"EVERFLOW": {"ports": PORTS}}
    await cdb.mod_config(allconfig)
    allconfig = await cdb.get_config()
    assert allconfig["ACL_TABLE"]["EVERFLOW"]["ports"] == PORTS
    # each mod_config HSETs every entry again: existing fields in place, NULL NULL on Vlan1
    assert await raw_state(cdb) == {
        "ACL_TABLE|EVERFLOW": [("ports@", ",".join(PORTS))],
        "PORT_TABLE|Ethernet1": [("alias", "etp1x")],
        "VLAN_TABLE|Vlan1": [("NULL", "NULL")],
    }

    allconfig["PORT_TABLE"]["Ethernet1"] = None
    allconfig["VLAN_TABLE"]["Vlan1"] = None
    allconfig["ACL_TABLE"]["EVERFLOW"] = None
    await cdb.mod_config(allconfig)
    assert await cdb.get_config() == {}
    assert await raw_state(cdb) == {}

    allconfig = {"PORT_TABLE": {f"Ethernet{i}": {"alias": f"etp{i}x"} for i in range(1, 1001)}}
    await cdb.mod_config(allconfig)
    allconfig = await cdb.get_config()
    assert len(allconfig["PORT_TABLE"]) == 1000

    await cdb.mod_config({"PORT_TABLE": {}})  # {}: no action
    assert len((await cdb.get_config())["PORT_TABLE"]) == 1000

    allconfig["PORT_TABLE"] = None  # None: the table is deleted
    await cdb.mod_config(allconfig)
    assert await cdb.get_config() == {}
    assert await raw_state(cdb) == {}

    await cdb.set_entry("PORT_TABLE", "Ethernet1", {"alias": "etp1x"})
    await cdb.set_entry("ACL_TABLE", "EVERFLOW", {"ports": PORTS})
    await cdb.delete_table("PORT_TABLE")
    await cdb.delete_table("acl_table")
    assert await raw_state(cdb) == {}


async def test_mod_config_merges_and_keeps_other_tables(cdb: ConfigDBConnector) -> None:
    await cdb.set_entry("PORT", "Ethernet0", {"mtu": "9100", "speed": "100000"})
    await cdb.set_entry("PORT", "Ethernet4", {"mtu": "9100"})
    await cdb.set_entry("VLAN", "Vlan1", {"vlanid": "1"})
    await cdb.mod_config({
        "port": {"Ethernet0": {"mtu": "1500"}, "Ethernet8": {"lanes": ["1", "2"]}, "Ethernet4": None},
        "VLAN_MEMBER": {("Vlan1", "Ethernet0"): {"tagging_mode": "untagged"}},
        "LOOPBACK": None,
        "unused": {},
    })
    assert await raw_state(cdb) == {
        "PORT|Ethernet0": [("mtu", "1500"), ("speed", "100000")],
        "PORT|Ethernet8": [("lanes@", "1,2")],
        "VLAN_MEMBER|Vlan1|Ethernet0": [("tagging_mode", "untagged")],
        "VLAN|Vlan1": [("vlanid", "1")],
    }


async def test_mod_config_deletes_the_tables_keys_as_they_were(cdb: ConfigDBConnector) -> None:
    """'PORT' (HSET, queued) runs before 'port' (None: SCAN of PORT|*, then DELs queued) in
    std::map order; the SCAN ran before EXEC, so the new entry survives and old ones go."""
    await cdb.set_entry("PORT", "old", {"a": "1"})
    await cdb.mod_config({"port": None, "PORT": {"new": {"b": "2"}}})
    assert await raw_state(cdb) == {"PORT|new": [("b", "2")]}


async def test_config_db_scan(cdb: ConfigDBConnector) -> None:
    """test_ConfigDBScan: 1000 tables through mod_entry, all read back by get_config."""
    n = 1000
    for i in range(n):
        await cdb.mod_entry(f"TEST_TYPE{i}", f"Ethernet{i}", {f"alias{i}": f"etp{i}"})
    allconfig = await cdb.get_config()
    assert len(allconfig) == n
    assert allconfig["TEST_TYPE7"] == {"Ethernet7": {"alias7": "etp7"}}
    assert list(allconfig)[:3] == ["TEST_TYPE0", "TEST_TYPE1", "TEST_TYPE10"]  # std::map order
    for i in range(n):
        await cdb.delete_table(f"TEST_TYPE{i}")
    assert await raw_state(cdb) == {}


async def test_mod_config_is_one_transaction(cdb: ConfigDBConnector, round_trips: list[int]) -> None:
    await cdb.set_entry("LOOPBACK", "Loopback0", {"a": "1"})
    await reset_stats(cdb)
    round_trips[0] = 0
    await cdb.mod_config({
        "PORT": {f"Ethernet{i}": {"mtu": "9100"} for i in range(100)},
        "VLAN": {"Vlan1": None},
        "LOOPBACK": None,
    })
    assert round_trips[0] == 2  # SCAN of LOOPBACK|*, then MULTI ... EXEC in one write
    calls = await command_calls(cdb)
    assert calls["multi"] == 1 and calls["exec"] == 1
    assert calls["hset"] == 100 and calls["del"] == 2 and calls["scan"] == 1
    assert "keys" not in calls


async def test_get_config_scans_in_few_round_trips(cdb: ConfigDBConnector, round_trips: list[int]) -> None:
    n = 2500
    await cdb.mod_config({"PORT": {f"Ethernet{i}": {"mtu": "9100"} for i in range(n)}})
    await cdb.db.redis.set("CONFIG_DB_INITIALIZED", "1")
    await reset_stats(cdb)
    round_trips[0] = 0
    config = await cdb.get_config()
    trips = round_trips[0]
    assert len(config["PORT"]) == n
    calls = await command_calls(cdb)
    assert "keys" not in calls
    assert calls["hgetall"] == n  # the separator-less key is not read
    # the first SCAN, then one round trip per batch: MULTI, its HGETALLs, the next SCAN (none
    # after the last batch), EXEC. COUNT is a hint: allow a few more batches than n / SCAN_COUNT
    batches = trips - 1
    assert calls["multi"] == calls["exec"] == batches
    assert calls["scan"] == batches  # the first, plus one in every batch but the last
    assert batches <= math.ceil((n + 1) / SCAN_COUNT) + 2


async def test_set_entry_replaces_in_one_transaction(cdb: ConfigDBConnector, round_trips: list[int]) -> None:
    await cdb.set_entry("PORT", "Ethernet0", {"a": "1", "b": "2", "c": "3"})
    await reset_stats(cdb)
    round_trips[0] = 0
    await cdb.set_entry("PORT", "Ethernet0", {"b": "4"})
    assert round_trips[0] == 2  # HGETALL, then MULTI HSET HDEL HDEL EXEC
    calls = await command_calls(cdb)
    assert (calls["hgetall"], calls["multi"], calls["hset"], calls["hdel"], calls["exec"]) == (1, 1, 1, 2, 1)
