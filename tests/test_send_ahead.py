"""ProducerStateTable(send_ahead=N): a write returns once sent while up to N earlier writes wait
for their answer; the same EVALSHAs in the same order, nothing dropped unanswered."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from structlog.testing import capture_logs

from swssd import DBConnector, ProducerStateTable
from swssd.lua import PST_BATCHED_SET
from swssd.redis.embedded_redis import EmbeddedRedis

FV = [("f", "v")]


@pytest.fixture
def admin(clean_redis: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = redis.Redis(port=clean_redis.port, decode_responses=True)
    yield client
    client.execute_command("CLIENT", "UNPAUSE")
    client.close()


async def warm(pst: ProducerStateTable) -> None:
    """Answered writes of each kind: the scripts are loaded (a write with a script not loaded yet
    waits for the answers out first) and the connection open."""
    await pst.set("warm", FV)
    await pst.set_many([("warm", FV)])
    await pst.delete_many(["gone"])
    await pst.delete("gone")
    await pst.flush()


async def paused(db: DBConnector, admin: redis.Redis, send_ahead: int) -> ProducerStateTable:
    """A warmed-up producer with `send_ahead`, and Redis holding every write (EVALSHA included)
    from now on until unpaused; reads go on."""
    pst = ProducerStateTable(db, "T", send_ahead=send_ahead)
    await warm(pst)
    admin.execute_command("CLIENT", "PAUSE", "20000", "WRITE")
    return pst


async def test_a_write_returns_before_redis_ran_it_and_flush_waits_for_it(
    db: DBConnector, admin: redis.Redis
) -> None:
    pst = await paused(db, admin, 1)
    await pst.set("a", [("f", "1")])  # returns while Redis holds it
    assert admin.exists("_T:a") == 0
    flushed = asyncio.ensure_future(pst.flush())
    await asyncio.sleep(0.1)
    assert not flushed.done()  # waits for the answer
    admin.execute_command("CLIENT", "UNPAUSE")
    await flushed
    assert admin.hgetall("_T:a") == {"f": "1"}
    assert admin.sismember("T_KEY_SET", "a")


@pytest.mark.parametrize("depth", [1, 2])
async def test_past_the_window_a_write_waits_for_the_oldest(
    db: DBConnector, admin: redis.Redis, depth: int
) -> None:
    pst = await paused(db, admin, depth)
    for i in range(depth):
        await pst.set(f"k{i}", FV)
    over = asyncio.ensure_future(pst.set_many([("last", FV)]))
    await asyncio.sleep(0.1)
    assert not over.done()
    admin.execute_command("CLIENT", "UNPAUSE")
    await over
    await pst.flush()
    assert admin.scard("T_KEY_SET") == depth + 3


async def test_a_read_on_the_same_connector_right_after_a_write_sees_it(db: DBConnector) -> None:
    """The write is on the wire when set() returns: a later request on the connector comes after it."""
    pst = ProducerStateTable(db, "T", send_ahead=2)
    for i in range(20):
        await pst.set("k", [("n", str(i))])
        (fields,) = await db.execute_many([("HGETALL", "_T:k")])
        assert fields == ["n", str(i)]


async def test_the_same_end_state_as_without_for_every_write(db: DBConnector, admin: redis.Redis) -> None:
    plain = ProducerStateTable(db, "P")
    ahead = ProducerStateTable(db, "A", send_ahead=2)
    for pst in (plain, ahead):
        for i in range(300):
            await pst.set(f"k{i % 40}", [("n", str(i)), ("m", str(i % 7))])
            if i % 9 == 0:
                await pst.delete(f"k{(i * 7) % 40}")
            if i % 50 == 0:
                await pst.set_many([(f"k{j}", [("b", str(i))]) for j in range(i % 40, 40)])
                await pst.delete_many([f"k{j}" for j in range(0, 40, 11)])
        await pst.flush()

    def dump(table: str) -> dict[str, Any]:
        state = {k.split(":", 1)[1]: admin.hgetall(k) for k in admin.keys(f"_{table}:*")}
        return {
            "state": state,
            "keys": admin.smembers(f"{table}_KEY_SET"),
            "dels": admin.smembers(f"{table}_DEL_SET"),
        }

    assert dump("A") == dump("P")
    assert dump("P")["state"]["k3"]  # not vacuous


async def test_an_error_reply_is_raised_by_a_later_write_which_is_still_sent(
    db: DBConnector, admin: redis.Redis
) -> None:
    pst = ProducerStateTable(db, "T", send_ahead=1)
    admin.set("_T:bad", "not a hash")
    await pst.set("bad", FV)  # sent; its answer (WRONGTYPE from the script) is not read yet
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        await pst.set("good", [("g", "1")])
    await pst.flush()
    assert admin.hgetall("_T:good") == {"g": "1"}
    assert len(pst._ahead or ()) == 0


async def test_flush_raises_an_error_reply_once(db: DBConnector, admin: redis.Redis) -> None:
    pst = ProducerStateTable(db, "T", send_ahead=2)
    admin.set("_T:bad", "not a hash")
    await pst.set("bad", FV)
    await pst.set("after", FV)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        await pst.flush()
    await pst.flush()  # the error was the bad write's, raised once; the write after it landed
    assert admin.hgetall("_T:after") == {"f": "v"}


async def test_writes_out_when_the_connection_is_killed_are_sent_again_in_order(
    db: DBConnector, admin: redis.Redis
) -> None:
    pst = await paused(db, admin, 3)
    await pst.set("k", [("f", "1")])
    await pst.set("k", [("f", "2")])
    await pst.set_many([("k", [("f", "3")]), ("j", FV)])
    admin.execute_command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")  # Redis drops what it held
    admin.execute_command("CLIENT", "UNPAUSE")
    assert admin.exists("_T:k") == 0
    await pst.flush()
    assert admin.hgetall("_T:k") == {"f": "3"}
    assert admin.smembers("T_KEY_SET") == {"warm", "gone", "k", "j"}


async def test_writes_refused_with_noscript_after_a_script_flush_are_sent_again(
    db: DBConnector, admin: redis.Redis
) -> None:
    pst = ProducerStateTable(db, "T", send_ahead=2)
    await warm(pst)
    admin.script_flush()
    await pst.set("k", [("f", "1")])
    await pst.delete("k")
    await pst.set_many([("k", [("f", "2")])])
    await pst.flush()
    assert admin.hgetall("_T:k") == {"f": "2"}
    assert admin.smembers("T_DEL_SET") == {"gone", "k"}


async def test_a_write_refused_after_another_client_reloaded_a_later_ones_script_is_still_sent(
    db: DBConnector, admin: redis.Redis
) -> None:
    """The one case where a write sent again lands after a later one: it says so, and loses nothing."""
    pst = ProducerStateTable(db, "T", send_ahead=2)
    await warm(pst)
    admin.script_flush()
    admin.script_load(PST_BATCHED_SET.source)  # another client's load: set_many's script is back
    with capture_logs() as logs:
        await pst.set("a", FV)  # NOSCRIPT
        await pst.set_many([("b", FV)])  # runs
        await pst.flush()
    assert admin.hgetall("_T:a") == {"f": "v"} and admin.hgetall("_T:b") == {"f": "v"}
    assert [e["again"] for e in logs if "NOSCRIPT" in e["event"]] == [1]
    assert len(pst._ahead or ()) == 0


async def test_a_cancelled_write_is_still_sent(db: DBConnector, admin: redis.Redis) -> None:
    pst = await paused(db, admin, 1)
    await pst.set("a", FV)
    waiting = asyncio.ensure_future(pst.set("b", FV))  # sent, then waits for a's answer
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    admin.execute_command("CLIENT", "UNPAUSE")
    await pst.flush()
    assert admin.smembers("T_KEY_SET") == {"warm", "gone", "a", "b"}


async def test_many_coroutines_on_one_producer_land_every_write(db: DBConnector, admin: redis.Redis) -> None:
    pst = ProducerStateTable(db, "T", send_ahead=2)

    async def writer(n: int) -> None:
        for i in range(50):
            await pst.set(f"c{n}:{i}", [("n", str(i))])

    await asyncio.gather(*(writer(n) for n in range(16)))
    await pst.flush()
    assert admin.scard("T_KEY_SET") == 800
    assert admin.hgetall("_T:c15:49") == {"n": "49"}


def test_send_ahead_must_be_a_count_for_an_unbuffered_producer() -> None:
    db: Any = object()
    with pytest.raises(ValueError, match=">= 0"):
        ProducerStateTable(db, "T", send_ahead=-1)
    with pytest.raises(ValueError, match="unbuffered"):
        ProducerStateTable(db, "T", buffered=True, send_ahead=1)


# -- Redis down while writes are out ------------------------------------------------------------


@pytest.fixture
async def own_redis() -> AsyncIterator[EmbeddedRedis]:
    server = EmbeddedRedis().start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_write_while_redis_is_down_raises_and_is_sent_when_it_is_back(own_redis: EmbeddedRedis) -> None:
    db = await DBConnector.from_url(own_redis.url, db_id=0)
    try:
        pst = ProducerStateTable(db, "T", send_ahead=2)
        await warm(pst)
        assert own_redis.process is not None
        own_redis.process.terminate()
        own_redis.process.wait(10)
        with pytest.raises(RedisConnectionError):
            await pst.set("down", [("f", "1")])
        with pytest.raises(RedisConnectionError):
            await pst.flush()
        own_redis.start()  # the same port: an empty Redis, the scripts gone
        await pst.set("up", [("f", "2")])
        await pst.flush()
        admin = redis.Redis(port=own_redis.port, decode_responses=True)
        assert admin.hgetall("_T:down") == {"f": "1"}
        assert admin.hgetall("_T:up") == {"f": "2"}
        admin.close()
    finally:
        await db.close()


async def test_writes_out_when_redis_freezes_are_kept_and_sent_when_it_answers(own_redis: EmbeddedRedis) -> None:
    db = await DBConnector.from_url(own_redis.url, db_id=0, socket_timeout=0.5, socket_connect_timeout=0.5)
    assert own_redis.process is not None
    try:
        pst = ProducerStateTable(db, "T", send_ahead=2)
        await warm(pst)
        own_redis.process.send_signal(signal.SIGSTOP)
        try:
            await pst.set("a", [("f", "1")])
            await pst.set("a", [("f", "2")])
            with pytest.raises(RedisTimeoutError):  # no answer, and none to the writes sent again
                await pst.flush()
            assert len(pst._ahead or ()) == 2  # kept
        finally:
            own_redis.process.send_signal(signal.SIGCONT)
        await pst.flush()
        assert len(pst._ahead or ()) == 0
        admin = redis.Redis(port=own_redis.port, decode_responses=True)
        assert admin.hgetall("_T:a") == {"f": "2"}
        admin.close()
    finally:
        await db.close()


# -- property: the same Redis state and PUBLISHes as without send-ahead -------------------------

keys = st.sampled_from(["a", "b", "k:1", "é"])
field_values = st.lists(st.tuples(st.sampled_from(["f", "g", ""]), st.text("ab:é", max_size=2)), max_size=3)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("set"), keys, field_values),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("set_many"), st.lists(st.tuples(keys, field_values), max_size=4)),
        st.tuples(st.just("delete_many"), st.lists(keys, max_size=4)),
        st.tuples(st.just("flush")),
    ),
    max_size=40,
)


async def _write(pst: ProducerStateTable, script: list[Any]) -> None:
    for step in script:
        if step[0] == "flush":
            await pst.flush()
        else:
            await getattr(pst, step[0])(*step[1:])
    await pst.flush()


async def _state(db: DBConnector, table: str) -> dict[str, Any]:
    r = db.redis
    return {
        "state": {k: await r.hgetall(k) for k in await r.keys(f"_{table}:*")},
        "keys": await r.smembers(f"{table}_KEY_SET"),
        "dels": await r.smembers(f"{table}_DEL_SET"),
        "others": sorted(k for k in await r.keys("*") if not k.startswith("_")),
    }


async def _publishes(db: DBConnector, table: str, run: Any) -> int:
    """PUBLISHes on the table's channel while `run` writes (counted up to a marker sent after)."""
    pubsub = db.redis.pubsub()
    channel = f"{table}_CHANNEL@{db.db_id}"
    await pubsub.subscribe(channel)
    await pubsub.get_message(timeout=1)  # the subscribe confirmation
    await run
    await db.redis.publish(channel, "marker")
    count = 0
    while (msg := await pubsub.get_message(timeout=5)) is not None and msg["data"] != "marker":
        count += 1
    await pubsub.aclose()
    return count


async def _compare(url: str, script: list[Any], fast: bool) -> None:
    plain = await DBConnector.from_url(url, db_id=10)
    ahead = await DBConnector.from_url(url, db_id=11)
    try:
        for db in (plain, ahead):
            await db.redis.flushdb()
        without = ProducerStateTable(plain, "T", fast_scripts=fast)
        published_plain = await _publishes(plain, "T", _write(without, script))
        with_ahead = ProducerStateTable(ahead, "T", fast_scripts=fast, send_ahead=2)
        published_ahead = await _publishes(ahead, "T", _write(with_ahead, script))
        assert await _state(ahead, "T") == await _state(plain, "T")
        assert published_ahead == published_plain
    finally:
        await plain.close()
        await ahead.close()


@pytest.mark.parametrize("fast", [False, True], ids=["cpp_scripts", "fast_scripts"])
@settings(max_examples=60, deadline=None)
@given(script=steps)
def test_random_writes_leave_what_they_leave_without_send_ahead(
    redis_server: EmbeddedRedis, fast: bool, script: list[Any]
) -> None:
    asyncio.run(_compare(redis_server.url, script, fast))
