"""swssd.compat.dbconnector: the binding's DBConnector against a real redis-server."""

from __future__ import annotations

import multiprocessing
import socket
from pathlib import Path

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat.dbconfig import SonicDBKey
from swssd.compat.dbconnector import DBConnector
from swssd.redis.embedded_redis import EmbeddedRedis

_ = sonic_db_config


def test_by_name_over_unix_socket_and_tcp(sonic_db_config: Path) -> None:
    for db in (DBConnector("CONFIG_DB", 0), DBConnector("CONFIG_DB", 0, True)):
        assert (db.getDbId(), db.getDbName(), db.getNamespace(), db.namespace) == (4, "CONFIG_DB", "", "")
        assert db.getDBKey() == SonicDBKey()
    tcp = DBConnector("CONFIG_DB", 0, True)
    tcp.set("k", "v")
    assert DBConnector("CONFIG_DB", 0).get("k") == "v"  # same database 4 both ways
    assert DBConnector("APPL_DB", 0).get("k") is None


def test_by_id_and_address(sonic_db_config: Path, clean_redis: EmbeddedRedis) -> None:
    by_tcp = DBConnector(6, "127.0.0.1", clean_redis.port, 1000)
    by_unix = DBConnector(6, clean_redis.unix_socket, 0)
    by_tcp.hset("h", "f", "v")
    assert by_unix.hget("h", "f") == "v"
    assert by_unix.getDbName() == "" and by_unix.getDbId() == 6
    copy = DBConnector(by_unix)
    assert copy.connection.fileno() != by_unix.connection.fileno()
    assert copy.hget("h", "f") == "v"
    other = by_tcp.newConnector(0)
    assert other.getDbId() == 6 and other.hget("h", "f") == "v"


def test_connect_failures_are_runtime_errors_naming_the_address(sonic_db_config: Path, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
    with pytest.raises(RuntimeError, match=f"127.0.0.1:{port}"):
        DBConnector(0, "127.0.0.1", port, 0)
    missing = str(tmp_path / "no.sock")
    with pytest.raises(RuntimeError, match=f"unix-socket.*{missing}"):
        DBConnector(0, missing, 0)
    with pytest.raises(RuntimeError):  # as the binding's own test: "." taken as a unix socket path
        DBConnector(0, ".", 0)
    with pytest.raises(IndexError, match="NO_SUCH_DB"):
        DBConnector("NO_SUCH_DB", 0)


def test_commands_and_their_return_values(sonic_db_config: Path) -> None:
    db = DBConnector("APPL_DB", 0, True)
    assert db.set("s", "1") is True and db.set("n", 5) is True
    assert (db.get("n"), db.get("missing")) == ("5", None)
    assert db.exists("s") and not db.exists("missing")
    with pytest.raises(RuntimeError, match="space or tab"):
        db.exists("a b")
    assert (db.incr("n"), db.decr("n")) == (6, 5)
    db.hset("h", "b", "2")
    db.hset("h", "a", "1")
    assert db.hexists("h", "a") and not db.hexists("h", "z")
    everything = db.hgetall("h")
    assert everything.asdict() == {"a": "1", "b": "2"} and everything.keys() == ["a", "b"]
    assert everything.get("zz", "default") == "default"
    assert db.hgetall("missing").asdict() == {}
    assert db.hdel("h", ["a", "b", "c"]) == 2
    assert db.hdel("h", "a") == 0
    assert sorted(db.keys("*")) == ["n", "s"]
    assert isinstance(db.keys("*"), tuple)
    assert db.delete("s") == 1 and db._del("s") == 0
    assert db.rpush("l", "x") == 1 and db.blpop("l", 1) == "x"
    assert db.publish("chan", "msg") == 0
    cursor, keys = db.scan(0, "*", 100)
    assert (cursor, keys) == (0, ("n",))
    assert db.getClientName() == ""
    db.setClientName("foo")
    assert db.getClientName() == "foo"
    assert db.flushdb() is True and db.keys("*") == ()


def test_deleting_a_list_of_keys_goes_in_chunks(sonic_db_config: Path) -> None:
    db = DBConnector("APPL_DB", 0)
    keys = [f"k{i}" for i in range(300)]
    for key in keys:
        db.set(key, "v")
    assert db.delete(keys) is None
    assert db.keys("k*") == ()


def test_hmset_writes_each_hash_when_permissive(sonic_db_config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The binding refuses every hmset argument (no conversion to its unordered_map), so the layer's
    hmset works only when permissive; strict, it is the binding's TypeError."""
    db = DBConnector("APPL_DB", 0)
    with pytest.raises(TypeError, match=r"in method 'DBConnector_hmset', argument 2 of type 'std::unordered_map<"):
        db.hmset({"a": [("f", "1")]})
    assert db.keys("*") == ()
    monkeypatch.setenv("SWSSD_COMPAT_PERMISSIVE", "1")
    db.hmset({"a": [("f", "1")], "b": [("g", "2"), ("h", "3")]})
    assert (db.hgetall("a").asdict(), db.hgetall("b").asdict()) == ({"f": "1"}, {"g": "2", "h": "3"})


def test_error_reply_is_runtime_error_naming_the_command(sonic_db_config: Path) -> None:
    db = DBConnector("APPL_DB", 0)
    db.set("str", "v")
    with pytest.raises(RuntimeError, match=r"HGETALL failed.*WRONGTYPE"):
        db.hgetall("str")
    assert db.get("str") == "v"  # the connection is still in step


def test_getall_reads_rows_in_map_order(sonic_db_config: Path) -> None:
    db = DBConnector("CONFIG_DB", 0)
    for key in ("B|2", "B|1", "A_B|x", "A|y"):
        db.hset(key, "f", key)
    db.set("NO_SEPARATOR", "v")
    got = db.getall()
    assert list(got) == ["A", "A_B", "B"]
    assert list(got["B"]) == ["1", "2"] and got["A"]["y"] == {"f": "A|y"}


def test_non_utf8_values_round_trip(sonic_db_config: Path) -> None:
    db = DBConnector("APPL_DB", 0)
    text = bytes(range(256)).decode("latin-1")
    db.hset("bin", "f", text)
    assert db.hget("bin", "f") == text
    raw = b"\xff\xfe".decode("utf-8", "surrogateescape")
    db.set("raw", raw)
    assert db.get("raw") == raw


def _child_writes(config: str, queue: multiprocessing.Queue[str]) -> None:
    db = DBConnector("APPL_DB", 0)  # SonicDBConfig came over with the fork
    db.set("from_child", "yes")
    queue.put(str(db.get("from_parent")))


def test_survives_fork(sonic_db_config: Path) -> None:
    """No loop or thread behind a call: after fork() the child connects and works, and so does the parent."""
    parent = DBConnector("APPL_DB", 0)
    parent.set("from_parent", "p")
    ctx = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[str] = ctx.Queue()
    child = ctx.Process(target=_child_writes, args=(str(sonic_db_config), queue))
    child.start()
    assert queue.get(timeout=10) == "p"
    child.join(10)
    assert child.exitcode == 0
    assert parent.get("from_child") == "yes"
