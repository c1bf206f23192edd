"""swssd's `*_fast` scripts against the C++ scripts: the same Redis state and the same PUBLISHes.

The same random sequence of producer and consumer calls runs twice on one redis-server: with the
C++ scripts on database 1 and with `fast_scripts=True` on database 2. After every sequence every
key of the two databases (type, and contents in Redis's own order) must be equal, the pops must
have returned the same entries, and as many messages must have been published on each
database's table channel.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from swssd import (
    ConsumerStateTable,
    ConsumerTable,
    DBConnector,
    KeyOpFieldsValues,
    ProducerStateTable,
    ProducerTable,
)
from swssd.fields import DEL_COMMAND
from swssd.orch.pending import PendingMap
from swssd.orch.reliable_pop import ReliablePop
from swssd.redis.embedded_redis import EmbeddedRedis

TABLE = "FAST_T"
KEYS = ["Ethernet0", "Ethernet4", "10.0.0.0/8", "a:b|c", "é", ""]
FIELDS = ["mtu", "speed", "admin_status", "alias", "f:x|y", ""]


async def redis_state(db: DBConnector) -> dict[str, Any]:
    """Every key of the database with its type and contents, as Redis orders them."""
    r = db.redis
    out: dict[str, Any] = {}
    for key in sorted(await r.keys("*")):
        kind = await r.type(key)
        if kind == "hash":
            out[key] = ("hash", await r.execute_command("HGETALL", key))
        elif kind == "set":
            out[key] = ("set", sorted(await r.smembers(key)))
        else:
            out[key] = (kind, None)
    return out


def random_ops(rng: random.Random, count: int) -> list[tuple[Any, ...]]:
    ops: list[tuple[Any, ...]] = []
    for _ in range(count):
        roll = rng.random()

        def fvs() -> list[tuple[str, str]]:
            return [(rng.choice(FIELDS), f"v{rng.randrange(1000)}:|") for _ in range(rng.randint(0, 5))]

        if roll < 0.35:
            ops.append(("set", rng.choice(KEYS), fvs()))
        elif roll < 0.5:
            ops.append(("delete", rng.choice(KEYS)))
        elif roll < 0.7:
            ops.append(("set_many", [(rng.choice(KEYS), fvs()) for _ in range(rng.randint(1, 8))]))
        elif roll < 0.74:
            ops.append(("delete_many", rng.sample(KEYS, rng.randint(1, 3))))
        elif roll < 0.78:
            ops.append(("flush",))
        else:
            ops.append(("pops",))
    ops.append(("pops",))
    return ops


async def run(ops: list[tuple[Any, ...]], producer: ProducerStateTable, consumer: ConsumerStateTable) -> list[Any]:
    """The popped batches, each sorted: a pop takes every key (the batch is larger than KEYS), but
    SPOP returns them in a random order."""
    popped: list[Any] = []
    for op, *args in ops:
        if op == "pops":
            await producer.flush()  # a buffered producer's changes reach Redis before the pop
            popped.append(sorted(await consumer.pops()))
        else:
            await getattr(producer, op)(*args)
    return popped


@pytest.mark.parametrize("buffered", [False, True], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("seed", range(40))
async def test_fast_scripts_leave_redis_as_the_cpp_scripts(
    clean_redis: EmbeddedRedis, seed: int, buffered: bool
) -> None:
    """Buffered, the fast producer's flush sends each run of single sets as one call (the sets
    script); unbuffered, every call is its own script call, as the C++ one's."""
    rng = random.Random(seed)
    ops = random_ops(rng, rng.randint(5, 60))
    cpp = await DBConnector.from_url(clean_redis.url, db_id=1, separator=":", name="APPL_DB")
    fast = await DBConnector.from_url(clean_redis.url, db_id=2, separator=":", name="APPL_DB")
    listener = aioredis.Redis.from_url(clean_redis.url, decode_responses=True)
    pubsub = listener.pubsub()
    await pubsub.subscribe(f"{TABLE}_CHANNEL@1", f"{TABLE}_CHANNEL@2")
    while await pubsub.get_message(timeout=0.05) is not None:  # the subscribe confirmations
        pass
    try:
        results = []
        for db, flag in ((cpp, False), (fast, True)):
            producer = ProducerStateTable(db, TABLE, buffered=buffered, fast_scripts=flag)
            consumer = ConsumerStateTable(db, TABLE, pop_batch_size=128, fast_scripts=flag)
            results.append(await run(ops, producer, consumer))
        assert results[0] == results[1]
        assert any(results[0]), "nothing popped: the test lost its point"
        assert await redis_state(cpp) == await redis_state(fast)
        counts = {1: 0, 2: 0}
        while (message := await pubsub.get_message(timeout=0.2)) is not None:
            if message["type"] == "message":
                counts[int(message["channel"].rsplit("@", 1)[1])] += 1
        assert counts[1] == counts[2] > 0
    finally:
        await pubsub.aclose()
        await listener.aclose()
        await cpp.close()
        await fast.close()



def without_tracked_deletes(tasks: list[KeyOpFieldsValues]) -> list[tuple[Any, ...]]:
    """A tracked pop's tasks as the C++ pop reports them: a DEL told apart before a SET of the
    same key (the old entry was deleted first) is not in the C++ reply."""
    out = []
    for i, task in enumerate(tasks):
        following = tasks[i + 1] if i + 1 < len(tasks) else None
        if task.op == DEL_COMMAND and following is not None and following.key == task.key and following.fvs:
            continue
        out.append(tuple(task))
    return sorted(out)


@pytest.mark.parametrize("seed", range(40))
async def test_daemon_state_pop_leaves_redis_as_the_cpp_script(clean_redis: EmbeddedRedis, seed: int) -> None:
    """The daemon's reliable pop (consumer_state_table_pops_reliable.lua: renames new entries into
    place, one HSET for the others, skips the empty delete set) against the C++ pop: the same
    tables and state hashes, the same entries popped, batch by batch."""
    rng = random.Random(seed)
    ops = random_ops(rng, rng.randint(5, 60))
    cpp = await DBConnector.from_url(clean_redis.url, db_id=1, separator=":", name="APPL_DB")
    daemon = await DBConnector.from_url(clean_redis.url, db_id=3, separator=":", name="APPL_DB")
    try:
        expected = await run(ops, ProducerStateTable(cpp, TABLE), ConsumerStateTable(cpp, TABLE, pop_batch_size=128))
        producer = ProducerStateTable(daemon, TABLE)
        source = ReliablePop(ConsumerStateTable(daemon, TABLE, 128, track_deletes=True), PendingMap(), instance="t")
        got: list[Any] = []
        for op, *args in ops:
            if op == "pops":
                batches = await source.pop()
                got.append(without_tracked_deletes([t for b in batches for t in b.tasks]))
            else:
                await getattr(producer, op)(*args)
        assert got == [sorted(tuple(t) for t in batch) for batch in expected]
        assert any(expected), "nothing popped: the test lost its point"
        tables = {k: v for k, v in (await redis_state(daemon)).items() if not k.startswith("_SWSSD_")}
        assert tables == await redis_state(cpp)
    finally:
        await cpp.close()
        await daemon.close()


QUEUE_OPS = ["set", "SET", "create", "remove", "DEL", "bulkset", "bulkcreate", "bulkremove", "get", "notify"]


def random_queue_ops(rng: random.Random, count: int) -> list[tuple[Any, ...]]:
    ops: list[tuple[Any, ...]] = []
    for _ in range(count):
        op = rng.choice(QUEUE_OPS)
        if op.startswith("bulk"):  # "OBJECT_TYPE:n", each field an object id, each value a=v|a=v
            key = f"SAI_OBJECT_TYPE_{rng.choice(['ROUTE', 'NEXT_HOP'])}:{rng.randrange(3)}"
            fvs = [(f"oid:{rng.randrange(4)}", "|".join(f"{rng.choice(FIELDS[:4])}=v{rng.randrange(9)}"
                                                      for _ in range(rng.randint(1, 3))))
                   for _ in range(rng.randint(1, 3))]
        else:
            key = rng.choice(KEYS)
            # a field may come twice in one entry: its last value is the one that stays
            fvs = [(rng.choice(FIELDS), f"v{rng.randrange(1000)}:|") for _ in range(rng.randint(0, 6))]
        roll = rng.random()
        if roll < 0.6:
            ops.append(("set", key, fvs, op))
        elif roll < 0.85:
            ops.append(("delete", key, op))
        else:
            ops.append(("pops",))
    ops.append(("pops",))
    return ops


@pytest.mark.parametrize("seed", range(30))
async def test_fast_queue_pops_leave_redis_as_the_cpp_script(clean_redis: EmbeddedRedis, seed: int) -> None:
    """ConsumerTable(fast_scripts=True) against the C++ consumer_table_pops.lua: the same entries
    popped and the same hashes written, for every op the C++ script knows (plain, bulk, passive)."""
    rng = random.Random(seed)
    ops = random_queue_ops(rng, rng.randint(5, 80))
    cpp = await DBConnector.from_url(clean_redis.url, db_id=1, separator=":", name="ASIC_DB")
    fast = await DBConnector.from_url(clean_redis.url, db_id=2, separator=":", name="ASIC_DB")
    try:
        results = []
        for db, flag in ((cpp, False), (fast, True)):
            producer = ProducerTable(db, TABLE)
            consumer = ConsumerTable(db, TABLE, pop_batch_size=rng.choice([1, 3, 128]), fast_scripts=flag)
            popped: list[Any] = []
            for op, *args in ops:
                if op == "pops":
                    while batch := await consumer.pops():
                        popped.append(batch)
                else:
                    await getattr(producer, op)(*args)
            results.append(popped)
            rng = random.Random(seed)  # the same batch size for the second run
            ops = random_queue_ops(rng, rng.randint(5, 80))
        assert results[0] == results[1]
        assert any(results[0]), "nothing popped: the test lost its point"
        assert await redis_state(cpp) == await redis_state(fast)
        assert any(v[0] == "hash" for v in (await redis_state(fast)).values()), "no hash written"
    finally:
        await cpp.close()
        await fast.close()


async def test_fast_queue_pops_refuse_an_unknown_op_as_the_cpp_script(clean_redis: EmbeddedRedis) -> None:
    errors = []
    for db_id, flag in ((1, False), (2, True)):
        db = await DBConnector.from_url(clean_redis.url, db_id=db_id, separator=":", name="ASIC_DB")
        try:
            await ProducerTable(db, TABLE).set("k", [("f", "v")], op="frobnicate")
            with pytest.raises(ResponseError) as caught:
                await ConsumerTable(db, TABLE, fast_scripts=flag).pops()
            errors.append(str(caught.value))
            assert await db.redis.llen(f"{TABLE}_KEY_VALUE_OP_QUEUE") == 0  # popped all the same
        finally:
            await db.close()
    assert all("unsupported operation command: frobnicate, FIXME" in e for e in errors), errors


async def test_pops_fall_back_to_hset_when_an_acl_refuses_renamenx(clean_redis: EmbeddedRedis) -> None:
    """A user whose ACL predates this change: the daemon's pop without RENAMENX, the fast pop
    without RENAMENX and SCARD (which the daemon's pop always needed). Both write the entries with
    HSET as the C++ script does, instead of failing after SPOP took the keys."""
    admin = aioredis.Redis.from_url(clean_redis.url, decode_responses=True)
    users = {"daemon-acl": ["-renamenx"], "library-acl": ["-renamenx", "-scard"]}
    for user, denied in users.items():
        await admin.execute_command("ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", *denied)
    dbs = [
        await DBConnector.from_url(clean_redis.url.replace("redis://", f"redis://{user}:pw@", 1), db_id=4,
                                   separator=":", name="APPL_DB")
        for user in users
    ]
    try:
        entries = [(f"k{i}", [("f", str(i)), ("g", "x")]) for i in range(5)]
        await ProducerStateTable(dbs[0], TABLE).set_many(entries)
        await ProducerStateTable(dbs[1], "OTHER").set_many(entries)
        source = ReliablePop(ConsumerStateTable(dbs[0], TABLE, 128, track_deletes=True), PendingMap(), instance="t")
        daemon = sorted(tuple(t) for b in await source.pop() for t in b.tasks)
        fast = sorted(tuple(t) for t in await ConsumerStateTable(dbs[1], "OTHER", 128, fast_scripts=True).pops())
        assert daemon == fast == sorted((k, "SET", fvs) for k, fvs in entries)
        state = await redis_state(dbs[0])
        for table in (TABLE, "OTHER"):
            assert {k: state.get(f"{table}:{k}") for k, _ in entries} == {k: ("hash", dict(fvs)) for k, fvs in entries}
            assert not any(key.startswith(f"_{table}:") for key in state)
        refused = {entry["object"] for entry in await admin.acl_log()}
        assert {"renamenx", "scard"} <= refused, "nothing was refused: the test lost its point"
    finally:
        for db in dbs:
            await db.close()
        for user in users:
            await admin.execute_command("ACL", "DELUSER", user)
        await admin.aclose()
