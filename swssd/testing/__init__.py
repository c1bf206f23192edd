"""swssd.testing: what a plugin's tests need, shipped with swssd (docs/plugins.md, "Testing a plugin").

- `OrchHarness`: one Orch run in-process by the daemon's own table worker (merge, Retry,
  backoff, time-out, dead letters) on a `VirtualClock` the test advances;
- `DaemonRunner`: `swssd run --config ...` as a process for an end-to-end test, waited on until
  ready, its log lines, metrics and exit status at hand;
- a pytest plugin (installed with swssd, entry point `pytest11`): the fixtures `swssd_redis` (a
  private redis-server for the session, flushed before each test), `swssd_database_config` (its
  database_config.json) and, with pytest-asyncio installed, `swssd_connect` (connectors by
  database name, closed after the test).
"""

from __future__ import annotations

from ..redis.embedded_redis import EmbeddedRedis, free_port
from .clock import VirtualClock
from .harness import OrchHarness, Outcome, Table
from .runner import DaemonError, DaemonRunner, eventually, to_toml, wait_until

__all__ = [
    "DaemonError",
    "DaemonRunner",
    "EmbeddedRedis",
    "OrchHarness",
    "Outcome",
    "Table",
    "VirtualClock",
    "eventually",
    "free_port",
    "to_toml",
    "wait_until",
]
