"""swssd.compat.table: the binding's Table (direct hash access) against a real redis-server."""

from __future__ import annotations

from pathlib import Path

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat.containers import FieldValuePairs
from swssd.compat.dbconnector import DBConnector
from swssd.compat.table import Table, TableBase, transpose_pops

_ = sonic_db_config


def test_set_get_keys_as_the_binding_returns_them(sonic_db_config: Path) -> None:
    db = DBConnector("APPL_DB", 0, True)
    tbl = Table(db, "test_TABLE")
    tbl.set("aaa", FieldValuePairs([("a", "b"), ("c", "d")]))
    assert tbl.getKeys() == ("aaa",)
    assert tbl.get("aaa") == [True, (("a", "b"), ("c", "d"))]
    assert tbl.get("missing") == [False, ()]
    assert db.hgetall("test_TABLE:aaa").asdict() == {"a": "b", "c": "d"}
    assert (tbl.getTableName(), tbl.getTableNameSeparator(), tbl.getKeyName("k")) == ("test_TABLE", ":", "test_TABLE:k")
    assert tbl.getKeyName("") == "test_TABLE"
    assert tbl.getChannelName() == "test_TABLE_CHANNEL" and tbl.getChannelName(0) == "test_TABLE_CHANNEL@0"


def test_field_names_and_hget_values_are_cut_at_the_first_at(sonic_db_config: Path) -> None:
    db = DBConnector("CONFIG_DB", 0)
    db.hset("ACL|x", "ports@", "Ethernet0,Ethernet4")
    db.hset("ACL|x", "mail", "a@b")
    tbl = Table(db, "ACL")
    assert dict(tbl.get("x")[1]) == {"ports": "Ethernet0,Ethernet4", "mail": "a@b"}
    assert tbl.hget("x", "mail") == [True, "a"]
    assert tbl.hget("x", "none") == [False, ""]


def test_writes(sonic_db_config: Path) -> None:
    db = DBConnector("STATE_DB", 0)
    tbl = Table(db, "PORT_TABLE")
    tbl.set("Ethernet0", [])  # nothing sent, nothing made
    assert db.keys("*") == ()
    tbl.set("Ethernet0", [("a", "1"), ("b", "2")])
    tbl.hset("Ethernet0", "c", "3")
    tbl.hdel("Ethernet0", "a")
    assert db.hgetall("PORT_TABLE|Ethernet0").asdict() == {"b": "2", "c": "3"}
    tbl.set("Ethernet4", [("a", "1")], "", "", 100)
    assert tbl.ttl("Ethernet4")[1] > 90
    tbl.delete("Ethernet0")
    tbl._del("Ethernet4")
    assert tbl.getKeys() == ()


def test_pairs_that_are_not_tuples_are_type_errors(sonic_db_config: Path) -> None:
    tbl = Table(DBConnector("APPL_DB", 0), "T")
    with pytest.raises(TypeError, match=r"Wrong number or type of arguments for overloaded function 'Table_set'"):
        tbl.set("k", [["a", "b"]])  # type: ignore[list-item]


def test_binary_values_round_trip(sonic_db_config: Path) -> None:
    """sonic-swss-common's test_TableSetBinary."""
    tbl = Table(DBConnector("APPL_DB", 0, True), "TABLE")
    buff = bytes(range(256)).decode("latin-1")
    tbl.set("binary", FieldValuePairs([("binary", buff)]))
    status, fvs = tbl.get("binary")
    assert status and fvs[0][1] == buff


def test_separator_must_be_sonic_s() -> None:
    with pytest.raises(ValueError, match="separator"):
        TableBase("T", "/")


def test_transpose_pops() -> None:
    assert transpose_pops((("k1", "k2"), ("SET", "DEL"), ((("a", "b"),), ()))) == [
        ("k1", "SET", (("a", "b"),)), ("k2", "DEL", ()),
    ]
