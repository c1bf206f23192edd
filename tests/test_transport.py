"""swssd.redis.transport.RedisConnection against a real redis-server: requests in flight answered in
order, error replies as redis-py's exceptions, the read time-out, a lost connection, pub/sub
pushes, the handshake (password, database, client name), bytes that are not UTF-8."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis
from redis.exceptions import AuthenticationError, NoPermissionError, NoScriptError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from swssd.redis.embedded_redis import EmbeddedRedis, free_port
from swssd.redis.transport import ConnectionSpec, RedisConnection, reply_error


def tcp(server: EmbeddedRedis, **changes: Any) -> ConnectionSpec:
    return ConnectionSpec(host="127.0.0.1", port=server.port, encoding_errors="surrogateescape").replace(**changes)


@pytest.fixture
async def conn(clean_redis: EmbeddedRedis) -> AsyncIterator[RedisConnection]:
    c = await RedisConnection.open(tcp(clean_redis, read_timeout=10.0))
    yield c
    c.close()


async def test_requests_in_flight_get_their_own_replies_in_order(conn: RedisConnection) -> None:
    async def one(i: int) -> list[Any]:
        return await conn.request([("SET", f"t:{i}", str(i)), ("GET", f"t:{i}"), ("INCR", "t:count")])

    results = await asyncio.gather(*(one(i) for i in range(200)))
    assert [r[:2] for r in results] == [["OK", str(i)] for i in range(200)]
    # INCR's replies show the order Redis ran the requests in: the order they were made
    assert [r[2] for r in results] == list(range(1, 201))
    assert conn.writes < 50  # requests made while others were out went out together


async def test_error_replies_are_redis_py_exceptions_in_the_list(conn: RedisConnection) -> None:
    await conn.request([("SET", "t:str", "x")])
    replies = await conn.request([("HGET", "t:str", "f"), ("EVALSHA", "0" * 40, 0), ("PING",)])
    assert isinstance(replies[0], ResponseError) and str(replies[0]).startswith("WRONGTYPE")
    assert isinstance(replies[1], NoScriptError)
    assert replies[2] == "PONG"
    assert type(reply_error("ERR unknown command 'X'")) is ResponseError
    assert str(reply_error("ERR unknown command 'X'")) == "unknown command 'X'"  # as redis-py words it
    assert isinstance(reply_error("WRONGPASS invalid username-password pair"), AuthenticationError)


async def test_values_that_are_not_utf8_survive_as_surrogate_escapes(conn: RedisConnection) -> None:
    raw = b"\xff\xfe:|\x00\xc3\xa9"
    value = raw.decode("utf-8", "surrogateescape")
    assert await conn.request([("SET", "t:raw", value), ("GET", "t:raw"), ("STRLEN", "t:raw")]) == ["OK", value, 7]


async def test_a_silent_redis_times_out_the_requests_out_and_closes(clean_redis: EmbeddedRedis) -> None:
    c = await RedisConnection.open(tcp(clean_redis, read_timeout=0.3))
    try:
        with pytest.raises(RedisTimeoutError):
            await c.request([("BLPOP", "t:none", "1")])  # no reply for 1 s
        assert c.is_closed
        with pytest.raises(RedisTimeoutError):  # closed: it stays closed, with the error it ended with
            await c.request([("PING",)])
    finally:
        c.close()


async def test_replies_that_keep_coming_are_not_a_time_out(clean_redis: EmbeddedRedis) -> None:
    c = await RedisConnection.open(tcp(clean_redis, read_timeout=0.5))
    try:
        for _ in range(4):  # 1.2 s of requests, none silent for 0.5 s
            assert await c.request([("BLPOP", "t:none", "0.3")]) == [None]
        assert not c.is_closed
    finally:
        c.close()


async def test_a_killed_connection_fails_every_request_out(
    conn: RedisConnection, clean_redis: EmbeddedRedis
) -> None:
    await conn.request([("CLIENT", "SETNAME", "victim")])
    out = [asyncio.ensure_future(conn.request([("BLPOP", "t:none", "2")])) for _ in range(3)]
    await asyncio.sleep(0.1)
    admin = redis.Redis(port=clean_redis.port)
    admin.execute_command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
    admin.close()
    for request in out:
        with pytest.raises(RedisConnectionError):
            await request
    assert conn.is_closed


async def test_a_connection_closed_while_the_loop_did_not_run_is_stale(conn: RedisConnection) -> None:
    """Before the event loop reads the EOF, only the socket knows: stale() asks it."""
    await conn.request([("CLIENT", "SETNAME", "t-stale")])
    assert not conn.stale()
    admin = redis.Redis(port=conn.spec.port)
    admin.execute_command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
    admin.close()
    assert not conn.is_closed  # the loop has not run since
    assert conn.stale()


async def test_an_idle_connection_closed_by_the_server_is_closed(conn: RedisConnection) -> None:
    await conn.request([("CONFIG", "SET", "timeout", "1")])
    try:
        assert not conn.is_closed
        await asyncio.sleep(2.5)  # Redis closes idle clients after 1 s (checked about every second)
        assert conn.is_closed
        with pytest.raises(RedisConnectionError):
            await conn.request([("PING",)])
    finally:
        other = await RedisConnection.open(conn.spec)
        await other.request([("CONFIG", "SET", "timeout", "0")])
        other.close()


async def test_pushes_reach_the_callback_a_burst_at_a_time(clean_redis: EmbeddedRedis) -> None:
    bursts: list[list[Any]] = []
    sub = await RedisConnection.open(tcp(clean_redis), on_push=bursts.append)
    pub = await RedisConnection.open(tcp(clean_redis))
    try:
        sub.send(("SUBSCRIBE", "t-chan"))
        while not bursts:
            await asyncio.sleep(0.01)
        assert bursts[0][0] == ["subscribe", "t-chan", 1]
        await pub.request([("PUBLISH", "t-chan", str(i)) for i in range(100)])
        while sum(len(b) for b in bursts) < 101:
            await asyncio.sleep(0.01)
        messages = [m for b in bursts for m in b][1:]
        assert messages == [["message", "t-chan", str(i)] for i in range(100)]
        assert len(bursts) < 101  # handed over per socket read, not per message
    finally:
        sub.close()
        pub.close()


async def test_an_error_nobody_asked_for_ends_a_push_connection_with_it(clean_redis: EmbeddedRedis) -> None:
    admin = redis.Redis(port=clean_redis.port)
    admin.execute_command("ACL", "SETUSER", "t-nosub", "on", ">pw", "~*", "&none", "+@all", "-subscribe")
    try:
        sub = await RedisConnection.open(tcp(clean_redis, username="t-nosub", password="pw"), on_push=lambda b: None)
        sub.send(("SUBSCRIBE", "t-chan"))
        with pytest.raises(NoPermissionError):
            await asyncio.wait_for(sub.wait_closed(), 5)
    finally:
        admin.execute_command("ACL", "DELUSER", "t-nosub")
        admin.close()


async def test_an_exception_in_the_callback_ends_the_connection_with_it(clean_redis: EmbeddedRedis) -> None:
    def broken(burst: list[Any]) -> None:
        raise ValueError("handler bug")

    sub = await RedisConnection.open(tcp(clean_redis), on_push=broken)
    sub.send(("SUBSCRIBE", "t-chan"))
    with pytest.raises(ValueError, match="handler bug"):
        await asyncio.wait_for(sub.wait_closed(), 5)


async def test_handshake_selects_the_database_and_names_the_client(clean_redis: EmbeddedRedis) -> None:
    c = await RedisConnection.open(tcp(clean_redis, db=5, client_name="swssd-t"))
    try:
        assert await c.request([("SET", "t:db5", "x"), ("CLIENT", "GETNAME")]) == ["OK", "swssd-t"]
    finally:
        c.close()
    assert redis.Redis(port=clean_redis.port, db=5).get("t:db5") == b"x"
    assert redis.Redis(port=clean_redis.port, db=0).get("t:db5") is None


async def test_a_wrong_password_is_an_authentication_error(clean_redis: EmbeddedRedis) -> None:
    admin = redis.Redis(port=clean_redis.port)
    admin.execute_command("ACL", "SETUSER", "t-user", "on", ">right", "~*", "+@all")
    try:
        with pytest.raises(AuthenticationError):
            await RedisConnection.open(tcp(clean_redis, username="t-user", password="wrong"))
        c = await RedisConnection.open(tcp(clean_redis, username="t-user", password="right"))
        assert await c.request([("ACL", "WHOAMI")]) == ["t-user"]
        c.close()
    finally:
        admin.execute_command("ACL", "DELUSER", "t-user")
        admin.close()


async def test_nothing_listening_is_a_connection_error_naming_the_address() -> None:
    port = free_port()
    with pytest.raises(RedisConnectionError, match=f"127.0.0.1:{port}"):
        await RedisConnection.open(ConnectionSpec(host="127.0.0.1", port=port, connect_timeout=2))


async def test_unix_socket_and_bytes_replies(clean_redis: EmbeddedRedis) -> None:
    c = await RedisConnection.open(ConnectionSpec(path=str(clean_redis.unix_socket), encoding=None))
    try:
        assert await c.request([("SET", "t:b", "v"), ("GET", "t:b")]) == [b"OK", b"v"]
    finally:
        c.close()


async def test_a_frozen_server_is_noticed_by_the_read_time_out() -> None:
    with EmbeddedRedis() as server:
        assert server.process is not None
        c = await RedisConnection.open(tcp(server, read_timeout=0.5))
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            with pytest.raises(RedisTimeoutError):
                await c.request([("PING",)])
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
            c.close()
