"""ConsumerStateTable semantics, as the C++ consumer_state_table_pops.lua gives them (must-hold 3)."""

from __future__ import annotations

import pytest

from swssd import ConsumerStateTable, DBConnector, KeyOpFieldsValues, ProducerStateTable, Table

FV = [("f1", "v1"), ("f2", "v2")]


def by_key(items: list[KeyOpFieldsValues]) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    out = {}
    for key, op, fvs in items:
        assert key not in out, "a key came twice in one pop"
        out[key] = (op, fvs)
    return out


async def test_pops_empty(db: DBConnector) -> None:
    assert await ConsumerStateTable(db, "T").pops() == []
    assert await ConsumerStateTable(db, "T").pop() is None


async def test_pops_moves_fields_into_the_table(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set("k", FV)
    items = await ConsumerStateTable(db, "T").pops()
    assert items == [KeyOpFieldsValues("k", "SET", FV)]
    assert isinstance(items[0], KeyOpFieldsValues)
    assert await Table(db, "T").get("k") == FV
    assert sorted(await db.redis.keys("*")) == ["T:k"]  # key set and state hash consumed


async def test_pops_returns_only_fields_changed_since_last_pop(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    cst = ConsumerStateTable(db, "T")
    await pst.set("k", [("a", "1"), ("b", "2"), ("c", "3")])
    assert await cst.pops() == [("k", "SET", [("a", "1"), ("b", "2"), ("c", "3")])]
    await pst.set("k", [("b", "20")])
    await pst.set("k", [("c", "30")])
    await pst.set("k", [("b", "200")])
    assert await cst.pops() == [("k", "SET", [("b", "200"), ("c", "30")])]
    assert dict(await Table(db, "T").get("k") or []) == {"a": "1", "b": "200", "c": "30"}
    assert await cst.pops() == []


async def test_del_when_the_state_hash_is_empty(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    cst = ConsumerStateTable(db, "T")
    await pst.set("k", FV)
    await cst.pops()
    await pst.delete("k")
    assert await cst.pops() == [("k", "DEL", [])]
    assert await Table(db, "T").get("k") is None
    assert await db.redis.keys("*") == []


async def test_set_then_delete_between_pops_is_one_del(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    await Table(db, "T").set("k", [("old", "x")])
    await pst.set("k", FV)
    await pst.delete("k")
    assert await ConsumerStateTable(db, "T").pops() == [("k", "DEL", [])]
    assert await Table(db, "T").get("k") is None


async def test_delete_then_set_between_pops_is_one_set_without_stale_fields(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    cst = ConsumerStateTable(db, "T")
    await pst.set("k", [("a", "1"), ("b", "2")])
    await cst.pops()
    await pst.delete("k")
    await pst.set("k", [("c", "3")])
    assert await cst.pops() == [("k", "SET", [("c", "3")])]
    assert await Table(db, "T").get("k") == [("c", "3")]


async def test_track_deletes_reports_del_then_set(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    cst = ConsumerStateTable(db, "T", track_deletes=True)
    await pst.set("k", [("a", "1"), ("b", "2")])
    assert await cst.pops() == [("k", "SET", [("a", "1"), ("b", "2")])]
    await pst.delete("k")
    await pst.set("k", [("c", "3")])
    assert await cst.pops() == [("k", "DEL", []), ("k", "SET", [("c", "3")])]
    assert await Table(db, "T").get("k") == [("c", "3")]


async def test_track_deletes_plain_cases_match_the_c_script(db: DBConnector) -> None:
    """Without a delete-then-set the tracked variant returns exactly what the C++ script returns."""
    pst = ProducerStateTable(db, "T")
    await Table(db, "T").set("gone", FV)
    await pst.set("new", FV)
    await pst.delete("gone")
    await pst.delete("never")
    items = await ConsumerStateTable(db, "T", track_deletes=True).pops()
    assert by_key(items) == {"new": ("SET", FV), "gone": ("DEL", []), "never": ("DEL", [])}
    assert await Table(db, "T").dump() == {"new": dict(FV)}


async def test_track_deletes_batched(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    await pst.set_many([(f"k{i}", FV) for i in range(4)])
    await ConsumerStateTable(db, "T").pops()
    await pst.delete_many(["k0", "k1"])
    await pst.set_many([("k1", [("n", "1")]), ("k2", [("n", "2")])])
    items = await ConsumerStateTable(db, "T", track_deletes=True).pops()
    ops = sorted((k, op, fvs) for k, op, fvs in items)
    assert ops == [
        ("k0", "DEL", []),
        ("k1", "DEL", []),
        ("k1", "SET", [("n", "1")]),
        ("k2", "SET", [("n", "2")]),
    ]
    # DEL comes right before its SET.
    keys = [k for k, _, _ in items]
    i = keys.index("k1")
    assert items[i].op == "DEL" and items[i + 1] == ("k1", "SET", [("n", "1")])
    assert await Table(db, "T").dump() == {"k1": {"n": "1"}, "k2": {"f1": "v1", "f2": "v2", "n": "2"}, "k3": dict(FV)}


async def test_pop_batch_size_limits_each_pop(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    await pst.set_many([(f"k{i}", FV) for i in range(10)])
    cst = ConsumerStateTable(db, "T", pop_batch_size=4)
    sizes = [len(await cst.pops()) for _ in range(4)]
    assert sizes == [4, 4, 2, 0]
    assert sorted(await Table(db, "T").keys()) == sorted(f"k{i}" for i in range(10))


async def test_pop_returns_one_at_a_time(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    await pst.set_many([("a", FV), ("b", FV), ("c", FV)])
    await pst.delete("d")
    cst = ConsumerStateTable(db, "T", pop_batch_size=2)
    got = []
    while (item := await cst.pop()) is not None:
        assert isinstance(item, KeyOpFieldsValues)
        got.append(item)
    assert sorted(got) == [("a", "SET", FV), ("b", "SET", FV), ("c", "SET", FV), ("d", "DEL", [])]
    assert await cst.pop() is None


async def test_has_pending(db: DBConnector) -> None:
    cst = ConsumerStateTable(db, "T")
    assert not await cst.has_pending()
    await ProducerStateTable(db, "T").set("k", FV)
    assert await cst.has_pending()
    await cst.pops()
    assert not await cst.has_pending()


async def test_ready_follows_full_batches_and_notify(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    await pst.set_many([(f"k{i}", FV) for i in range(5)])
    cst = ConsumerStateTable(db, "T", pop_batch_size=5)
    assert not cst.ready
    cst.notify()
    assert cst.ready
    assert len(await cst.pops()) == 5
    assert cst.ready  # a full batch: more may wait
    assert await cst.pops() == []
    assert not cst.ready


async def test_pipe_separator_database(unix_db: DBConnector) -> None:
    pst = ProducerStateTable(unix_db, "PORT_TABLE")
    await pst.set("Ethernet0", FV)
    assert await ConsumerStateTable(unix_db, "PORT_TABLE").pops() == [("Ethernet0", "SET", FV)]
    assert sorted(await unix_db.redis.keys("*")) == ["PORT_TABLE|Ethernet0"]


async def test_consumer_created_after_producer_sees_the_data(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set("early", FV)
    cst = ConsumerStateTable(db, "T")
    assert await cst.has_pending()
    assert await cst.pops() == [("early", "SET", FV)]


async def test_tables_do_not_mix(db: DBConnector) -> None:
    await ProducerStateTable(db, "A").set("k", [("t", "A")])
    await ProducerStateTable(db, "AB").set("k", [("t", "AB")])
    assert await ConsumerStateTable(db, "A").pops() == [("k", "SET", [("t", "A")])]
    assert await ConsumerStateTable(db, "AB").pops() == [("k", "SET", [("t", "AB")])]


def test_pop_batch_size_must_be_positive(db: DBConnector) -> None:
    with pytest.raises(ValueError, match="pop_batch_size"):
        ConsumerStateTable(db, "T", pop_batch_size=0)
