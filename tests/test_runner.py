"""swssd.run: uvloop by default, asyncio's loop when opted out (argument or environment)."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

import swssd
from swssd import DBConnector, ProducerStateTable, Table
from swssd.redis.embedded_redis import EmbeddedRedis


async def loop_kind() -> bool:
    return isinstance(asyncio.get_running_loop(), uvloop.Loop)


def test_uvloop_by_default_and_opt_outs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWSSD_NO_UVLOOP", raising=False)
    assert swssd.run(loop_kind()) is True
    assert swssd.run(loop_kind(), use_uvloop=False) is False
    monkeypatch.setenv("SWSSD_NO_UVLOOP", "1")
    assert swssd.run(loop_kind()) is False
    assert swssd.run(loop_kind(), use_uvloop=True) is True


def test_a_program_runs_the_library_through_it(redis_server: EmbeddedRedis) -> None:
    async def main() -> list[tuple[str, str]] | None:
        db = await DBConnector.from_url(redis_server.url, db_id=3)
        try:
            await Table(db, "RUNNER_T").set("k", [("f", "v")])
            await ProducerStateTable(db, "RUNNER_T").set("k", [("g", "w")])
            return await Table(db, "RUNNER_T").get("k")
        finally:
            await db.redis.delete("RUNNER_T:k", "_RUNNER_T:k", "RUNNER_T_KEY_SET")
            await db.close()

    assert swssd.run(main()) == [("f", "v")]
