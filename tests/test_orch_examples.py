"""The two example plugins in a daemon: ports mirrored into STATE_DB, routes waiting for their ports."""

from __future__ import annotations

import asyncio
from pathlib import Path

from swssd import DBConnector, ProducerStateTable, Table
from swssd.orch.daemon import Daemon
from swssd.orch.examples.demo import example_config
from swssd.redis.embedded_redis import EmbeddedRedis


async def test_routes_wait_for_their_ports(clean_redis: EmbeddedRedis, db: DBConnector, tmp_path: Path) -> None:
    daemon = Daemon(example_config(clean_redis.write_database_config(tmp_path / "db.json"), 0.1), handle_signals=False)
    run = asyncio.ensure_future(daemon.run())
    state = await DBConnector.from_url(clean_redis.url, db_id=6, separator="|", name="STATE_DB")
    ports, routes = Table(state, "PORT_TABLE"), Table(state, "ROUTE_TABLE")

    async def until(check, timeout: float = 10.0) -> None:
        for _ in range(int(timeout / 0.02)):
            if await check():
                return
            await asyncio.sleep(0.02)
        raise AssertionError("not reached")

    try:
        await asyncio.wait_for(daemon.ready.wait(), 20)
        await ProducerStateTable(db, "ROUTE_TABLE").set("10.1.0.0/24", {"nexthop": "10.0.0.1", "ifname": "Ethernet8"})
        await asyncio.sleep(0.3)
        assert await routes.get("10.1.0.0/24") is None  # its port is not there: it waits
        await ProducerStateTable(db, "PORT_TABLE").set("Ethernet8", {"admin_status": "up", "mtu": "9100"})
        await until(lambda: routes.hget("10.1.0.0/24", "state"))
        assert dict(await ports.get("Ethernet8") or []) == {"admin_status": "up", "mtu": "9100", "state": "ok"}
        # A partial update keeps the route's other fields.
        await ProducerStateTable(db, "ROUTE_TABLE").set("10.1.0.0/24", {"nexthop": "10.0.0.9"})

        async def updated() -> bool:
            return await routes.hget("10.1.0.0/24", "nexthop") == "10.0.0.9"

        await until(updated)
        assert await routes.hget("10.1.0.0/24", "ifname") == "Ethernet8"
        # A port taken down is not marked ok, and a route over it waits again.
        await ProducerStateTable(db, "PORT_TABLE").set("Ethernet8", {"admin_status": "down"})

        async def port_down() -> bool:
            return await ports.hget("Ethernet8", "state") == "down"

        await until(port_down)
        await ProducerStateTable(db, "ROUTE_TABLE").set("10.1.0.0/24", {"nexthop": "10.0.0.7"})
        await asyncio.sleep(0.3)
        assert await routes.hget("10.1.0.0/24", "nexthop") == "10.0.0.9"  # not updated: its port is down
        await ProducerStateTable(db, "PORT_TABLE").set("Ethernet8", {"mtu": "1500"})  # state unchanged
        await asyncio.sleep(0.3)
        assert await ports.hget("Ethernet8", "state") == "down"
        await ProducerStateTable(db, "PORT_TABLE").set("Ethernet8", {"admin_status": "up"})

        async def updated_again() -> bool:
            return await routes.hget("10.1.0.0/24", "nexthop") == "10.0.0.7"

        await until(updated_again)
        await ProducerStateTable(db, "ROUTE_TABLE").delete("10.1.0.0/24")
        await ProducerStateTable(db, "PORT_TABLE").delete("Ethernet8")

        async def gone() -> bool:
            return await routes.get("10.1.0.0/24") is None and await ports.get("Ethernet8") is None

        await until(gone)
    finally:
        daemon.stop()
        assert await asyncio.wait_for(run, 30) == 0
        await state.close()
