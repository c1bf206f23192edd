"""ProducerStateTable semantics: buffering, count, clear, temp view (must-hold 3)."""

from __future__ import annotations

import pytest

from monitor import monitoring, script_runs
from swssd import ConsumerStateTable, DBConnector, ProducerStateTable, Table, TempViewError
from swssd.lua import PST_APPLY_VIEW, PST_BATCHED_DEL, PST_BATCHED_SET, PST_CLEAR, PST_DEL, PST_SET
from swssd.redis.embedded_redis import EmbeddedRedis

FV = [("f1", "v1"), ("f2", "v2")]


async def pending(db: DBConnector, name: str = "T") -> tuple[set[str], set[str], list[str]]:
    """Key set, del set and state hashes of a table, read with a plain client."""
    keys = set(await db.redis.smembers(f"{name}_KEY_SET"))
    dels = set(await db.redis.smembers(f"{name}_DEL_SET"))
    state = sorted(await db.redis.keys(f"_{name}{db.separator}*"))
    return keys, dels, state


async def popped(db: DBConnector, name: str = "T") -> dict[str, tuple[str, dict[str, str]]]:
    out = {}
    for key, op, fvs in await ConsumerStateTable(db, name, pop_batch_size=10_000).pops():
        assert key not in out, "a key came twice in one pop"
        out[key] = (op, dict(fvs))
    return out


# -- plain writes ------------------------------------------------------------------------------


async def test_set_writes_state_hash_and_key_set(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set("k", FV)
    assert await pending(db) == ({"k"}, set(), ["_T:k"])
    assert await db.redis.hgetall("_T:k") == dict(FV)
    assert await db.redis.keys("T:*") == []  # the table itself is the consumer's to write


async def test_delete_marks_key_and_del_set(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    await pst.set("k", FV)
    await pst.delete("k")
    assert await pending(db) == ({"k"}, {"k"}, [])


async def test_set_many_and_delete_many(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    await pst.set_many([("a", FV), ("b", {"x": "1"}), ("c", [])])
    assert await pending(db) == ({"a", "b", "c"}, set(), ["_T:a", "_T:b"])
    await pst.delete_many(["a", "z"])
    assert await pending(db) == ({"a", "b", "c", "z"}, {"a", "z"}, ["_T:b"])
    await pst.set_many([])
    await pst.delete_many([])
    assert await pending(db) == ({"a", "b", "c", "z"}, {"a", "z"}, ["_T:b"])


async def test_set_with_empty_fields_announces_the_key(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    """C++ sends the set script with no state-hash KEYS; the consumer then sees a bare DEL."""
    await Table(db, "T").set("k", FV)
    pst = ProducerStateTable(db, "T")
    async with monitoring(clean_redis.port) as mon:
        await pst.set("k", [])
    assert [[ln.text for ln in run] for run in script_runs(mon.lines, PST_SET.sha)] == [[
        f'"EVALSHA" "{PST_SET.sha}" "2" "T_CHANNEL@0" "T_KEY_SET" "G" "k"',
        '"SADD" "T_KEY_SET" "k"',
        '"PUBLISH" "T_CHANNEL@0" "G"',
    ]]
    assert await ConsumerStateTable(db, "T").pops() == [("k", "DEL", [])]
    # No delete was requested, so the script leaves the table entry in place (as in C++).
    assert await Table(db, "T").get("k") == FV


async def test_publish_only_when_key_is_new_to_the_key_set(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    pst = ProducerStateTable(db, "T")
    async with monitoring(clean_redis.port) as mon:
        await pst.set("k", FV)
        await pst.set("k", [("f3", "v3")])
        await pst.delete("k")
        await pst.set_many([("k", FV), ("n", FV)])
        await pst.set_many([("k", FV), ("n", FV)])
        await pst.delete_many(["m"])
        await pst.delete_many(["m", "n"])
    publishes = [ln for ln in mon.lines if ln.is_lua and ln.command == "PUBLISH"]
    # new k; (k again: no); (del k: no); n new in batch; (batch again: no); m new; (m, n: no)
    assert len(publishes) == 3
    assert all(ln.args[1:] == ["T_CHANNEL@0", "G"] for ln in publishes)


async def test_pipe_separator_state_hash_and_channel_db_id(unix_db: DBConnector) -> None:
    await ProducerStateTable(unix_db, "T").set("k", FV)
    assert sorted(await unix_db.redis.keys("*")) == ["T_KEY_SET", "_T|k"]
    assert ProducerStateTable(unix_db, "T").channel == "T_CHANNEL@6"


# -- buffered ----------------------------------------------------------------------------------


async def test_buffered_sends_nothing_until_flush(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    pst = ProducerStateTable(db, "T", buffered=True)
    async with monitoring(clean_redis.port) as mon:
        await pst.set("a", FV)
        await pst.set_many([("b", FV), ("c", FV)])
        await pst.delete("a")
        await pst.delete_many(["b"])
        await pst.set("a", [("f9", "v9")])
    assert mon.texts() == []
    assert await db.redis.keys("*") == []

    async with monitoring(clean_redis.port) as mon:
        await pst.flush()
    order = [run[0].args[1] for run in script_runs(mon.lines)]
    assert order == [PST_SET.sha, PST_BATCHED_SET.sha, PST_DEL.sha, PST_BATCHED_DEL.sha, PST_SET.sha]
    assert await popped(db) == {
        "a": ("SET", {"f9": "v9"}),
        "b": ("DEL", {}),
        "c": ("SET", dict(FV)),
    }
    async with monitoring(clean_redis.port) as mon:
        await pst.flush()  # nothing left
    assert mon.texts() == []


async def test_unbuffered_sends_each_call_at_once(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    await pst.set("a", FV)
    assert await db.redis.smembers("T_KEY_SET") == {"a"}


# -- count and clear ---------------------------------------------------------------------------


async def test_count_is_the_key_set_size(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    assert await pst.count() == 0
    await pst.set_many([(f"k{i}", FV) for i in range(5)])
    await pst.delete("gone")
    assert await pst.count() == 6
    await ConsumerStateTable(db, "T", pop_batch_size=4).pops()
    assert await pst.count() == 2


async def test_count_of_a_buffered_producer_includes_what_it_queued(db: DBConnector) -> None:
    """Like the C++ pipeline, a reply-bearing command sends what was queued before it."""
    pst = ProducerStateTable(db, "T", buffered=True)
    await pst.set("a", FV)
    assert await pst.count() == 1


@pytest.mark.parametrize("fast", [False, True], ids=["cpp-scripts", "fast-scripts"])
async def test_a_buffered_set_sends_the_fields_as_they_were_at_the_call(db: DBConnector, fast: bool) -> None:
    """The caller may reuse its list once set() returned: flush() sends what set() was given."""
    pst = ProducerStateTable(db, "T", buffered=True, fast_scripts=fast)
    fields = [["f1", "v1"], ["f2", "v2"]]
    await pst.set("a", fields)
    fields[0][1] = "changed"
    fields.append(["f3", "v3"])
    await pst.set("b", fields)
    fields.clear()
    await pst.flush()
    assert await popped(db) == {
        "a": ("SET", {"f1": "v1", "f2": "v2"}),
        "b": ("SET", {"f1": "changed", "f2": "v2", "f3": "v3"}),
    }


async def test_clear_drops_pending_operations(db: DBConnector) -> None:
    await Table(db, "T").set("kept", FV)
    pst = ProducerStateTable(db, "T")
    await pst.set_many([("a", FV), ("b", FV)])
    await pst.delete("kept")
    await ProducerStateTable(db, "OTHER").set("x", FV)
    await pst.clear()
    assert await pending(db) == (set(), set(), [])
    assert await pst.count() == 0
    assert await ConsumerStateTable(db, "T").pops() == []
    assert await Table(db, "T").get("kept") == FV  # the table itself is untouched
    assert await pending(db, "OTHER") == ({"x"}, set(), ["_OTHER:x"])


async def test_clear_of_a_buffered_producer(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T", buffered=True)
    await pst.set("a", FV)
    await pst.clear()
    await pst.flush()
    assert await pending(db) == (set(), set(), [])


# -- temp view ---------------------------------------------------------------------------------


async def test_temp_view_writes_stay_in_memory(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    pst = ProducerStateTable(db, "T")
    pst.create_temp_view()
    assert pst.temp_view_active
    async with monitoring(clean_redis.port) as mon:
        await pst.set("a", FV)
        await pst.set_many([("b", FV), ("c", FV)])
        await pst.delete("b")
        await pst.delete_many(["c"])
    assert mon.texts() == []
    assert await db.redis.keys("*") == []


async def test_apply_temp_view_seed_example_consumer_sees_the_diff(db: DBConnector) -> None:
    """Seed 001's example: ENTRY0 changes and loses key2, ENTRY1/2 go, ENTRY3 is new."""
    t = Table(db, "PSEUDOTABLE")
    await t.set("ENTRY0", [("key0", "value0"), ("key1", "value1"), ("key2", "value2")])
    await t.set("ENTRY1", [("key0", "value0"), ("key1", "value1")])
    await t.set("ENTRY2", [("key0", "value0"), ("key1", "value1")])
    pst = ProducerStateTable(db, "PSEUDOTABLE")
    pst.create_temp_view()
    await pst.set_many([
        ("ENTRY0", [("key0", "value0"), ("key1", "value11"), ("key3", "value3")]),
        ("ENTRY3", [("key0", "value0"), ("key1", "value1")]),
    ])
    await pst.apply_temp_view()
    assert not pst.temp_view_active
    assert await popped(db, "PSEUDOTABLE") == {
        "ENTRY0": ("SET", {"key0": "value0", "key1": "value11", "key3": "value3"}),
        "ENTRY1": ("DEL", {}),
        "ENTRY2": ("DEL", {}),
        "ENTRY3": ("SET", {"key0": "value0", "key1": "value1"}),
    }
    assert await t.dump() == {
        "ENTRY0": {"key0": "value0", "key1": "value11", "key3": "value3"},
        "ENTRY3": {"key0": "value0", "key1": "value1"},
    }


async def test_apply_temp_view_minimal_diff(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    t = Table(db, "T")
    await t.set("same", [("a", "1"), ("b", "2")])
    await t.set("changed", [("a", "1"), ("b", "2")])
    await t.set("grown", [("a", "1")])
    await t.set("shrunk", [("a", "1"), ("b", "2")])
    await t.set("gone", [("a", "1")])
    pst = ProducerStateTable(db, "T")
    pst.create_temp_view()
    await pst.set("same", [("b", "2"), ("a", "1")])
    await pst.set("changed", [("a", "1"), ("b", "22")])
    await pst.set("grown", [("a", "1"), ("c", "3")])
    await pst.set("shrunk", [("a", "1")])
    await pst.set("new", [("z", "26"), ("y", "25")])
    async with monitoring(clean_redis.port) as mon:
        await pst.apply_temp_view()
    [run] = script_runs(mon.lines, PST_APPLY_VIEW.sha)
    assert run[0].args == [
        "EVALSHA", PST_APPLY_VIEW.sha, "7", "T_CHANNEL@0", "T_KEY_SET", "T_DEL_SET",
        "_T:changed", "_T:grown", "_T:new", "_T:shrunk",
        "G",
        "5", "changed", "gone", "grown", "shrunk", "new",  # current keys in order, then new ones
        "2", "gone", "shrunk",
        "2", "a", "1", "b", "22",
        "2", "a", "1", "c", "3",
        "2", "y", "25", "z", "26",
        "1", "a", "1",
    ]
    assert await popped(db) == {
        "changed": ("SET", {"a": "1", "b": "22"}),
        "gone": ("DEL", {}),
        "grown": ("SET", {"a": "1", "c": "3"}),
        "shrunk": ("SET", {"a": "1"}),
        "new": ("SET", {"y": "25", "z": "26"}),
    }
    assert await t.dump() == {
        "same": {"a": "1", "b": "2"},
        "changed": {"a": "1", "b": "22"},
        "grown": {"a": "1", "c": "3"},
        "shrunk": {"a": "1"},
        "new": {"y": "25", "z": "26"},
    }


async def test_apply_temp_view_sorts_keys_and_fields_by_bytes(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    """std::map<std::string> order is byte order; for UTF-8 that equals code point order."""
    keys = ["b", "Z", "中", "a", "Ä", "a b", "a:b", "_"]
    fields = ["y", "Ü", "A", "x", "é"]
    pst = ProducerStateTable(db, "T")
    pst.create_temp_view()
    await pst.set_many([(k, [(f, k + f) for f in fields]) for k in keys])
    async with monitoring(clean_redis.port) as mon:
        await pst.apply_temp_view()
    [run] = script_runs(mon.lines, PST_APPLY_VIEW.sha)
    args = run[0].args
    by_bytes = sorted(keys, key=lambda s: s.encode())
    nkeys = len(keys)
    assert args[6:6 + nkeys] == ["_T:" + k for k in by_bytes]
    argv = args[6 + nkeys:]
    assert argv[:2 + nkeys] == ["G", str(nkeys), *by_bytes]
    assert argv[2 + nkeys] == "0"
    first_entry = argv[3 + nkeys:3 + nkeys + 1 + 2 * len(fields)]
    sorted_fields = sorted(fields, key=lambda s: s.encode())
    assert first_entry == [str(len(fields)), *[x for f in sorted_fields for x in (f, by_bytes[0] + f)]]


async def test_apply_temp_view_drops_pending_operations_first(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    await Table(db, "T").set("old", FV)
    pst = ProducerStateTable(db, "T")
    await pst.set("pending", FV)
    await pst.delete("old")
    pst.create_temp_view()
    await pst.set("old", FV)
    async with monitoring(clean_redis.port) as mon:
        await pst.apply_temp_view()
    shas = [run[0].args[1] for run in script_runs(mon.lines)]
    assert shas[0] == PST_CLEAR.sha and shas[-1] == PST_APPLY_VIEW.sha
    assert shas.count(PST_APPLY_VIEW.sha) == 1
    [apply] = script_runs(mon.lines, PST_APPLY_VIEW.sha)
    # "old" is unchanged and "pending" never reached the table: nothing to send but the PUBLISH.
    assert apply[0].args[2:] == ["3", "T_CHANNEL@0", "T_KEY_SET", "T_DEL_SET", "G", "0", "0"]
    assert await pending(db) == (set(), set(), [])
    assert await ConsumerStateTable(db, "T").pops() == []
    assert await Table(db, "T").dump() == {"old": dict(FV)}


async def test_apply_temp_view_of_an_empty_view_deletes_everything(db: DBConnector) -> None:
    await Table(db, "T").set("a", FV)
    await Table(db, "T").set("b", FV)
    pst = ProducerStateTable(db, "T")
    pst.create_temp_view()
    await pst.apply_temp_view()
    assert await popped(db) == {"a": ("DEL", {}), "b": ("DEL", {})}
    assert await Table(db, "T").dump() == {}


async def test_temp_view_delete_and_empty_set(db: DBConnector) -> None:
    """In a view, delete removes the entry and set without fields creates none (as C++)."""
    await Table(db, "T").set("a", FV)
    pst = ProducerStateTable(db, "T")
    pst.create_temp_view()
    await pst.set("a", FV)
    await pst.set("b", FV)
    await pst.delete("a")
    await pst.delete_many(["b"])
    await pst.set("c", [])
    await pst.set_many([("d", [])])
    await pst.apply_temp_view()
    assert await popped(db) == {"a": ("DEL", {})}


async def test_temp_view_set_merges_fields(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    pst.create_temp_view()
    await pst.set("a", [("f1", "x")])
    await pst.set("a", [("f2", "y")])
    await pst.set_many([("a", [("f1", "z")])])
    await pst.apply_temp_view()
    assert await popped(db) == {"a": ("SET", {"f1": "z", "f2": "y"})}


async def test_create_temp_view_twice_discards_the_first(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    pst.create_temp_view()
    await pst.set("first", FV)
    pst.create_temp_view()
    await pst.set("second", FV)
    await pst.apply_temp_view()
    assert await popped(db) == {"second": ("SET", dict(FV))}


async def test_apply_temp_view_without_a_view_raises(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    with pytest.raises(TempViewError, match="create_temp_view"):
        await pst.apply_temp_view()
    pst.create_temp_view()
    await pst.apply_temp_view()
    with pytest.raises(TempViewError, match="T"):
        await pst.apply_temp_view()


async def test_writes_after_apply_go_to_redis_again(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    pst.create_temp_view()
    await pst.apply_temp_view()
    await ConsumerStateTable(db, "T").pops()
    await pst.set("k", FV)
    assert await pending(db) == ({"k"}, set(), ["_T:k"])


async def test_apply_temp_view_on_a_pipe_separator_table(unix_db: DBConnector) -> None:
    await Table(unix_db, "T").set("a", FV)
    pst = ProducerStateTable(unix_db, "T")
    pst.create_temp_view()
    await pst.set("b", FV)
    await pst.apply_temp_view()
    assert await popped(unix_db) == {"a": ("DEL", {}), "b": ("SET", dict(FV))}
    assert await Table(unix_db, "T").dump() == {"b": dict(FV)}
