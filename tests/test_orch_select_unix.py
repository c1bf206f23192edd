"""The daemon consumes over unix sockets (SONiC's database_config.json names one): Select must work there."""

from __future__ import annotations

import asyncio

from swssd import ConsumerStateTable, DBConnector, ProducerStateTable, Select


async def test_select_over_unix_socket(unix_db: DBConnector) -> None:
    await ProducerStateTable(unix_db, "UNIX_T").set("k", [("f", "v")])
    consumer = ConsumerStateTable(unix_db, "UNIX_T")
    async with Select() as select:
        await asyncio.wait_for(select.add(consumer), 10)
        assert await select.select(timeout=5) is consumer
    assert await consumer.pops() == [("k", "SET", [("f", "v")])]
