"""ProducerTable -> ConsumerTable: the ordered JSON op queue (must-hold 3)."""

from __future__ import annotations

import json

from monitor import monitoring
from swssd import ConsumerTable, DBConnector, KeyOpFieldsValues, ProducerTable, Table
from swssd.redis.embedded_redis import EmbeddedRedis

FV = [("f1", "v1"), ("f2", "v2")]


async def test_queue_layout(db: DBConnector) -> None:
    """LPUSH key, JSON array of fields/values, S|D + op: the C++ enqueueDbChange."""
    pt = ProducerTable(db, "T")
    await pt.set("k", FV)
    await pt.delete("k")
    assert await db.redis.lrange("T_KEY_VALUE_OP_QUEUE", 0, -1) == [
        "DDEL", "{}", "k",
        "SSET", '["f1","v1","f2","v2"]', "k",
    ]
    assert json.loads(await db.redis.lindex("T_KEY_VALUE_OP_QUEUE", -2)) == ["f1", "v1", "f2", "v2"]


async def test_consumer_keeps_order_and_strips_s_d(db: DBConnector) -> None:
    pt = ProducerTable(db, "T")
    await pt.set("k1", FV)
    await pt.set("k2", [("a", "1")])
    await pt.delete("k1")
    await pt.set("k1", [("b", "2")])
    await pt.set("k3", [("c", "3")], op="create")
    await pt.delete("k3", op="remove")
    items = await ConsumerTable(db, "T").pops()
    assert items == [
        ("k1", "SET", FV),
        ("k2", "SET", [("a", "1")]),
        ("k1", "DEL", []),
        ("k1", "SET", [("b", "2")]),
        ("k3", "create", [("c", "3")]),
        ("k3", "remove", []),
    ]
    assert all(isinstance(i, KeyOpFieldsValues) for i in items)
    assert await Table(db, "T").dump() == {"k1": {"b": "2"}, "k2": {"a": "1"}}
    assert await db.redis.exists("T_KEY_VALUE_OP_QUEUE") == 0


async def test_field_order_is_kept(db: DBConnector) -> None:
    fvs = [("z", "1"), ("a", "2"), ("m", "3")]
    await ProducerTable(db, "T").set("k", fvs)
    assert await ConsumerTable(db, "T").pops() == [("k", "SET", fvs)]


async def test_set_with_no_fields(db: DBConnector) -> None:
    await ProducerTable(db, "T").set("k", [])
    assert await db.redis.lrange("T_KEY_VALUE_OP_QUEUE", 0, -1) == ["SSET", "[]", "k"]
    assert await ConsumerTable(db, "T").pops() == [("k", "SET", [])]
    assert await Table(db, "T").get("k") is None


async def test_modify_redis_false_leaves_the_table_alone(db: DBConnector) -> None:
    await Table(db, "T").set("k1", [("old", "x")])
    pt = ProducerTable(db, "T")
    await pt.set("k1", FV)
    await pt.set("k2", FV)
    await pt.delete("k1")
    await pt.set("k3", [("f", "v")], op="custom_op")  # an op the script would refuse to apply
    items = await ConsumerTable(db, "T", modify_redis=False).pops()
    assert items == [("k1", "SET", FV), ("k2", "SET", FV), ("k1", "DEL", []), ("k3", "custom_op", [("f", "v")])]
    assert await Table(db, "T").dump() == {"k1": {"old": "x"}}


async def test_prefix_writes_prefix_table_key(db: DBConnector) -> None:
    pt = ProducerTable(db, "T")
    await pt.set("k", FV)
    await pt.set("gone", FV)
    await pt.delete("gone")
    ct = ConsumerTable(db, "T")
    assert await ct.pops(prefix="ASIC_STATE_") == [("k", "SET", FV), ("gone", "SET", FV), ("gone", "DEL", [])]
    assert sorted(await db.redis.keys("*")) == ["ASIC_STATE_T:k"]
    assert await db.redis.hgetall("ASIC_STATE_T:k") == dict(FV)


async def test_prefix_with_pop(db: DBConnector) -> None:
    """pop(prefix) must write where pops(prefix) writes."""
    await ProducerTable(db, "T").set("k", FV)
    assert await ConsumerTable(db, "T").pop(prefix="P_") == ("k", "SET", FV)
    assert await db.redis.keys("*") == ["P_T:k"]


async def test_empty_key_writes_the_bare_table_name(db: DBConnector) -> None:
    pt = ProducerTable(db, "T")
    await pt.set("", FV)
    ct = ConsumerTable(db, "T")
    assert await ct.pops() == [("", "SET", FV)]
    assert await db.redis.keys("*") == ["T"]
    assert await db.redis.hgetall("T") == dict(FV)
    await pt.delete("")
    assert await ct.pops() == [("", "DEL", [])]
    assert await db.redis.keys("*") == []


async def test_pop_one_at_a_time_in_order(db: DBConnector) -> None:
    pt = ProducerTable(db, "T")
    for i in range(5):
        await pt.set(f"k{i}", [("i", str(i))])
    ct = ConsumerTable(db, "T", pop_batch_size=2)
    got = []
    while (item := await ct.pop()) is not None:
        got.append(item)
    assert got == [(f"k{i}", "SET", [("i", str(i))]) for i in range(5)]


async def test_pop_batch_size(db: DBConnector) -> None:
    pt = ProducerTable(db, "T")
    for i in range(7):
        await pt.set(f"k{i}", FV)
    ct = ConsumerTable(db, "T", pop_batch_size=3)
    batches = [await ct.pops() for _ in range(4)]
    assert [len(b) for b in batches] == [3, 3, 1, 0]
    assert [k for b in batches for k, _, _ in b] == [f"k{i}" for i in range(7)]


async def test_buffered_producer_sends_nothing_until_flush(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    pt = ProducerTable(db, "T", buffered=True)
    async with monitoring(clean_redis.port) as mon:
        await pt.set("a", FV)
        await pt.delete("a")
        await pt.set("b", FV)
    assert mon.texts() == []
    assert await db.redis.llen("T_KEY_VALUE_OP_QUEUE") == 0
    await pt.flush()
    assert await ConsumerTable(db, "T").pops() == [("a", "SET", FV), ("a", "DEL", []), ("b", "SET", FV)]


async def test_has_pending_and_start_up_data(db: DBConnector) -> None:
    await ProducerTable(db, "T").set("early", FV)
    ct = ConsumerTable(db, "T")
    assert await ct.has_pending()
    assert await ct.pops() == [("early", "SET", FV)]
    assert not await ct.has_pending()


async def test_pipe_separator_db_still_writes_colon_keys(unix_db: DBConnector) -> None:
    """The consumer script hard-codes ':' in TABLE:key, as the C++ one does, whatever the db separator."""
    pt = ProducerTable(unix_db, "T")
    await pt.set("k", FV)
    assert await ConsumerTable(unix_db, "T").pops() == [("k", "SET", FV)]
    assert await unix_db.redis.keys("*") == ["T:k"]
    assert pt.channel == "T_CHANNEL@6"
