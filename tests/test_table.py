"""Plain Table on a ':' database over TCP and a '|' database over the unix socket."""

from __future__ import annotations

import pytest

from swssd import DBConnector, Table

FV = [("alias", "Ethernet5/1"), ("index", "5"), ("lanes", "9,10,11,12")]


@pytest.fixture(params=["db", "unix_db"])
def conn(request: pytest.FixtureRequest) -> DBConnector:
    return request.getfixturevalue(request.param)


async def test_set_get_writes_table_sep_key_hash(conn: DBConnector) -> None:
    t = Table(conn, "PORT_TABLE")
    await t.set("Ethernet0", FV)
    assert await t.get("Ethernet0") == FV
    raw_key = f"PORT_TABLE{conn.separator}Ethernet0"
    assert await conn.redis.keys("*") == [raw_key]
    assert await conn.redis.hgetall(raw_key) == dict(FV)


async def test_data_lands_in_the_connectors_database(db: DBConnector, unix_db: DBConnector) -> None:
    await Table(db, "T").set("k", [("f", "0")])
    await Table(unix_db, "T").set("k", [("f", "6")])
    assert await Table(db, "T").get("k") == [("f", "0")]
    assert await Table(unix_db, "T").get("k") == [("f", "6")]
    assert await db.redis.keys("*") == ["T:k"]
    assert await unix_db.redis.keys("*") == ["T|k"]


async def test_set_merges_fields_and_accepts_a_mapping(conn: DBConnector) -> None:
    t = Table(conn, "T")
    await t.set("k", {"a": "1", "b": "2"})
    await t.set("k", [("b", "3"), ("c", "4")])
    assert dict(await t.get("k") or []) == {"a": "1", "b": "3", "c": "4"}


async def test_set_without_fields_creates_nothing(conn: DBConnector) -> None:
    t = Table(conn, "T")
    await t.set("k", [])
    assert await t.get("k") is None
    assert await conn.redis.keys("*") == []


async def test_get_missing_is_none(conn: DBConnector) -> None:
    assert await Table(conn, "T").get("nope") is None


async def test_delete(conn: DBConnector) -> None:
    t = Table(conn, "T")
    await t.set("k", FV)
    await t.set("other", FV)
    await t.delete("k")
    assert await t.get("k") is None
    assert await t.get("other") == FV
    await t.delete("never-existed")


async def test_keys_only_of_this_table(conn: DBConnector) -> None:
    t = Table(conn, "T")
    for key in ("a", "b", "c"):
        await t.set(key, FV)
    await Table(conn, "T2").set("x", FV)
    await Table(conn, "TT").set("y", FV)
    await conn.redis.hset("T_KEY_SET_like", "f", "v")
    assert sorted(await t.keys()) == ["a", "b", "c"]
    assert await Table(conn, "EMPTY").keys() == []


async def test_hget_hset_hdel(conn: DBConnector) -> None:
    t = Table(conn, "T")
    assert await t.hget("k", "f") is None
    await t.hset("k", "f", "v")
    await t.hset("k", "g", "w")
    assert await t.hget("k", "f") == "v"
    await t.hset("k", "f", "v2")
    assert await t.get("k") == [("f", "v2"), ("g", "w")]
    await t.hdel("k", "f")
    assert await t.get("k") == [("g", "w")]
    assert await t.hget("k", "f") is None


async def test_dump(conn: DBConnector) -> None:
    t = Table(conn, "T")
    await t.set("a", FV)
    await t.set("b", [("x", "1")])
    await Table(conn, "OTHER").set("c", FV)
    assert await t.dump() == {"a": dict(FV), "b": {"x": "1"}}
    assert await Table(conn, "EMPTY").dump() == {}


async def test_empty_key_is_the_bare_table_name(conn: DBConnector) -> None:
    """As the C++ getKeyName: the empty key addresses the hash named like the table."""
    t = Table(conn, "GLOBAL")
    await t.set("", [("f", "v")])
    assert await conn.redis.hgetall("GLOBAL") == {"f": "v"}
    assert await t.get("") == [("f", "v")]
    assert await t.hget("", "f") == "v"


async def test_keys_with_separators_inside(conn: DBConnector) -> None:
    t = Table(conn, "ROUTE_TABLE")
    keys = ["10.0.0.0/24", "Vrf1:10.0.0.0/24", "fc00::1/128", "a|b"]
    for key in keys:
        await t.set(key, [("nexthop", key)])
    assert sorted(await t.keys()) == sorted(keys)
    assert await t.dump() == {k: {"nexthop": k} for k in keys}
    for key in keys:
        assert await t.get(key) == [("nexthop", key)]
