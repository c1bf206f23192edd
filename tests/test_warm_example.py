"""The warm-restart example plugin (swssd/orch/examples/warm_routes.py) in two daemon runs: programmed
routes are kept across a warm start, a route deleted while the daemon was down is removed at
reconcile, and its timer publishes the count."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from swssd import DBConnector, ProducerStateTable, Table
from swssd.orch.config_file import config_from_dict
from swssd.orch.daemon import Daemon
from swssd.redis.embedded_redis import EmbeddedRedis


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 15.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if await check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not reached")


async def test_routes_survive_a_warm_restart(clean_redis: EmbeddedRedis, db: DBConnector, tmp_path: Path) -> None:
    config = config_from_dict({
        "redis": {"database_config": str(clean_redis.write_database_config(tmp_path / "db.json"))},
        "warm_restart": {"app": "warmroutes"},
        "orchs": [{"plugin": "swssd.orch.examples.warm_routes:WarmRouteOrch", "name": "routes",
                   "tables": [{"db": "APPL_DB", "table": "EXAMPLE_ROUTE_TABLE"}],
                   "timers": {"publish": {"interval": 0.2, "jitter": 0.05}}}],
    })
    state = await DBConnector.from_url(clean_redis.url, db_id=6, separator="|", name="STATE_DB")
    cfg = await DBConnector.from_url(clean_redis.url, db_id=4, separator="|", name="CONFIG_DB")
    programmed, record = Table(state, "EXAMPLE_ROUTE_PROGRAMMED"), Table(state, "WARM_RESTART_TABLE")
    routes = ProducerStateTable(db, "EXAMPLE_ROUTE_TABLE")
    try:
        daemon = Daemon(config, handle_signals=False)
        run = asyncio.ensure_future(daemon.run())
        await asyncio.wait_for(daemon.ready.wait(), 20)
        for i in range(3):
            await routes.set(f"10.{i}.0.0/16", {"nexthop": f"10.0.0.{i}"})

        async def all_programmed() -> bool:
            return len(await programmed.keys()) == 3

        async def published() -> bool:
            return await Table(state, "EXAMPLE_ROUTE_STATS").hget("summary", "routes") == "3"

        await until(all_programmed)
        await until(published)
        daemon.stop()
        assert await asyncio.wait_for(run, 30) == 0
        assert await record.hget("warmroutes", "restore_count") == "0"

        await Table(state, "WARM_RESTART_ENABLE_TABLE").set("swss", {"enable": "true"})
        await Table(cfg, "WARM_RESTART").set("swss", {"warmroutes_timer": "1"})
        await routes.delete("10.1.0.0/16")  # while down: programmed still, stale at reconcile
        daemon = Daemon(config, handle_signals=False)
        run = asyncio.ensure_future(daemon.run())
        await asyncio.wait_for(daemon.ready.wait(), 20)

        async def restored() -> bool:
            return await record.hget("warmroutes", "state") == "restored"

        await until(restored)
        assert len(await programmed.keys()) == 3  # the data plane is left alone until reconcile

        async def reconciled() -> bool:
            return await record.hget("warmroutes", "state") == "reconciled"

        await until(reconciled)
        assert sorted(await programmed.keys()) == ["10.0.0.0/16", "10.2.0.0/16"]
        assert await record.hget("warmroutes", "restore_count") == "1"
        daemon.stop()
        assert await asyncio.wait_for(run, 30) == 0
    finally:
        await state.close()
        await cfg.close()
