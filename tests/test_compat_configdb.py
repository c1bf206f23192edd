"""swssd.compat.configdb: the binding's ConfigDBConnector rules that interop does not exercise:
connecting (wait_for_init, separators), the static/instance key functions, and listen()."""

from __future__ import annotations

import copy
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat.configdb import ConfigDBConnector, ConfigDBPipeConnector
from swssd.compat.dbconnector import DBConnector

_ = sonic_db_config


@pytest.fixture
def cdb(sonic_db_config: Path) -> Iterator[ConfigDBConnector]:
    db = ConfigDBConnector()
    db.connect(wait_for_init=False)
    db.get_redis_client("CONFIG_DB").config_set("notify-keyspace-events", "AKE")
    yield db
    db.close()


def test_separators_before_and_after_connecting(sonic_db_config: Path) -> None:
    cdb = ConfigDBConnector()
    assert (cdb.db_name, cdb.TABLE_NAME_SEPARATOR, cdb.KEY_SEPARATOR) == ("", "|", "|")
    cdb.db_connect("APPL_DB", False, False)
    assert (cdb.getDbName(), cdb.getTableNameSeparator(), cdb.getKeySeparator()) == ("APPL_DB", ":", ":")
    cdb.set_entry("port_table", ("Ethernet0", "x"), {"a": "1"})
    assert DBConnector("APPL_DB", 0).hgetall("PORT_TABLE:Ethernet0:x").asdict() == {"a": "1"}
    assert cdb.get_keys("PORT_TABLE") == [("Ethernet0", "x")]
    assert cdb.serialize_key(("a", "b")) == "a:b"  # an instance uses its separator...
    assert ConfigDBConnector.serialize_key(("a", "b")) == "a|b"  # ...the class CONFIG_DB's
    assert ConfigDBConnector.deserialize_key("a|b") == ("a", "b") and cdb.deserialize_key("a|b") == "a|b"
    assert ConfigDBConnector.INIT_INDICATOR == cdb.INIT_INDICATOR == "CONFIG_DB_INITIALIZED"


def test_with_statement_closes(sonic_db_config: Path) -> None:
    with ConfigDBPipeConnector() as cdb:
        cdb.connect(wait_for_init=False)
        client = cdb.get_redis_client(cdb.CONFIG_DB)  # type: ignore[attr-defined]
    with pytest.raises(IndexError):
        cdb.get_redis_client("CONFIG_DB")
    with pytest.raises(RuntimeError):
        client.get("x")


def test_wait_for_init_returns_once_the_flag_is_set(cdb: ConfigDBConnector) -> None:
    def set_flag() -> None:
        time.sleep(0.3)
        DBConnector("CONFIG_DB", 0).set("CONFIG_DB_INITIALIZED", "1")

    thread = threading.Thread(target=set_flag)
    started = time.monotonic()
    thread.start()
    waiting = ConfigDBConnector()
    waiting.connect()  # wait_for_init=True by default
    assert time.monotonic() - started >= 0.25
    thread.join()
    waiting.connect()  # set already: returns at once
    assert waiting.get_entry("X", "y") == {}


class Stop(Exception):
    """Raised by the test's signal handler to end listen()."""


def test_listen_init_data_changes_and_a_signal(cdb: ConfigDBConnector) -> None:
    cdb.set_entry("PORT", "Ethernet0", {"alias": "etp1"})
    cdb.set_entry("VLAN", "Vlan1", {"vlanid": "1"})
    cdb.set_entry("ACL", "A", {})
    got: list[tuple[str, Any, Any]] = []
    init: list[Any] = []
    cdb.subscribe("PORT", lambda t, k, d: got.append((t, k, d)), fire_init_data=True)
    cdb.subscribe("VLAN", lambda t, k, d: got.append((t, k, d)))
    cdb.subscribe("ACL", lambda t, k, d: got.append((t, k, d)))
    cdb.subscribe("GONE", lambda t, k, d: got.append((t, k, d)))
    cdb.unsubscribe("GONE")

    def on_signal(signum: int, frame: FrameType | None) -> None:
        raise Stop

    def writer() -> None:
        other = ConfigDBConnector()
        other.connect(wait_for_init=False)
        time.sleep(0.3)
        other.set_entry("VLAN", "Vlan1", {"vlanid": "1"})  # the same as its initial entry: not repeated
        time.sleep(0.2)  # read before the next change (an entry is read when its event is, as in the binding)
        other.mod_entry("VLAN", "Vlan1", {"mtu": "9100"})
        other.set_entry("ACL", "A", None)
        other.set_entry("PORT", "Ethernet4", {"lanes": ["4", "5"]})
        other.set_entry("OTHER", "x", {"a": "b"})
        deadline = time.monotonic() + 5
        while len(got) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, on_signal)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with pytest.raises(Stop):
            # a copy: as in the binding, the dicts handed over are the cache the changes are checked against
            cdb.listen(init_data_handler=lambda data: init.append(copy.deepcopy(data)))
    finally:
        signal.signal(signal.SIGUSR1, previous)
        thread.join()
    assert init == [{"VLAN": {"Vlan1": {"vlanid": "1"}}, "ACL": {"A": {}}}]
    assert got == [
        ("PORT", "Ethernet0", {"alias": "etp1"}),
        ("VLAN", "Vlan1", {"vlanid": "1", "mtu": "9100"}),
        ("ACL", "A", None),
        ("PORT", "Ethernet4", {"lanes": ["4", "5"]}),
    ]
