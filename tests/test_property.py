"""Property: random mixes of set/delete/set_many/delete_many/pops behave as a plain-Python model
of the C++ state-table semantics, for the C++ pops and for track_deletes=True.

The model keeps what Redis keeps (key set, del set, state hashes, the TABLE) and what a consumer
that applies every popped change to a dict ends up with. Each pops() is checked against it entry
by entry (SPOP picks keys at random, so the model checks the keys it is given, not an order).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swssd import ConsumerStateTable, DBConnector, ProducerStateTable, Table
from swssd.redis.embedded_redis import EmbeddedRedis

NAME = "PROP_TABLE"
DB_ID = 9

keys = st.sampled_from(["a", "b", "k:1", "k|1", "k 1", "é", "键 x", ":"])
fields = st.sampled_from(["f", "g", "f:1", "f|g", " ", "é", ""])
values = st.text(alphabet="ab:| é值\"\n", max_size=3)
field_values = st.lists(st.tuples(fields, values), max_size=3)  # may repeat a field, or be empty

ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), keys, field_values),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("set_many"), st.lists(st.tuples(keys, field_values), max_size=4)),
        st.tuples(st.just("delete_many"), st.lists(keys, max_size=4)),
        st.tuples(st.just("pops"), st.integers(1, 5)),
    ),
    max_size=30,
)


@dataclass
class Model:
    """The C++ semantics, producer and consumer side."""

    track_deletes: bool
    key_set: set[str] = field(default_factory=set)
    del_set: set[str] = field(default_factory=set)
    state: dict[str, dict[str, str]] = field(default_factory=dict)  # `_TABLE:key` hashes
    table: dict[str, dict[str, str]] = field(default_factory=dict)  # `TABLE:key` hashes
    consumed: dict[str, dict[str, str]] = field(default_factory=dict)  # a consumer's dict of changes

    def set(self, key: str, fvs: list[tuple[str, str]]) -> None:
        self.key_set.add(key)
        if fvs:  # no fields: only the key set changes (then the pop reports DEL, as in C++)
            self.state.setdefault(key, {}).update(fvs)

    def delete(self, key: str) -> None:
        self.key_set.add(key)
        self.del_set.add(key)
        self.state.pop(key, None)

    def pop(self, key: str) -> list[tuple[str, dict[str, str]]]:
        """Pop one key: what Redis does to the TABLE, and the changes the consumer receives."""
        self.key_set.remove(key)
        deleted = key in self.del_set
        self.del_set.discard(key)
        if deleted:
            self.table.pop(key, None)
        fvs = self.state.pop(key, {})
        if fvs:
            self.table.setdefault(key, {}).update(fvs)
        if self.track_deletes and deleted and fvs:
            return [("DEL", {}), ("SET", fvs)]
        return [("SET" if fvs else "DEL", fvs)]

    def apply(self, key: str, op: str, fvs: dict[str, str]) -> None:
        if op == "SET":
            self.consumed.setdefault(key, {}).update(fvs)
        else:
            self.consumed.pop(key, None)


async def pops_checked(cst: ConsumerStateTable, model: Model, batch: int) -> None:
    """One pops() of `batch` keys, entry by entry against the model."""
    cst.pop_batch_size = batch
    pending = len(model.key_set)
    got = await cst.pops()
    grouped: dict[str, list[tuple[str, dict[str, str]]]] = {}
    order: list[str] = []
    for key, op, fvs in got:
        as_dict = dict(fvs)
        assert len(as_dict) == len(fvs), f"a field twice in {key}: {fvs}"
        if key not in grouped:
            order.append(key)
        elif grouped[key][-1][0] != "DEL" or op != "SET" or key != order[-1]:
            raise AssertionError(f"{key} popped twice in one batch: {got}")
        grouped.setdefault(key, []).append((op, as_dict))
    assert len(order) == min(batch, pending), f"popped {len(order)} of {pending} pending with batch {batch}"
    for key in order:
        assert key in model.key_set, f"popped {key!r}, which nothing changed"
        assert grouped[key] == model.pop(key), f"{key!r}"
        for op, fvs in grouped[key]:
            model.apply(key, op, fvs)


async def run_example(url: str, steps: list[Any], track_deletes: bool) -> None:
    db = await DBConnector.from_url(url, db_id=DB_ID, separator=":")
    try:
        await db.redis.flushdb()
        pst = ProducerStateTable(db, NAME)
        cst = ConsumerStateTable(db, NAME, track_deletes=track_deletes)
        model = Model(track_deletes)
        for step in steps:
            kind = step[0]
            if kind == "set":
                await pst.set(step[1], step[2])
                model.set(step[1], step[2])
            elif kind == "delete":
                await pst.delete(step[1])
                model.delete(step[1])
            elif kind == "set_many":
                await pst.set_many(step[1])
                for key, fvs in step[1]:
                    model.set(key, fvs)
            elif kind == "delete_many":
                await pst.delete_many(step[1])
                for key in step[1]:
                    model.delete(key)
            else:
                await pops_checked(cst, model, step[1])
            assert await pst.count() == len(model.key_set)

        while model.key_set:  # the final full drain
            await pops_checked(cst, model, 128)
        assert await cst.pops() == []

        assert await Table(db, NAME).dump() == model.table
        assert await db.redis.keys(f"_{NAME}:*") == []
        assert await db.redis.scard(f"{NAME}_DEL_SET") == 0
        if track_deletes and not any(_empty_set(s) for s in steps):
            # Every change reported exactly: the consumer's dict is the table itself.
            assert model.consumed == model.table
    finally:
        await db.close()


def _empty_set(step: Any) -> bool:
    """A set without fields: the pop says DEL while the TABLE keeps the entry (C++ semantics)."""
    if step[0] == "set":
        return not step[2]
    return step[0] == "set_many" and any(not fvs for _, fvs in step[1])


@pytest.mark.parametrize("track_deletes", [False, True], ids=["cpp_pops", "track_deletes"])
@settings(max_examples=100, deadline=None)
@given(steps=ops)
def test_random_operations_match_the_model(
    redis_server: EmbeddedRedis, track_deletes: bool, steps: list[Any]
) -> None:
    asyncio.run(run_example(redis_server.url, steps, track_deletes))


def test_model_knows_delete_then_set_between_pops() -> None:
    """The case the two pops scripts differ on, spelled out (and a check that the model is not vacuous)."""
    for track, expected in ((False, [("SET", {"g": "2"})]), (True, [("DEL", {}), ("SET", {"g": "2"})])):
        m = Model(track)
        m.set("k", [("f", "1")])
        assert m.pop("k") == [("SET", {"f": "1"})]
        m.delete("k")
        m.set("k", [("g", "2")])
        assert m.pop("k") == expected
        assert m.table == {"k": {"g": "2"}}
