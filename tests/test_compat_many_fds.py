"""The blocking layer's waits with descriptors past 1,023 (issue 35 item 9): select() cannot watch
them ("filedescriptor out of range in select()"), so every wait is a poll()/epoll. Each test opens
1,100 descriptors first, so every connection the layer makes afterwards lands past 1,023."""

from __future__ import annotations

import gc
import os
import resource
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat.configdb import ConfigDBConnector
from swssd.compat.dbconnector import DBConnector
from swssd.compat.dbinterface import DBInterface
from swssd.compat.selectable import Selectable
from swssd.compat.selector import Select
from swssd.compat.sonicv2connector import SonicV2Connector
from swssd.compat.subscriber_state_table import SubscriberStateTable

_ = sonic_db_config

#: descriptors held open by the tests: past select()'s FD_SETSIZE of 1,024
HELD = 1100


@pytest.fixture
def many_fds() -> Iterator[None]:
    """1,100 descriptors open (the soft RLIMIT_NOFILE raised for them if it is lower)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = HELD + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"RLIMIT_NOFILE's hard limit {hard} is below {wanted}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    # An earlier test's socket left to the garbage collector would close during the test and
    # free a low descriptor for the layer's next connection (a CI run's pub/sub got 19): collect
    # it now, before filling, and not during the test.
    gc.collect()
    gc.disable()
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(HELD)]
    try:
        yield
    finally:
        gc.enable()
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


class Done(Exception):
    """Ends ConfigDBConnector.listen() from a handler."""


def test_pubsub_get_message_past_descriptor_1023(sonic_db_config: Path, many_fds: None) -> None:
    db = DBConnector("CONFIG_DB", 0, True)
    db.config_set("notify-keyspace-events", "KEA")
    pubsub = db.pubsub()
    pubsub.psubscribe("__keyspace@4__:PORT|*")
    assert pubsub.getFd() > 1023
    assert pubsub.get_message(0.05) == {}  # the wait itself, nothing come
    db.hset("PORT|Ethernet0", "mtu", "9100")
    message = pubsub.get_message(5)
    assert (message["channel"], message["data"]) == ("__keyspace@4__:PORT|Ethernet0", "hset")


def test_configdb_listen_past_descriptor_1023(sonic_db_config: Path, many_fds: None) -> None:
    config = ConfigDBConnector()
    config.connect(wait_for_init=False)
    writer = ConfigDBConnector()
    writer.connect(wait_for_init=False)
    seen: list[tuple[str, Any]] = []

    def handler(table: str, key: str, data: Any) -> None:
        seen.append((key, data))
        raise Done

    config.subscribe("PORT", handler)
    with pytest.raises(Done):  # the entry written once listen() has subscribed
        config.listen(init_data_handler=lambda _: writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"}))
    assert config.pubsub is not None and config.pubsub.getFd() > 1023
    assert seen == [("Ethernet0", {"mtu": "9100"})]


def test_dbinterface_blocking_read_past_descriptor_1023(
    sonic_db_config: Path, many_fds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DBInterface, "DATA_RETRIEVAL_WAIT_TIME", 0)
    reader = SonicV2Connector()
    reader.connect("STATE_DB")
    assert reader.get_redis_client("STATE_DB").connection.fileno() > 1023
    writer = DBConnector("STATE_DB", 0, True)
    later = threading.Timer(0.3, writer.hset, ("PORT_TABLE|Ethernet0", "oper_status", "up"))
    later.start()
    try:
        assert reader.get("STATE_DB", "PORT_TABLE|Ethernet0", "oper_status", blocking=True) == "up"
    finally:
        later.join()


def test_select_past_descriptor_1023(sonic_db_config: Path, many_fds: None) -> None:
    db = DBConnector("CONFIG_DB", 0, True)
    db.config_set("notify-keyspace-events", "KEA")
    table = SubscriberStateTable(db, "PORT")
    assert table.getFd() > 1023
    sel = Select()
    sel.addSelectable(table)
    assert sel.select(50) == [Select.TIMEOUT, None]
    DBConnector("CONFIG_DB", 0, True).hset("PORT|Ethernet0", "mtu", "9100")
    state, ready = sel.select(5000)
    assert state == Select.OBJECT and isinstance(ready, Selectable)
    assert table.pop() == ["Ethernet0", "SET", (("mtu", "9100"),)]
