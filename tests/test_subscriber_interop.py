"""SubscriberStateTable against libswsscommon on one redis-server (issue 8, must-hold 1): a C++
swss::Table writer (set/hset/hdel/del) -> swssd SubscriberStateTable, and swssd writers (Table,
ConfigDBConnector) -> the C++ SubscriberStateTable. Every change delivered, in order per key, and
the consumer's fold equal to the final table.

The C++ side is tests/cpp/subscriber_driver.cpp (see tests/cpp_build.py for where the library
comes from; skipped without it).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cpp_build import build_driver
from swssd import DBConnector, KeyOpFieldsValues, Select, SubscriberStateTable, Table
from swssd.channels.configdb import ConfigDBConnector
from swssd.redis.embedded_redis import EmbeddedRedis

TABLE = "INTEROP_PORT"
WAIT = 30.0
TEXTS = ["plain", "co:lon", "pi|pe", "both:|", "Ünïcødé ✓", "中文", "sp ace", ""]

Op = list[Any]


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_driver("subscriber_driver.cpp", tmp_path_factory.mktemp("cpp"), header="subscriberstatetable.h")


@pytest.fixture
async def cfg(clean_redis: EmbeddedRedis) -> AsyncIterator[DBConnector]:
    conn = await DBConnector.from_url(f"unix://{clean_redis.unix_socket}", db_id=4, separator="|", name="CONFIG_DB")
    await conn.redis.config_set("notify-keyspace-events", "AKE")
    yield conn
    await conn.close()


@pytest.fixture
def db_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> Path:
    return clean_redis.write_database_config(tmp_path / "database_config.json")


def random_ops(seed: int, count: int, keys: int = 150) -> list[Op]:
    """Writes of every kind; each set/hset carries `seq` = its position, so order can be checked."""
    rng = random.Random(seed)
    names = [f"Ethernet{i}{rng.choice(TEXTS)}" for i in range(keys)]
    ops: list[Op] = []
    for n in range(count):
        key = rng.choice(names)
        r = rng.random()
        if r < 0.35:
            fvs = [["seq", str(n)]] + [[f"f{j}", f"{rng.choice(TEXTS)}{n}"] for j in range(rng.randint(0, 3))]
            ops.append(["set", key, fvs])
        elif r < 0.7:
            ops.append(["hset", key, "seq", str(n)])
        elif r < 0.85:
            ops.append(["hdel", key, f"f{rng.randint(0, 3)}"])
        else:
            ops.append(["del", key])
    return ops


def fold(state: dict[str, dict[str, str]], changes: list[KeyOpFieldsValues]) -> None:
    for key, op, fvs in changes:
        if op == "SET":
            state[key] = dict(fvs)
        else:
            state.pop(key, None)


def check_order(changes: list[KeyOpFieldsValues]) -> None:
    """Per key, the `seq` of delivered entries never goes back."""
    last: dict[str, int] = {}
    for key, op, fvs in changes:
        if op == "SET" and "seq" in dict(fvs):
            seq = int(dict(fvs)["seq"])
            assert seq >= last.get(key, -1), f"{key}: seq {seq} delivered after {last[key]}"
            last[key] = seq


async def final_table(db: DBConnector) -> dict[str, dict[str, str]]:
    t = Table(db, TABLE)
    return {k: dict(v) for k in await t.keys() if (v := await t.get(k))}


async def test_cpp_table_writer_to_swssd_subscriber(driver: Path, cfg: DBConnector, db_config: Path) -> None:
    ops = random_ops(1, 4000)
    sel = Select()
    sst = SubscriberStateTable(cfg, TABLE)
    await sel.add(sst)
    writer = await asyncio.create_subprocess_exec(
        str(driver), "write", str(db_config), "CONFIG_DB", TABLE,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    feed = asyncio.ensure_future(writer.communicate("".join(json.dumps(op) + "\n" for op in ops).encode()))
    got: list[KeyOpFieldsValues] = []
    while not feed.done():
        if await sel.select(timeout=0.05) is sst:
            got += await sst.pops()
    out, _ = await feed
    assert writer.returncode == 0 and out.decode().strip() == "done"
    while await sel.select(timeout=1.0) is sst:
        got += await sst.pops()
    await sel.close()
    state: dict[str, dict[str, str]] = {}
    fold(state, got)
    final = await final_table(cfg)
    assert final, "the writer left entries"
    assert state == final
    check_order(got)
    assert any(op == "DEL" for _, op, _ in got)


async def swssd_writes(cfg: DBConnector, ops: list[Op]) -> None:
    """The same kinds of writes through swssd: Table, and ConfigDBConnector for whole entries."""
    table = Table(cfg, TABLE)
    config_db = ConfigDBConnector(cfg)
    for n, op in enumerate(ops):
        kind, key = op[0], op[1]
        if kind == "set":
            if n % 2:
                await table.set(key, [tuple(fv) for fv in op[2]])
            else:
                await config_db.set_entry(TABLE, key, {f: v for f, v in op[2]})  # replaces the entry
        elif kind == "hset":
            await config_db.mod_entry(TABLE, key, {op[2]: op[3]})
        elif kind == "hdel":
            await table.hdel(key, op[2])
        elif n % 2:
            await table.delete(key)
        else:
            await config_db.set_entry(TABLE, key, None)


async def test_swssd_writers_to_cpp_subscriber(driver: Path, cfg: DBConnector, db_config: Path) -> None:
    ops = random_ops(2, 3000)
    consumer = await asyncio.create_subprocess_exec(
        str(driver), "consume", str(db_config), "CONFIG_DB", TABLE, "2000",
        stdout=asyncio.subprocess.PIPE, limit=1 << 24,
    )
    assert consumer.stdout is not None
    assert (await asyncio.wait_for(consumer.stdout.readline(), WAIT)).decode().strip() == "ready"
    await swssd_writes(cfg, ops)
    out, _ = await asyncio.wait_for(consumer.communicate(), 120)
    assert consumer.returncode == 0
    got = [
        KeyOpFieldsValues(k, op, [tuple(fv) for fv in fvs]) for k, op, fvs in map(json.loads, out.decode().splitlines())
    ]
    state: dict[str, dict[str, str]] = {}
    fold(state, got)
    final = await final_table(cfg)
    assert final
    assert state == final
    check_order(got)


async def test_list_fields_reach_cpp_and_swssd_cut_alike(driver: Path, cfg: DBConnector, db_config: Path) -> None:
    """A ConfigDBConnector list (`ports@`) arrives as `ports` on both sides, as Table::get cuts it."""
    consumer = await asyncio.create_subprocess_exec(
        str(driver), "consume", str(db_config), "CONFIG_DB", TABLE, "1000", stdout=asyncio.subprocess.PIPE,
    )
    assert consumer.stdout is not None
    assert (await asyncio.wait_for(consumer.stdout.readline(), WAIT)).decode().strip() == "ready"
    sst = SubscriberStateTable(cfg, TABLE)
    sel = Select()
    await sel.add(sst)
    await ConfigDBConnector(cfg).set_entry(
        TABLE, "PortChannel1", {"members": ["Ethernet0", "Ethernet4"], "mtu": "9100"}
    )
    out, _ = await asyncio.wait_for(consumer.communicate(), WAIT)
    cpp = [json.loads(line) for line in out.decode().splitlines()]
    ours: list[KeyOpFieldsValues] = []
    while await sel.select(timeout=0.5) is sst:
        ours += await sst.pops()
    await sel.close()
    assert len(cpp) == 1 and len(ours) == 1
    key, op, fvs = cpp[0]
    assert ours[0] == KeyOpFieldsValues(key, op, [tuple(fv) for fv in fvs])
    assert dict(ours[0].fvs) == {"members": "Ethernet0,Ethernet4", "mtu": "9100"}
