"""swssd.testing as a plugin author uses it: OrchHarness runs an Orch under the daemon's own rules
(merge, Retry, backoff, time-out, dead letters) on a virtual clock, so none of it takes real
time; DaemonRunner runs the daemon end to end. The project's example plugins are tested with it,
through the fixtures of swssd's pytest plugin (swssd_redis, swssd_connect)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from swssd import DBConnector, KeyOpFieldsValues, Orch, ProducerStateTable, Retry
from swssd import Table as RedisTable
from swssd.orch.examples.port_mirror import PortMirrorOrch
from swssd.orch.examples.route import RouteOrch
from swssd.testing import DaemonRunner, EmbeddedRedis, OrchHarness, Table, eventually, wait_until

ROUTES, PORTS = "EXAMPLE_ROUTE_TABLE", "EXAMPLE_PORT_TABLE"
ROUTE_OPTIONS = {"port_table": PORTS, "route_table": ROUTES}


class Flaky(Orch):
    """Fails every call for keys starting with `bad`; `slow*` never returns; the rest works."""

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if task.key.startswith("bad"):
            raise ConnectionError(f"{task.key}: next hop unreachable")
        if task.key.startswith("slow"):
            await asyncio.Event().wait()


class BatchFlaky(Orch):
    async def handle_batch(self, table: str, tasks: list[KeyOpFieldsValues]) -> list[BaseException | None]:
        return [Retry("later") if t.key.startswith("wait") else None for t in tasks]


async def test_the_route_example_waits_for_its_port(swssd_redis: EmbeddedRedis,
                                                    swssd_connect: Any) -> None:
    async with OrchHarness(RouteOrch(), tables=[ROUTES], redis=swssd_redis, options=ROUTE_OPTIONS,
                           retry={"retry_interval": 0.5}) as h:
        h.set(ROUTES, "10.0.0.0/24", nexthop="10.0.0.1", ifname="Ethernet0")
        await h.run()
        assert [o.reason for o in h.retried] == ["port Ethernet0 is not up yet"] and h.handled == []
        assert h.next_run_at(ROUTES, "10.0.0.0/24") == 0.5
        await h.advance(0.4)
        assert len(h.retried) == 1  # not yet: retry_interval is 0.5
        state: DBConnector = await swssd_connect("STATE_DB")
        await RedisTable(state, PORTS).set("Ethernet0", {"state": "ok"})
        await h.advance(0.1)
        assert [(o.key, o.at) for o in h.handled] == [("10.0.0.0/24", 0.5)]
        assert await RedisTable(state, ROUTES).hget("10.0.0.0/24", "state") == "ok"


async def test_the_port_example_mirrors_and_removes(swssd_redis: EmbeddedRedis, swssd_connect: Any) -> None:
    async with OrchHarness(PortMirrorOrch(), tables=[PORTS], redis=swssd_redis,
                           options={"state_table": PORTS}) as h:
        h.set(PORTS, "Ethernet0", admin_status="up", mtu="9100")
        h.set(PORTS, "Ethernet4", admin_status="down")
        await h.run()
        mirror = RedisTable(await swssd_connect("STATE_DB"), PORTS)
        assert await mirror.hget("Ethernet0", "state") == "ok" and await mirror.hget("Ethernet4", "state") == "down"
        h.delete(PORTS, "Ethernet4")
        await h.run()
        assert await mirror.get("Ethernet4") is None and len(h.handled) == 3


async def test_new_data_runs_a_waiting_task_at_once(swssd_redis: EmbeddedRedis, swssd_connect: Any) -> None:
    async with OrchHarness(RouteOrch(), tables=[ROUTES], redis=swssd_redis, options=ROUTE_OPTIONS) as h:
        h.set(ROUTES, "10.0.0.0/24", ifname="Ethernet0")
        await h.run()
        await RedisTable(await swssd_connect("STATE_DB"), PORTS).set("Ethernet0", {"state": "ok"})
        h.set(ROUTES, "10.9.0.0/24", ifname="")  # any new data for the Orch
        await h.run()
        assert sorted(o.key for o in h.handled) == ["10.0.0.0/24", "10.9.0.0/24"] and h.clock.now == 0


async def test_backoff_then_a_dead_letter_after_max_attempts_in_no_time() -> None:
    started = time.monotonic()
    retry = {"max_attempts": 4, "backoff_initial": 2.0, "backoff_max": 5.0}
    async with OrchHarness(Flaky(), tables=["T"], retry=retry) as h:
        h.set("T", "bad1", a="1")
        h.set("T", "good", a="1")
        await h.settle()
        assert [o.key for o in h.handled] == ["good"]
        assert [o.attempts for o in h.failed] == [1, 2, 3, 4]
        gaps = [b.at - a.at for a, b in zip(h.failed, h.failed[1:])]
        # doubling from backoff_initial (each drawn between half and all of it), capped at backoff_max
        assert 1.0 <= gaps[0] <= 2.0 and 2.0 <= gaps[1] <= 4.0 and 2.5 <= gaps[2] <= 5.0
        assert [(o.key, o.reason, o.attempts) for o in h.dead_lettered] == [
            ("bad1", "ConnectionError: bad1: next hop unreachable", 4)]
        assert h.pending("T") == []
    assert time.monotonic() - started < 5  # over 6 s of backoff on the virtual clock


async def test_merge_as_the_daemon_merges() -> None:
    async with OrchHarness(Flaky(), tables=["T", Table("Q", kind="subscriber")]) as h:
        h.set("T", "k1", a="1", b="1")
        h.set("T", "k1", b="2", c="2")      # SET + SET: one task, fields merged (b moved to the end)
        h.set("T", "k2", a="1")
        h.delete("T", "k2")                 # SET + DEL: the DEL
        h.delete("T", "k3")
        h.set("T", "k3", a="3")             # DEL + SET: both, the DEL first
        h.set("Q", "e", a="1", b="1")
        h.set("Q", "e", a="2")              # a subscriber's SET is the whole entry: it replaces
        assert h.pending("T") == [KeyOpFieldsValues("k1", "SET", [("a", "1"), ("b", "2"), ("c", "2")]),
                                  KeyOpFieldsValues("k2", "DEL", []), KeyOpFieldsValues("k3", "DEL", []),
                                  KeyOpFieldsValues("k3", "SET", [("a", "3")])]
        await h.run()
        assert [(o.table, o.key, o.task.op) for o in h.handled] == [
            ("T", "k1", "SET"), ("T", "k2", "DEL"), ("T", "k3", "DEL"), ("T", "k3", "SET"), ("Q", "e", "SET")]
        assert h.handled[-1].task.fvs == [("a", "2")]


async def test_a_hanging_handler_times_out_on_the_virtual_clock() -> None:
    retry = {"handler_timeout": 30.0, "max_attempts": 1}
    async with OrchHarness(Flaky(), tables=["T"], retry=retry, hang_after=0.05) as h:
        h.set("T", "slow1")
        await h.run()
        assert [(o.key, o.at, o.reason) for o in h.dead_lettered] == [("slow1", 30.0, "handler timed out after 30s")]


async def test_batch_outcomes_are_recorded() -> None:
    async with OrchHarness(BatchFlaky(), tables=["T"]) as h:
        h.feed("T", [KeyOpFieldsValues("ok", "SET", []), KeyOpFieldsValues("wait", "SET", [])])
        await h.run()
        assert [o.key for o in h.handled] == ["ok"] and [o.key for o in h.retried] == ["wait"]


async def test_the_harness_says_what_is_wrong() -> None:
    h = OrchHarness(Flaky(), tables=["T"])
    with pytest.raises(RuntimeError, match="start"):
        h.set("T", "k")
    async with h:
        with pytest.raises(KeyError, match="not a table of this harness"):
            h.set("NOPE", "k")


async def test_the_examples_end_to_end_with_daemon_runner(swssd_redis: EmbeddedRedis, swssd_connect: Any,
                                                          tmp_path: Any) -> None:
    config = {
        "metrics": {"enabled": True},
        "orchs": [
            {"plugin": "port_mirror", "name": "ports", "options": {"state_table": PORTS},
             "tables": [{"db": "APPL_DB", "table": PORTS}]},
            {"plugin": "route", "name": "routes", "options": ROUTE_OPTIONS, "retry": {"retry_interval": 0.2},
             "tables": [{"db": "APPL_DB", "table": ROUTES}]},
        ],
    }
    appl = await swssd_connect("APPL_DB")
    state = await swssd_connect("STATE_DB")
    with DaemonRunner(config, redis=swssd_redis, directory=tmp_path) as daemon:
        await ProducerStateTable(appl, ROUTES).set("10.0.0.0/24", {"nexthop": "10.0.0.1", "ifname": "Ethernet0"})
        await ProducerStateTable(appl, PORTS).set("Ethernet0", {"admin_status": "up"})

        async def installed() -> bool:
            return await RedisTable(state, ROUTES).hget("10.0.0.0/24", "state") == "ok"

        await eventually(installed)
        # the plugin logs after its write, and the task counts as handled once handle() returns:
        # both come a moment after the state is there
        assert daemon.wait_for("route installed")[0]["prefix"] == "10.0.0.0/24"
        assert daemon.health()[0] == 200
        handled = 'swssd_handled_total{db="APPL_DB",table="EXAMPLE_ROUTE_TABLE"}'
        assert wait_until(lambda: daemon.metrics().get(handled) == 1), daemon.metrics().get(handled)
    assert daemon.exit_status == 0
