"""The compatible layer's channels against a real redis-server: state and queue tables, the
keyspace-following SubscriberStateTable, notifications, and Select over them."""

from __future__ import annotations

import select
import threading
import time
from pathlib import Path

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat import swsscommon
from swssd.compat.dbconnector import DBConnector
from swssd.lua import CST_POPS, PST_SET

_ = sonic_db_config


@pytest.fixture
def db(sonic_db_config: Path) -> DBConnector:
    conn = DBConnector("APPL_DB", 0, True)
    conn.config_set("notify-keyspace-events", "AKE")
    return conn


def test_state_table_round_trip(db: DBConnector) -> None:
    ps = swsscommon.ProducerStateTable(db, "abc")
    cs = swsscommon.ConsumerStateTable(db, "abc")
    assert cs.pop() == ["", "", ()]
    ps.set("aaa", swsscommon.FieldValuePairs([("a", "b"), ("c", "d")]))
    ps.set("aaa", [("a", "e")])
    assert ps.count() == 1
    assert cs.pop() == ["aaa", "SET", (("a", "e"), ("c", "d"))]
    ps.delete([str(i) for i in range(5)])
    ps.delete("x")
    keys, ops, fvss = cs.pops()
    assert sorted(keys) == ["0", "1", "2", "3", "4", "x"] and set(ops) == {"DEL"} and set(fvss) == {()}
    ps.set_many([("k1", [("f", "1")]), ("k2", [("f", "2")])])
    assert sorted(swsscommon.transpose_pops(cs.pops())) == [("k1", "SET", (("f", "1"),)), ("k2", "SET", (("f", "2"),))]
    assert db.hgetall("abc:k1").asdict() == {"f": "1"}


def test_state_table_buffered_and_clear(db: DBConnector) -> None:
    pipe = swsscommon.RedisPipeline(db)
    ps = swsscommon.ProducerStateTable(pipe, "buf", True)
    ps.set("a", [("f", "v")])
    ps.delete("b")
    assert pipe.size() == 2 and db.connection.command("SCARD", "buf_KEY_SET") == 0  # held in the pipeline
    ps.flush()
    assert pipe.size() == 0 and ps.count() == 2
    ps.clear()
    assert ps.count() == 0 and db.keys("_buf*") == ()
    unbuffered = swsscommon.ProducerStateTable(db, "one")
    unbuffered.setBuffered(True)  # a pipeline of one command: still sent at once, as in C++
    unbuffered.set("a", [("f", "v")])
    assert db.connection.command("SCARD", "one_KEY_SET") == 1


def test_writers_have_connections_of_their_own(db: DBConnector) -> None:
    """As in C++: a Table or producer made from a DBConnector writes on a new connection."""
    table = swsscommon.Table(db, "T")
    producer = swsscommon.ProducerStateTable(db, "P")
    fds = {db.connection.fileno(), table._pipe.connection.fileno(), producer._pipe.connection.fileno()}
    assert len(fds) == 3
    pipe = swsscommon.RedisPipeline(db, 2)
    on_pipe = swsscommon.Table(pipe, "T", True)
    on_pipe.set("k1", [("f", "v")])
    assert db.hgetall("T:k1").asdict() == {}
    on_pipe.set("k2", [("f", "v")])  # the second command fills the pipeline of 2: both go
    assert db.hgetall("T:k1").asdict() == {"f": "v"} and db.hgetall("T:k2").asdict() == {"f": "v"}
    on_pipe.set("k3", [("f", "v")])
    assert on_pipe.get("k3") == [True, (("f", "v"),)]  # a read sends what waits first
    ntfp = swsscommon.NotificationProducer(pipe, "ch", True)
    assert ntfp.send("op", "d", swsscommon.FieldValuePairs()) == -1 and pipe.size() == 1


def test_a_script_flushed_away_is_loaded_again(db: DBConnector) -> None:
    ps = swsscommon.ProducerStateTable(db, "t")
    cs = swsscommon.ConsumerStateTable(db, "t")
    db.connection.command("SCRIPT", "FLUSH")
    ps.set("k", [("f", "v")])
    assert cs.pop() == ["k", "SET", (("f", "v"),)]
    assert db.connection.command("SCRIPT", "EXISTS", PST_SET.sha, CST_POPS.sha) == [1, 1]


def test_queue_table_round_trip(db: DBConnector) -> None:
    """sonic-swss-common's test_ProducerTable, and the queue's JSON on the wire."""
    pt = swsscommon.ProducerTable(db, "abc")
    ct = swsscommon.ConsumerTable(db, "abc")
    pt.set("bbb", swsscommon.FieldValuePairs([("a", "b"), ("c", "d")]))
    assert db.connection.command("LRANGE", "abc_KEY_VALUE_OP_QUEUE", 0, -1) == ["SSET", '["a","b","c","d"]', "bbb"]
    pt.delete("cccc")
    assert swsscommon.transpose_pops(ct.pops()) == [("bbb", "SET", (("a", "b"), ("c", "d"))), ("cccc", "DEL", ())]
    assert db.hgetall("abc:bbb").asdict() == {"a": "b", "c": "d"}


def test_select_returns_the_ready_table_and_times_out(db: DBConnector) -> None:
    sel = swsscommon.Select()
    cs = swsscommon.ConsumerStateTable(db, "sel")
    sel.addSelectable(cs)
    started = time.monotonic()
    assert sel.select(100) == [swsscommon.Select.TIMEOUT, None]
    assert time.monotonic() - started >= 0.09
    swsscommon.ProducerStateTable(db, "sel").set("k", [("f", "v")])
    state, selectable = sel.select(1000)
    # as the binding: a new base-class proxy of cs, not cs; the cast a new RedisSelect proxy
    assert state == swsscommon.Select.OBJECT and selectable is not cs and selectable.getFd() == cs.getFd()
    redis_select = swsscommon.CastSelectableToRedisSelectObj(selectable)
    assert type(redis_select) is swsscommon.RedisSelect and redis_select.getFd() == cs.getFd()
    assert swsscommon.CastSelectableToSubscriberTableObj(selectable) is None
    assert cs.pop()[0] == "k"
    assert sel.select(0)[0] == swsscommon.Select.TIMEOUT
    sel.removeSelectable(cs)
    assert sel.isQueueEmpty()


def test_select_prefers_priority_then_the_least_recently_used(db: DBConnector) -> None:
    low = swsscommon.ConsumerStateTable(db, "low", 128, 0)
    high = swsscommon.ConsumerStateTable(db, "high", 128, 10)
    other = swsscommon.ConsumerStateTable(db, "other", 128, 0)
    sel = swsscommon.Select()
    sel.addSelectables([low, high, other])
    for name in ("low", "high", "other"):
        swsscommon.ProducerStateTable(db, name).set("k", [("f", "v")])
    time.sleep(0.1)
    order = [sel.select(1000)[1].getFd() for _ in range(3)]
    assert order[0] == high.getFd() and set(order[1:]) == {low.getFd(), other.getFd()}


def test_subscriber_state_table_initial_entries_then_changes(db: DBConnector) -> None:
    t = swsscommon.Table(db, "testsst")
    t.set("old", [("ports@", "Ethernet0")])
    sst = swsscommon.SubscriberStateTable(db, "testsst")
    sel = swsscommon.Select()
    sel.addSelectable(sst)
    state, selectable = sel.select(0)
    assert state == swsscommon.Select.OBJECT and selectable.getFd() == sst.getFd()
    assert sst.pop() == ["old", "SET", (("ports", "Ethernet0"),)]
    t.set("aaa", [("a", "b")])
    t.delete("old")
    state, _ = sel.select(1000)
    assert state == swsscommon.Select.OBJECT
    time.sleep(0.05)
    sel.select(0)
    got = swsscommon.transpose_pops(sst.pops())
    assert got == [("aaa", "SET", (("a", "b"),)), ("old", "DEL", ())]


def test_getfd_is_a_real_descriptor(db: DBConnector) -> None:
    """A program can poll the table's socket itself, then read through the table."""
    sst = swsscommon.SubscriberStateTable(db, "fdt")
    fd = sst.getFd()
    assert select.select([fd], [], [], 0)[0] == []
    swsscommon.Table(db, "fdt").set("k", [("f", "v")])
    assert select.select([fd], [], [], 2)[0] == [fd]
    sst.readData()
    assert sst.pop() == ["k", "SET", (("f", "v"),)]


def test_notifications(db: DBConnector) -> None:
    ntfc = swsscommon.NotificationConsumer(db, "testntf")
    sel = swsscommon.Select()
    sel.addSelectable(ntfc)
    ntfp = swsscommon.NotificationProducer(db, "testntf")
    assert ntfp.send("aaa", "bbb", swsscommon.FieldValuePairs([("a", "b")])) == 1
    state, selectable = sel.select(1000)
    assert state == swsscommon.Select.OBJECT and selectable.getFd() == ntfc.getFd()
    assert ntfc.pop() == ["aaa", "bbb", (("a", "b"),)]
    with pytest.raises(RuntimeError, match="queue is empty"):
        ntfc.pop()
    assert ntfc.peek() == 0
    ntfp.send("op", "data", swsscommon.FieldValuePairs())
    deadline = time.monotonic() + 2
    while ntfc.peek() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ntfc.pops() == [("data", "op", ())]


def test_select_from_another_thread_s_writes(db: DBConnector) -> None:
    """sonic-swss-common's test_SelectYield: select() blocks without holding the GIL."""
    sst = swsscommon.SubscriberStateTable(db, "yield")
    sel = swsscommon.Select()
    sel.addSelectable(sst)

    def later() -> None:
        time.sleep(0.3)
        swsscommon.Table(DBConnector("APPL_DB", 0), "yield").set("aaa", [("a", "b")])

    thread = threading.Thread(target=later)
    thread.start()
    assert sel.select(10000)[0] == swsscommon.Select.OBJECT
    thread.join()
    assert sst.pop() == ["aaa", "SET", (("a", "b"),)]


def test_interface_names_and_logger() -> None:
    assert swsscommon.isInterfaceNameValid("Ethernet0") and not swsscommon.isInterfaceNameValid("TooLongInterfaceName")
    logger = swsscommon.Logger.getInstance()
    logger.setMinPrio(swsscommon.Logger.SWSS_INFO)
    assert logger.getMinPrio() == swsscommon.Logger.SWSS_INFO
    logger.setMinPrio(swsscommon.Logger.SWSS_NOTICE)
