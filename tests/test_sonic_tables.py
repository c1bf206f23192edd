"""Safe by default on a switch: no shipped config pops a table SONiC's daemons consume, and
`swssd check` and the daemon's start warn, naming the table and its daemon, when a config does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from daemon_harness import DaemonProcess, write_config
from swssd.compat import schema as compat_schema
from swssd.orch.config_file import load_config
from swssd.orch.sonic_tables import sonic_table_warnings
from swssd.redis.embedded_redis import EmbeddedRedis
from swssd.schema import APPL_DB_CONSUMERS_BESIDES_ORCHAGENT, APPL_DB_TABLES, sonic_consumer

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "swssd.cli"]


def test_the_appl_db_tables_are_the_generated_schemas() -> None:
    generated = {v for k, v in vars(compat_schema).items() if k.startswith("APP_") and isinstance(v, str)}
    assert generated == APPL_DB_TABLES
    assert set(APPL_DB_CONSUMERS_BESIDES_ORCHAGENT) <= APPL_DB_TABLES


@pytest.mark.parametrize(("db", "table", "daemon"), [
    ("APPL_DB", "ROUTE_TABLE", "orchagent"), ("APPL_DB", "PORT_TABLE", "orchagent"),
    ("APPL_DB", "NEIGH_RESOLVE_TABLE", "nbrmgrd"), ("APPL_DB", "EXAMPLE_ROUTE_TABLE", None),
    ("STATE_DB", "ROUTE_TABLE", None),
])
def test_sonic_consumer(db: str, table: str, daemon: str | None) -> None:
    assert sonic_consumer(db, table) == daemon


def test_no_shipped_config_pops_a_sonic_table() -> None:
    for path in (REPO / "config").glob("*.toml"):
        config = load_config(path)
        assert sonic_table_warnings(config) == [], path
        for orch in config.orchs:
            for t in orch.tables:
                assert t.resolved_kind == "subscriber" or sonic_consumer(t.db, t.table) is None, (path, t.table)


def _config(tmp_path: Path, server: EmbeddedRedis, **table: object) -> Path:
    return write_config(tmp_path, server, {"orchs": [{
        "plugin": "swssd.orch.examples.route:RouteOrch", "name": "routes",
        "tables": [{"db": "APPL_DB", "table": "ROUTE_TABLE", **table}],
    }]})


def _check(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "check", "--config", str(config)], capture_output=True, text=True, timeout=60)


def test_check_warns_about_popping_route_table(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    out = _check(_config(tmp_path, clean_redis))
    assert out.returncode == 0, out.stderr  # a warning, not an error
    warnings = [line for line in out.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, out.stdout
    assert "ROUTE_TABLE" in warnings[0] and "orchagent" in warnings[0] and "subscriber" in warnings[0]
    assert out.stdout.splitlines()[-1].endswith(": OK")


@pytest.mark.parametrize("table", [{"kind": "subscriber"}, {"take_from_sonic": True}])
def test_a_subscriber_or_an_explicit_setting_is_not_warned_about(
    clean_redis: EmbeddedRedis, tmp_path: Path, table: dict[str, object],
) -> None:
    out = _check(_config(tmp_path, clean_redis, **table))
    assert out.returncode == 0, out.stderr
    assert not [line for line in out.stdout.splitlines() if line.startswith("warning:")], out.stdout


def test_the_daemon_warns_at_start(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    daemon = DaemonProcess(_config(tmp_path, clean_redis, kind="queue"), tmp_path / "log")
    try:
        daemon.wait_ready()
        lines = [e for e in daemon.logs() if e.get("level") == "warning" and "ROUTE_TABLE" in e["event"]]
        assert len(lines) == 1 and "orchagent" in lines[0]["event"]
    finally:
        assert daemon.stop() == 0
