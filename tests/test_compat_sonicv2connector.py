"""swssd.compat.sonicv2connector and dbinterface: swsssdk's API with the binding's value rules."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat.dbinterface import DBInterface, UnavailableDataError
from swssd.compat.sonicv2connector import SonicV2Connector
from swssd.redis.embedded_redis import EmbeddedRedis

_ = sonic_db_config


@pytest.fixture
def v2(sonic_db_config: Path) -> SonicV2Connector:
    db = SonicV2Connector(use_unix_socket_path=True)
    db.connect("TEST_DB")
    return db


@pytest.fixture
def quick_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocking reads with waits in tenths of seconds instead of C++'s 10 s / 60 s / 3 s."""
    monkeypatch.setattr(DBInterface, "PUB_SUB_NOTIFICATION_TIMEOUT", 0.2)
    monkeypatch.setattr(DBInterface, "PUB_SUB_MAXIMUM_DATA_WAIT", 1.0)
    monkeypatch.setattr(DBInterface, "DATA_RETRIEVAL_WAIT_TIME", 0)


def test_databases_are_attributes_and_namespace_defaults(sonic_db_config: Path) -> None:
    db = SonicV2Connector(use_unix_socket_path=True, namespace=None, host="10.0.0.1", decode_responses=True)
    assert db.TEST_DB == "TEST_DB" and db.CONFIG_DB == "CONFIG_DB"  # type: ignore[attr-defined]
    assert db.namespace == "" and db.getNamespace() == ""
    assert db.get_dbid("CONFIG_DB") == 4 and db.get_db_separator("CONFIG_DB") == "|"
    assert "APPL_DB" in db.get_db_list()
    with pytest.raises(ValueError, match="decode_responses"):
        SonicV2Connector(decode_responses=False)


def test_value_rules(v2: SonicV2Connector) -> None:
    assert v2.set("TEST_DB", "key0", "field1", "value2") == 1
    assert v2.get("TEST_DB", "key0", "field1") == "value2"
    v2.set("TEST_DB", "kkk3", "field3", "None")
    assert v2.get("TEST_DB", "kkk3", "field3") is None  # the string "None" reads as None
    assert v2.get("TEST_DB", "kkk3", "missing") is None
    assert v2.get("TEST_DB", "missing", "missing") is None
    assert v2.get_all("TEST_DB", "kkk3") == {"field3": ""}  # and as "" in get_all
    assert v2.get_all("TEST_DB", "missing") == {}
    assert v2.keys("TEST_DB", "nomatch*") == []
    v2.set("TEST_DB", "n", "f", 5)
    assert v2.get("TEST_DB", "n", "f") == "5"
    assert isinstance(v2.keys("TEST_DB"), list) and sorted(v2.keys("TEST_DB", "k*")) == ["key0", "kkk3"]
    assert v2.exists("TEST_DB", "n") and v2.hexists("TEST_DB", "n", "f") and not v2.hexists("TEST_DB", "n", "g")
    assert (v2.delete("TEST_DB", "n"), v2.delete("TEST_DB", "n")) == (1, 0)
    v2.hmset("TEST_DB", "h", {"b": "2", "a": "1"})
    assert v2.get_redis_client("TEST_DB").connection.command("HGETALL", "h") == ["a", "1", "b", "2"]
    v2.delete_all_by_pattern("TEST_DB", "k*")
    assert sorted(v2.keys("TEST_DB")) == ["h"]
    assert v2.publish("TEST_DB", "chan", "m") == 0


def test_connect_turns_keyspace_events_on(sonic_db_config: Path) -> None:
    v2 = SonicV2Connector()
    client_before = SonicV2Connector()
    client_before.connect("APPL_DB")
    client_before.get_redis_client("APPL_DB").config_set("notify-keyspace-events", "")
    v2.connect("APPL_DB")
    events = v2.get_redis_client("APPL_DB").connection.command("CONFIG", "GET", "notify-keyspace-events")[1]
    assert sorted(events) == sorted("AKE")


def test_unknown_database_is_an_index_error(v2: SonicV2Connector) -> None:
    with pytest.raises(IndexError):
        v2.get_all("APPL_DB", "x")  # not connected
    with pytest.raises(IndexError, match="NO_SUCH_DB"):
        v2.connect("NO_SUCH_DB")


def test_blocking_read_waits_for_the_data(v2: SonicV2Connector, sonic_db_config: Path, quick_waits: None) -> None:
    def later() -> None:
        time.sleep(0.3)
        writer = SonicV2Connector(use_unix_socket_path=True)
        writer.connect("TEST_DB")
        writer.set("TEST_DB", "coming", "f", "v")

    thread = threading.Thread(target=later)
    thread.start()
    started = time.monotonic()
    assert v2.get_all("TEST_DB", "coming", blocking=True) == {"f": "v"}
    assert time.monotonic() - started >= 0.25
    thread.join()
    assert v2.keys("TEST_DB", "coming", blocking=True) == ["coming"]


def test_blocking_read_gives_up(v2: SonicV2Connector, quick_waits: None) -> None:
    with pytest.raises(UnavailableDataError, match="unavailable in database"):
        v2.get("TEST_DB", "never", "f", blocking=True)


def test_connection_lost_under_a_blocking_call_is_made_again(
    v2: SonicV2Connector, clean_redis: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DBInterface, "CONNECT_RETRY_WAIT_TIME", 0)
    v2.set("TEST_DB", "h", "f", "v")
    client = v2.get_redis_client("TEST_DB")
    killer = SonicV2Connector()
    killer.connect("APPL_DB")
    first = client.connection.command("CLIENT", "ID")
    killer.get_redis_client("APPL_DB").connection.command("CLIENT", "KILL", "ID", first)
    assert v2.get("TEST_DB", "h", "f", blocking=True) == "v"
    assert v2.get_redis_client("TEST_DB") is not client
    victim = v2.get_redis_client("TEST_DB").connection.command("CLIENT", "ID")
    killer.get_redis_client("APPL_DB").connection.command("CLIENT", "KILL", "ID", victim)
    with pytest.raises(RuntimeError, match=r"Redis connection to .*redis\.sock"):  # not blockable: raised, as in C++
        v2.exists("TEST_DB", "h")
