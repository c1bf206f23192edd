"""`swssd demo`: the example plugins in a daemon, fed by a small producer, with a live count.

Ports and routes are written to APPL_DB with ProducerStateTable, as SONiC's portsyncd and fpmsyncd
do. Some routes name ports that come up only later, so they wait (Retry) and get installed when
their port appears: the log shows each change flowing through.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import structlog

from swssd import DBConnector, ProducerStateTable
from swssd.orch.config import Config
from swssd.orch.config_file import config_from_dict
from swssd.orch.daemon import Daemon

log = structlog.get_logger("swssd.demo")

PORTS = [f"Ethernet{4 * i}" for i in range(8)]

#: Printed after the totals: what the figures mean, and where to go from here.
EXPLAINED = """
What the totals count:
  produced       changes the demo's producer wrote to APPL_DB (PORT_TABLE, ROUTE_TABLE)
  handled        tasks the plugins finished; fewer than produced, because changes to one key
                 made before the daemon popped it merge into one task (orchagent's rule), and
                 waiting tasks are not finished
  waiting        tasks held right now by Retry: routes whose port is not up yet (one still
                 waiting at the end stays in Redis for the next start, as the warning says; the
                 demo's private redis-server goes away with it)
  retries        times a waiting route was tried again (on new data, or every retry_interval)
  dead_lettered  tasks given up on after max_attempts failures (0 here: Retry is not a failure)

What to try next:
  swssd demo --seconds 60                       watch it longer
  swssd run                                     the daemon with these plugins on a private redis-server,
                                                until Ctrl-C (no config needed)
  swssd run --config config/swssd.toml          the same on a local Redis as SONiC runs it (config/ is an
                                                example: 127.0.0.1:6379, /var/run/redis/redis.sock)
  docs/plugins.md                               writing a plugin: beside its config, its test, packaging
  swssd check --config swssd.toml               validate a config and load its plugins, consuming nothing
  swssd db APPL_DB hgetall 'PORT_TABLE:Ethernet0', swssd watch --db STATE_DB --table PORT_TABLE
                                                look at tables on a switch, as sonic-db-cli does
  swssd --help                                  every command, with its exit statuses"""


def example_config(database_config: Path | None, retry_interval: float = 0.5) -> Config:
    """The example plugins on APPL_DB PORT_TABLE and ROUTE_TABLE."""
    redis = {"database_config": str(database_config)} if database_config else {}
    return config_from_dict({
        "redis": redis,
        "orchs": [
            {"plugin": "swssd.orch.examples.port_mirror:PortMirrorOrch", "name": "ports",
             "tables": [{"db": "APPL_DB", "table": "PORT_TABLE", "priority": 10}]},
            {"plugin": "swssd.orch.examples.route:RouteOrch", "name": "routes",
             "retry": {"retry_interval": retry_interval},
             "tables": [{"db": "APPL_DB", "table": "ROUTE_TABLE"}]},
        ],
    })


class _Producer:
    """Writes a few changes a second: ports first, routes (some ahead of their ports), then churn."""

    def __init__(self, db: DBConnector) -> None:
        self.ports = ProducerStateTable(db, "PORT_TABLE")
        self.routes = ProducerStateTable(db, "ROUTE_TABLE")
        self.produced = 0
        self.rng = random.Random(7)

    async def port(self, name: str, **fields: str) -> None:
        await self.ports.set(name, fields)
        self.produced += 1

    async def route(self, prefix: str, port: str) -> None:
        index = PORTS.index(port)
        await self.routes.set(prefix, {"nexthop": f"10.0.{index}.1", "ifname": port})
        self.produced += 1

    async def run(self) -> None:
        for port in PORTS[:4]:
            await self.port(port, admin_status="up", mtu="9100", speed="100000")
        for i, port in enumerate(PORTS[:6]):  # Ethernet16 and Ethernet20 are not up yet
            await self.route(f"192.168.{i}.0/24", port)
        tick = 0
        while True:
            await asyncio.sleep(0.25)
            tick += 1
            if tick in (6, 12):  # the missing ports come up; their routes get installed
                await self.port(PORTS[4 if tick == 6 else 5], admin_status="up", mtu="9100", speed="100000")
            elif tick % 3 == 0:
                port = self.rng.choice(PORTS[:4])
                await self.port(port, admin_status=self.rng.choice(["up", "down"]))
            elif tick % 7 == 0:
                await self.routes.delete(f"192.168.{self.rng.randrange(6)}.0/24")
                self.produced += 1
            else:
                i = self.rng.randrange(6)
                await self.route(f"192.168.{i}.0/24", self.rng.choice(PORTS[:6]))


async def run_demo(database_config: Path, seconds: float, capture: Path | None = None, host: str | None = None) -> int:
    """Run the daemon with the example plugins and the producer for `seconds` (or until Ctrl-C);
    with `capture`, the daemon also writes its capture files (JSON Lines and swss.rec) there,
    naming `host` (default: this machine's name) as the switch they come from."""
    config = example_config(database_config)
    if capture is not None:
        config.capture.enabled = True
        config.capture.directory = capture
        config.capture.rec = True
        config.capture.host = host
    config.redis.password = None  # the private redis-server has none; $SWSSD_REDIS_PASSWORD is another's
    daemon = Daemon(config)
    running = asyncio.ensure_future(daemon.run())
    ready = asyncio.ensure_future(daemon.ready.wait())
    await asyncio.wait((running, ready), return_when=asyncio.FIRST_COMPLETED)
    if running.done():
        ready.cancel()
        return running.result()
    db = await DBConnector.connect("APPL_DB", database_config)
    producer = _Producer(db)
    tasks = [asyncio.ensure_future(producer.run()), asyncio.ensure_future(_report(daemon, producer))]
    try:
        await asyncio.wait_for(asyncio.shield(running), seconds)
    except TimeoutError:
        daemon.stop()
    finally:
        for t in tasks:
            t.cancel()
        code = await running
        await db.close()
    _summary(daemon, producer)
    print(EXPLAINED, file=sys.stderr)
    return code


async def _report(daemon: Daemon, producer: _Producer) -> None:
    while True:
        await asyncio.sleep(1.0)
        _summary(daemon, producer, final=False)


def _summary(daemon: Daemon, producer: _Producer, final: bool = True) -> None:
    stats = [w.stats for w in daemon.workers]
    log.info(
        "demo totals" if final else "demo",
        produced=producer.produced,
        handled=sum(s.handled for s in stats),
        waiting=daemon.pending_count,
        retries=sum(s.retried for s in stats),
        dead_lettered=sum(s.dead_lettered for s in stats),
    )
