"""DBConnector: by name from database_config.json (TCP and unix socket), by URL, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swssd import (
    DBConnector,
    InvalidSeparatorError,
    ProducerStateTable,
    RedisUnreachableError,
    SonicDBConfig,
    Table,
    UnknownDatabaseError,
)
from swssd.redis.dbconfig import ENV_VAR
from swssd.redis.embedded_redis import EmbeddedRedis, free_port


def tcp_only_config(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "tcp_database_config.json"
    path.write_text(json.dumps({
        "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": port}},
        "DATABASES": {
            "APPL_DB": {"id": 0, "separator": ":", "instance": "redis"},
            "STATE_DB": {"id": 6, "separator": "|", "instance": "redis"},
        },
        "VERSION": "1.0",
    }))
    return path


# -- connect by name -------------------------------------------------------------------------


async def test_connect_by_name_over_unix_socket(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    path = clean_redis.write_database_config(tmp_path / "database_config.json")
    async with await DBConnector.connect("STATE_DB", config=path) as db:
        assert (db.name, db.db_id, db.separator) == ("STATE_DB", 6, "|")
        assert db.address == f"unix:{clean_redis.unix_socket}"
        await Table(db, "PORT_TABLE").set("Ethernet0", [("f", "v")])
        assert await db.redis.keys("*") == ["PORT_TABLE|Ethernet0"]
    # It really is db 6 of the test server.
    async with await DBConnector.from_url(clean_redis.url, db_id=6, separator="|") as check:
        assert await check.redis.hgetall("PORT_TABLE|Ethernet0") == {"f": "v"}


async def test_connect_by_name_over_tcp(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    path = tcp_only_config(tmp_path, clean_redis.port)
    async with await DBConnector.connect("APPL_DB", config=path) as db:
        assert (db.name, db.db_id, db.separator) == ("APPL_DB", 0, ":")
        assert db.address == f"127.0.0.1:{clean_redis.port}"
        await ProducerStateTable(db, "T").set("k", [("f", "v")])
        assert await db.redis.smembers("T_KEY_SET") == {"k"}


async def test_connect_accepts_a_loaded_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    cfg = SonicDBConfig.load(clean_redis.write_database_config(tmp_path / "c.json"))
    async with await DBConnector.connect("CONFIG_DB", config=cfg) as db:
        assert (db.db_id, db.separator) == (4, "|")
        assert await db.redis.ping()


async def test_connect_uses_env_config(
    clean_redis: EmbeddedRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(clean_redis.write_database_config(tmp_path / "env.json")))
    async with await DBConnector.connect("APPL_DB") as db:
        assert (db.db_id, db.separator) == (0, ":")


async def test_connect_unknown_database(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    path = clean_redis.write_database_config(tmp_path / "c.json")
    with pytest.raises(UnknownDatabaseError) as err:
        await DBConnector.connect("APP_DB", config=path)
    message = str(err.value)
    assert "APP_DB" in message and "APPL_DB" in message and "STATE_DB" in message


# -- from_url ----------------------------------------------------------------------------------


async def test_from_url_db_id_from_url_or_argument(clean_redis: EmbeddedRedis) -> None:
    async with await DBConnector.from_url(f"{clean_redis.url}/3") as db:
        assert db.db_id == 3
        await db.redis.set("where", "3")
    async with await DBConnector.from_url(f"{clean_redis.url}/3", db_id=5) as db:
        assert db.db_id == 5
        assert await db.redis.get("where") is None
    async with await DBConnector.from_url(clean_redis.url) as db:
        assert (db.db_id, db.separator, db.name) == (0, ":", None)


async def test_from_unix_url(clean_redis: EmbeddedRedis) -> None:
    async with await DBConnector.from_url(f"unix://{clean_redis.unix_socket}", db_id=2, name="COUNTERS_DB") as db:
        assert db.address == f"unix:{clean_redis.unix_socket}"
        assert (db.db_id, db.name) == (2, "COUNTERS_DB")
        assert await db.redis.ping()


async def test_new_client_reaches_the_same_database(clean_redis: EmbeddedRedis) -> None:
    async with await DBConnector.from_url(clean_redis.url, db_id=7) as db:
        other = db.new_client()
        try:
            await other.set("x", "1")
            assert await db.redis.get("x") == "1"
        finally:
            await other.aclose()


@pytest.mark.parametrize("separator", ["/", "", "::", ".", "-"])
async def test_from_url_rejects_other_separators(clean_redis: EmbeddedRedis, separator: str) -> None:
    with pytest.raises(InvalidSeparatorError) as err:
        await DBConnector.from_url(clean_redis.url, separator=separator)
    message = str(err.value)
    assert repr(separator) in message
    assert "':'" in message and "'|'" in message


async def test_pipe_separator_accepted(clean_redis: EmbeddedRedis) -> None:
    async with await DBConnector.from_url(clean_redis.url, separator="|") as db:
        assert db.separator == "|"


# -- unreachable Redis -------------------------------------------------------------------------


async def test_unreachable_tcp_names_the_address() -> None:
    port = free_port()  # bound then released: nothing listens there
    with pytest.raises(RedisUnreachableError) as err:
        await DBConnector.from_url(f"redis://127.0.0.1:{port}")
    assert f"127.0.0.1:{port}" in str(err.value)
    assert err.value.address == f"127.0.0.1:{port}"


async def test_unreachable_unix_socket_names_the_path(tmp_path: Path) -> None:
    sock = tmp_path / "no-redis.sock"
    with pytest.raises(RedisUnreachableError) as err:
        await DBConnector.from_url(f"unix://{sock}")
    assert str(sock) in str(err.value)


async def test_unreachable_by_name_names_the_address(tmp_path: Path) -> None:
    port = free_port()
    path = tcp_only_config(tmp_path, port)
    with pytest.raises(RedisUnreachableError) as err:
        await DBConnector.connect("APPL_DB", config=path)
    assert f"127.0.0.1:{port}" in str(err.value)


async def test_unreachable_is_a_connection_error() -> None:
    with pytest.raises(ConnectionError):
        await DBConnector.from_url(f"redis://127.0.0.1:{free_port()}")
