"""Must-hold 1: byte-identical Lua (the SHA1s a C++ peer's EVALSHA names) and NOSCRIPT recovery."""

from __future__ import annotations

import hashlib
import json
from importlib.resources import files
from pathlib import Path

import pytest

from swssd import ConsumerStateTable, ConsumerTable, DBConnector, ProducerStateTable, ProducerTable, Table, lua
from swssd.redis.embedded_redis import EmbeddedRedis

# The SHA1s of issue 2 / the seed traces.
SEED_SHAS = {
    "producer_state_table_set": "6875900592cdd1621c6191fe038ec3b29775aa13",
    "producer_state_table_del": "88ba6312b8de850b3506966425174d8899aadd93",
    "producer_state_table_batched_set": "bc885d7acbeaba07a97ca9fa2cae169a5d63270a",
    "producer_state_table_batched_del": "c6025eb92295c3a694dcac788ed80401da2cee95",
    "producer_state_table_clear": "a7a229c9946f655aebc07e29d5e4d8ff5055ded8",
    "producer_state_table_apply_view": "d2494885834676988130076bc645ab8fdee3a1ec",
    "consumer_state_table_pops": "88270a7c5c90583e56425aca8af8a4b8c39fe757",
    "producer_table_enqueue": "d171e04fd79e95ca2287f3b067c46ae76a82208b",
    "consumer_table_pops": "2b7119a064d45b01147d729175415e203d76d6ba",
}
FV = [("f1", "v1"), ("f2", "v2")]


@pytest.mark.parametrize("name", sorted(SEED_SHAS))
def test_lua_file_sha1_is_the_seed_sha(name: str) -> None:
    source = files("swssd.lua").joinpath(f"{name}.lua").read_bytes()
    assert hashlib.sha1(source).hexdigest() == SEED_SHAS[name]


@pytest.mark.parametrize("script", lua.ALL_SCRIPTS, ids=lambda s: s.name)
def test_script_sha_is_sha1_of_file_bytes(script: lua.Script) -> None:
    source = files("swssd.lua").joinpath(f"{script.name}.lua").read_bytes()
    assert script.source == source
    assert script.sha == hashlib.sha1(source).hexdigest()


def test_module_scripts_carry_the_seed_shas() -> None:
    by_name = {s.name: s.sha for s in lua.ALL_SCRIPTS}
    for name, sha in SEED_SHAS.items():
        assert by_name[name] == sha


def test_enqueue_script_is_one_semicolon_joined_line() -> None:
    """As the C++ ProducerTable sends it (seed 002 abbreviates it)."""
    assert lua.PT_ENQUEUE.source == (
        b"redis.call('LPUSH', KEYS[1], ARGV[1], ARGV[2], ARGV[3]);"
        b"redis.call('PUBLISH', KEYS[2], ARGV[4]);"
    )


async def test_redis_script_load_returns_the_same_sha(db: DBConnector) -> None:
    for script in lua.ALL_SCRIPTS:
        assert await db.redis.execute_command("SCRIPT", "LOAD", script.source) == script.sha


async def test_scripts_are_loaded_then_called_by_sha(db: DBConnector) -> None:
    assert await db.redis.execute_command("SCRIPT", "EXISTS", lua.PST_SET.sha) == [0]
    await ProducerStateTable(db, "T").set("k", FV)
    assert await db.redis.execute_command("SCRIPT", "EXISTS", lua.PST_SET.sha) == [1]


async def _script_flush(db: DBConnector) -> None:
    await db.redis.execute_command("SCRIPT", "FLUSH")
    assert await db.redis.execute_command("SCRIPT", "EXISTS", lua.PST_SET.sha, lua.CST_POPS.sha) == [0, 0]


async def test_noscript_after_flush_producer_and_consumer_state_table(db: DBConnector) -> None:
    pst = ProducerStateTable(db, "T")
    cst = ConsumerStateTable(db, "T")
    await pst.set("k", FV)
    assert await cst.pops() == [("k", "SET", FV)]

    await _script_flush(db)
    await pst.set("k", [("f1", "x")])
    await _script_flush(db)
    await pst.set_many([("k2", FV)])
    await _script_flush(db)
    assert sorted(await cst.pops()) == [("k", "SET", [("f1", "x")]), ("k2", "SET", FV)]

    await _script_flush(db)
    await pst.delete("k")
    await _script_flush(db)
    await pst.delete_many(["k2"])
    await _script_flush(db)
    assert sorted(await cst.pops()) == [("k", "DEL", []), ("k2", "DEL", [])]
    await _script_flush(db)
    await pst.clear()
    assert await pst.count() == 0


async def test_noscript_after_flush_buffered_flush(db: DBConnector) -> None:
    """Every queued call hits NOSCRIPT: all are reloaded and resent, in order."""
    pst = ProducerStateTable(db, "T", buffered=True)
    await pst.set("w1", FV)
    await pst.set_many([("w2", FV)])
    await pst.delete("w3")
    await pst.flush()  # all three scripts now loaded and remembered by the connector
    await ConsumerStateTable(db, "T").pops()

    await pst.set("a", FV)
    await pst.set_many([("b", FV), ("c", FV)])
    await pst.delete("a")
    await _script_flush(db)
    await pst.flush()
    popped = sorted(await ConsumerStateTable(db, "T").pops())
    assert popped == [("a", "DEL", []), ("b", "SET", FV), ("c", "SET", FV)]


async def test_noscript_in_part_of_a_buffered_flush_keeps_order(db: DBConnector) -> None:
    """Only the first queued script is stale: resending just the failed call must not reorder.

    Here the connector believes the set script is loaded (it was, before SCRIPT FLUSH) but has
    never loaded the del script. flush() loads del, pipelines [set a, del a]: set a fails with
    NOSCRIPT, del a succeeds, and a retry of set a alone would run it after del a -- the entry
    would survive a delete the producer issued last.
    """
    pst = ProducerStateTable(db, "T", buffered=True)
    await pst.set("warm", FV)
    await pst.flush()
    await ConsumerStateTable(db, "T").pops()

    await pst.set("a", FV)
    await pst.delete("a")
    await _script_flush(db)
    await pst.flush()
    assert await ConsumerStateTable(db, "T").pops() == [("a", "DEL", [])]
    assert await Table(db, "T").get("a") is None


async def test_noscript_after_flush_producer_consumer_table(db: DBConnector) -> None:
    pt = ProducerTable(db, "Q")
    ct = ConsumerTable(db, "Q")
    await pt.set("k", FV)
    assert await ct.pops() == [("k", "SET", FV)]
    await _script_flush(db)
    await pt.set("k2", FV)
    await _script_flush(db)
    assert await ct.pops() == [("k2", "SET", FV)]

    bpt = ProducerTable(db, "Q", buffered=True)
    await bpt.set("k3", FV)
    await bpt.delete("k3")
    await _script_flush(db)
    await bpt.flush()
    assert await ct.pops() == [("k3", "SET", FV), ("k3", "DEL", [])]


async def test_noscript_after_flush_apply_temp_view_and_dump(db: DBConnector) -> None:
    await Table(db, "T").set("old", FV)
    pst = ProducerStateTable(db, "T")
    await pst.set("pending", FV)  # loads set + later the clear script on this connector
    await _script_flush(db)
    pst.create_temp_view()
    await pst.set("new", FV)
    await pst.apply_temp_view()
    assert sorted(await ConsumerStateTable(db, "T").pops()) == [("new", "SET", FV), ("old", "DEL", [])]
    await _script_flush(db)
    assert await Table(db, "T").dump() == {"new": dict(FV)}


def _tcp_config(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "database_config.json"
    path.write_text(json.dumps({
        "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": port}},
        "DATABASES": {"APPL_DB": {"id": 0, "separator": ":", "instance": "redis"}},
        "VERSION": "1.0",
    }))
    return path


@pytest.mark.parametrize("how", ["connect", "from_url"])
async def test_noscript_after_redis_restart(how: str, tmp_path: Path) -> None:
    """A restarted redis-server on the same port has no scripts: the next calls reload them.

    Runs for both ways of building a connector: a restart must look the same to either.
    """
    first = EmbeddedRedis().start()
    port = first.port
    servers = [first]
    if how == "connect":
        db = await DBConnector.connect("APPL_DB", config=_tcp_config(tmp_path, port))
    else:
        db = await DBConnector.from_url(first.url, db_id=0)
    try:
        pst = ProducerStateTable(db, "T")
        bpst = ProducerStateTable(db, "T", buffered=True)
        cst = ConsumerStateTable(db, "T")
        ct = ConsumerTable(db, "Q")
        await pst.set("k", FV)
        await bpst.set("b", FV)
        await bpst.flush()
        await ProducerTable(db, "Q").set("q", FV)
        assert sorted(await cst.pops()) == [("b", "SET", FV), ("k", "SET", FV)]

        servers[-1].stop()
        servers.append(EmbeddedRedis(port=port).start())
        await pst.set("k2", FV)
        assert await cst.pops() == [("k2", "SET", FV)]

        await bpst.set("b2", FV)
        servers[-1].stop()
        servers.append(EmbeddedRedis(port=port).start())
        await bpst.flush()
        assert await cst.pops() == [("b2", "SET", FV)]

        servers[-1].stop()
        servers.append(EmbeddedRedis(port=port).start())
        await ProducerTable(db, "Q").set("q2", FV)
        assert await ct.pops() == [("q2", "SET", FV)]
    finally:
        await db.close()
        for server in servers:
            server.stop()
