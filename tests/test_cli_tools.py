"""The operator tools through the real `swssd` command: produce/dump round trips against a real
redis-server, one-line errors with the right exit status, replay's help, and the first run."""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from daemon_harness import wait_until
from swssd import ConsumerStateTable, ConsumerTable, DBConnector
from swssd.cli import build_parser
from swssd.orch.config import DEFAULT_CONFIG
from swssd.redis.dbconfig import DEFAULT_PATH
from swssd.redis.embedded_redis import EmbeddedRedis, free_port

CLI = [sys.executable, "-m", "swssd.cli"]
COMMANDS = ("run", "demo", "produce", "dump", "status", "replay")


def clean_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SWSSD_DB_CONFIG", None)
    env.update(extra)
    return env


def swssd(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *map(str, args)], capture_output=True, text=True, timeout=60, input=stdin, env=clean_env()
    )


def ok(*args: str | Path, stdin: str | None = None) -> str:
    out = swssd(*args, stdin=stdin)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout


def dump(config: Path, *args: str) -> Any:
    return json.loads(ok("dump", "--db-config", config, *args))


@pytest.fixture
def config(clean_redis: EmbeddedRedis, tmp_path: Path) -> Path:
    return clean_redis.write_database_config(tmp_path / "database_config.json")


# -- help ----------------------------------------------------------------------------------


def test_help_lists_every_command_and_documents_every_option() -> None:
    out = swssd("--help")
    assert out.returncode == 0
    listed = [line.split()[0] for line in out.stdout.splitlines() if line.startswith("    ") and line.split()]
    assert [c for c in COMMANDS if c in listed] == list(COMMANDS)
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("run", "demo", "produce", "dump", "status"):
        for action in sub.choices[name]._actions:
            assert action.help, f"swssd {name}: {action.option_strings or action.dest} has no help text"
        assert swssd(name, "--help").returncode == 0


def test_replay_help_is_the_replay_command_line() -> None:
    top = swssd("replay", "--help")
    assert top.returncode == 0, top.stderr
    assert top.stdout.startswith("usage: swssd replay")
    assert all(c in top.stdout for c in ("state", "history", "stats", "diff", "restore"))
    state = swssd("replay", "state", "--help")
    assert state.returncode == 0, state.stderr
    assert state.stdout.startswith("usage: swssd replay state") and "--as-of" in state.stdout


# -- produce / dump ------------------------------------------------------------------------


async def test_produce_state_pop_then_dump(config: Path) -> None:
    ok("produce", "--db-config", config, "--db", "APPL_DB", "--table", "PORT_TABLE",
       "set", "Ethernet0", "speed=100000", "mtu=9100", "set", "Ethernet4", "speed=40000", "admin_status=up")
    ok("produce", "--db-config", config, "--table", "ROUTE_TABLE", "set", "10.0.0.0/8", "nexthop=10.0.0.1")
    assert dump(config) == {}, "nothing is in the tables before a consumer pops"
    async with await DBConnector.connect("APPL_DB", config) as db:
        ports = ConsumerStateTable(db, "PORT_TABLE")
        got = await ports.pops()
        assert sorted((k.key, k.op, sorted(k.fvs)) for k in got) == [
            ("Ethernet0", "SET", [("mtu", "9100"), ("speed", "100000")]),
            ("Ethernet4", "SET", [("admin_status", "up"), ("speed", "40000")]),
        ]
        await ConsumerStateTable(db, "ROUTE_TABLE").pops()
        assert dump(config, "--db", "APPL_DB") == {
            "PORT_TABLE": {"Ethernet0": {"mtu": "9100", "speed": "100000"},
                           "Ethernet4": {"admin_status": "up", "speed": "40000"}},
            "ROUTE_TABLE": {"10.0.0.0/8": {"nexthop": "10.0.0.1"}},
        }
        ok("produce", "--db-config", config, "--table", "PORT_TABLE", "del", "Ethernet0")
        assert [(k.key, k.op) for k in await ports.pops()] == [("Ethernet0", "DEL")]
    assert dump(config, "--table", "PORT_TABLE") == {
        "PORT_TABLE": {"Ethernet4": {"admin_status": "up", "speed": "40000"}}
    }


async def test_produce_from_jsonl_and_swssconfig_files(config: Path, tmp_path: Path) -> None:
    jsonl = tmp_path / "ops.jsonl"
    jsonl.write_text(
        '{"op": "SET", "key": "Ethernet0", "fvs": {"speed": "100000"}}\n'
        "\n"
        '{"op": "SET", "key": "Ethernet4", "fvs": [["speed", "40000"], ["mtu", "9100"]]}\n'
        '{"op": "SET", "key": "Vlan10", "table": "VLAN_TABLE", "fvs": {"vlanid": "10"}}\n'
    )
    swssconfig = tmp_path / "routes.json"
    swssconfig.write_text(json.dumps([
        {"ROUTE_TABLE:10.1.0.0/16": {"nexthop": "10.0.0.1", "ifname": "Ethernet0"}, "OP": "SET"},
        {"ROUTE_TABLE:10.2.0.0/16": {"nexthop": "10.0.0.5", "ifname": "Ethernet4"}, "OP": "SET"},
        {"ROUTE_TABLE:10.2.0.0/16": {}, "OP": "DEL"},
        {"INTF_TABLE:Ethernet0:10.0.0.0/31": {"scope": "global"}},
    ], indent=4))
    one = tmp_path / "one.json"  # a single operation, pretty-printed
    one.write_text(json.dumps({"key": "Vlan20", "fvs": {"vlanid": "20"}}, indent=2))
    assert "produced 3 operation(s)" in ok("produce", "--db-config", config, "--table", "PORT_TABLE", "--file", jsonl)
    ok("produce", "--db-config", config, "--table", "VLAN_TABLE", "--file", one)
    assert "produced 4 operation(s)" in ok("produce", "--db-config", config, "--file", swssconfig)
    async with await DBConnector.connect("APPL_DB", config) as db:
        popped = {
            t: await ConsumerStateTable(db, t).pops() for t in ("PORT_TABLE", "VLAN_TABLE", "ROUTE_TABLE", "INTF_TABLE")
        }
    routes = sorted((k.key, k.op) for k in popped["ROUTE_TABLE"])
    assert routes == [("10.1.0.0/16", "SET"), ("10.2.0.0/16", "DEL")]
    assert [k.key for k in popped["INTF_TABLE"]] == ["Ethernet0:10.0.0.0/31"]
    assert dump(config) == {
        "INTF_TABLE": {"Ethernet0:10.0.0.0/31": {"scope": "global"}},
        "PORT_TABLE": {"Ethernet0": {"speed": "100000"}, "Ethernet4": {"mtu": "9100", "speed": "40000"}},
        "ROUTE_TABLE": {"10.1.0.0/16": {"ifname": "Ethernet0", "nexthop": "10.0.0.1"}},
        "VLAN_TABLE": {"Vlan10": {"vlanid": "10"}, "Vlan20": {"vlanid": "20"}},
    }
    assert dump(config, "--table", "VLAN_TABLE", "--table", "INTF_TABLE") == {
        "VLAN_TABLE": {"Vlan10": {"vlanid": "10"}, "Vlan20": {"vlanid": "20"}},
        "INTF_TABLE": {"Ethernet0:10.0.0.0/31": {"scope": "global"}},
    }


async def test_produce_queue_keeps_every_operation_in_order(config: Path) -> None:
    ok("produce", "--db-config", config, "--table", "Q_TABLE", "--kind", "queue",
       "set", "k", "a=1", "del", "k", "set", "k", "a=2", "b=3")
    ok("produce", "--db-config", config, "--table", "Q_TABLE", "--kind", "queue", "--file", "-",
       stdin='{"key": "j", "fvs": {"x": "y"}}\n')
    async with await DBConnector.connect("APPL_DB", config) as db:
        got = await ConsumerTable(db, "Q_TABLE").pops()
    assert [(k.key, k.op, k.fvs) for k in got] == [
        ("k", "SET", [("a", "1")]), ("k", "DEL", []), ("k", "SET", [("a", "2"), ("b", "3")]),
        ("j", "SET", [("x", "y")]),
    ]
    assert dump(config) == {"Q_TABLE": {"j": {"x": "y"}, "k": {"a": "2", "b": "3"}}}


async def test_config_db_uses_pipe_separator_and_its_database(
    config: Path, clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    ok("produce", "--db-config", config, "--db", "CONFIG_DB", "--table", "PORT", "set", "Ethernet0", "admin_status=up")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps([{"VLAN|Vlan10": {"vlanid": "10"}, "OP": "SET"}]))
    ok("produce", "--db-config", config, "--db", "CONFIG_DB", "--file", cfg)
    async with await DBConnector.connect("CONFIG_DB", config) as db:
        assert db.separator == "|"
        await ConsumerStateTable(db, "PORT").pops()
        await ConsumerStateTable(db, "VLAN").pops()
    raw = redis.Redis(port=clean_redis.port, db=4, decode_responses=True)
    assert raw.hgetall("PORT|Ethernet0") == {"admin_status": "up"}
    raw.close()
    expected = {"PORT": {"Ethernet0": {"admin_status": "up"}}, "VLAN": {"Vlan10": {"vlanid": "10"}}}
    assert dump(config, "--db", "CONFIG_DB") == expected
    assert dump(config, "--db", "APPL_DB") == {}
    # --url without --db-id/--separator: SONiC's usual number and separator for --db
    assert json.loads(ok("dump", "--url", clean_redis.url, "--db", "CONFIG_DB")) == expected


# -- errors --------------------------------------------------------------------------------


def _closed_port_config(tmp_path: Path) -> tuple[Path, int]:
    port = free_port()
    path = tmp_path / "closed.json"
    path.write_text(json.dumps({
        "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": port}},
        "DATABASES": {"APPL_DB": {"id": 0, "separator": ":", "instance": "redis"}},
    }))
    return path, port


def test_errors_are_one_line_with_an_exit_status(config: Path, tmp_path: Path) -> None:
    closed, port = _closed_port_config(tmp_path)
    (tmp_path / "bad.jsonl").write_text('{"key": "k", "fvs": {"a": "1"}}\n{"key": "k2", "fvs": {"a": \n')
    (tmp_path / "bad.json").write_text(
        '[\n  {"PORT_TABLE:Ethernet0": {"speed": "1"}},\n  {"PORT_TABLE:Ethernet4" {}}\n]\n'
    )
    (tmp_path / "broken_config.json").write_text('{"INSTANCES": {}, "DATABASES": {"APPL_DB": {"id": 0}}}')
    cases: list[tuple[list[str | Path], int, list[str]]] = [
        (["produce", "--db-config", closed, "--table", "T", "set", "k", "a=1"], 1,
         [f"127.0.0.1:{port}", "redis-server"]),
        (["dump", "--db-config", closed], 1, [f"127.0.0.1:{port}"]),
        (["produce", "--db-config", config, "set", "Ethernet0", "speed=1"], 2, ["--table"]),
        (["produce", "--db-config", config, "--table", "T", "--file", tmp_path / "bad.jsonl"], 2, ["bad.jsonl:2"]),
        (["produce", "--db-config", config, "--file", tmp_path / "bad.json"], 2, ["bad.json", "line 3"]),
        (["produce", "--db-config", config, "--table", "T", "--file", tmp_path / "absent.json"], 2,
         ["absent.json", "cannot read"]),
        (["produce", "--db-config", config, "--db", "APP_DB", "--table", "T", "del", "k"], 2,
         ["APP_DB", "APPL_DB", "CONFIG_DB", "--db"]),
        (["dump", "--db-config", tmp_path / "broken_config.json"], 2, ["broken_config.json", "--db-config"]),
        (["dump", "--db-config", tmp_path / "no_such_config.json"], 2, ["no_such_config.json", "--db-config"]),
        (["produce", "--db-config", config, "--table", "T"], 2, ["nothing to produce"]),
        (["dump", "--url", "http://127.0.0.1:1"], 2, ["--url"]),
        # a misspelled database with --url is refused, not taken as database 0
        (["produce", "--url", f"redis://127.0.0.1:{port}", "--db", "CONFG_DB", "--table", "X", "set", "a", "b=c"], 2,
         ["CONFG_DB", "CONFIG_DB", "--db-id"]),
        (["db", "--url", f"redis://127.0.0.1:{port}", "CONFG_DB", "keys", "*"], 2, ["CONFG_DB", "--db-id"]),
        (["db", "--db-config", config, "CONFG_DB", "keys", "*"], 2, ["CONFG_DB", "as the database"]),
        (["status", "--metrics-url", f"http://127.0.0.1:{port}/metrics", "--timeout", "2"], 2, [f"127.0.0.1:{port}"]),
    ]
    for args, code, needles in cases:
        out = swssd(*args)
        where = f"swssd {' '.join(map(str, args))}: {out.stderr!r}"
        assert out.returncode == code, where
        assert out.stdout == "", where
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, where
        assert all(n in out.stderr for n in needles), where


def test_unknown_option_shows_the_sub_command_usage(config: Path) -> None:
    out = swssd("dump", "--db-config", config, "--tabel", "T")
    assert out.returncode == 2
    assert "usage: swssd dump" in out.stderr and "unrecognized arguments: --tabel" in out.stderr


# -- first run -----------------------------------------------------------------------------


@pytest.mark.skipif(
    os.path.exists(DEFAULT_PATH) or os.path.exists(DEFAULT_CONFIG),
    reason="this machine has a SONiC database_config.json or /etc/swssd config: run would use them",
)
def test_first_run_private_redis_example_plugins_consume_sigterm_cleans_up(tmp_path: Path) -> None:
    """No config, no $SWSSD_DB_CONFIG, no database_config.json: `swssd run` brings its own Redis;
    the operator tools reach it through the database_config.json it writes; SIGTERM stops it all."""
    home = tmp_path / "home"
    home.mkdir()
    log = tmp_path / "log"
    env = clean_env(HOME=str(home))
    with open(log, "wb") as out:
        proc = subprocess.Popen([*CLI, "run"], stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path, env=env)
        try:
            assert wait_until(lambda: " ready " in log.read_text() or proc.poll() is not None, 60), log.read_text()
            assert proc.poll() is None, log.read_text()
            text = log.read_text()
            assert "no Redis configured: started a private redis-server" in text
            redis_dir = Path(text.split("(unix socket ")[1].split(")")[0]).parent
            redis_port = int(text.split("private redis-server on redis://127.0.0.1:")[1].split()[0])
            db_config = redis_dir / "database_config.json"
            changes = tmp_path / "changes.json"
            changes.write_text(json.dumps([  # the route names a port that comes up after it
                {"ROUTE_TABLE:10.1.0.0/16": {"nexthop": "10.0.0.1", "ifname": "Ethernet0"}, "OP": "SET"},
                {"PORT_TABLE:Ethernet0": {"admin_status": "up", "speed": "100000"}, "OP": "SET"},
            ]))
            ok("produce", "--db-config", db_config, "--file", changes)
            expected = {
                "PORT_TABLE": {"Ethernet0": {"admin_status": "up", "speed": "100000", "state": "ok"}},
                "ROUTE_TABLE": {"10.1.0.0/16": {"ifname": "Ethernet0", "nexthop": "10.0.0.1", "state": "ok"}},
            }
            seen: list[Any] = []

            def mirrored() -> bool:
                seen.append(dump(db_config, "--db", "STATE_DB"))
                return seen[-1] == expected or proc.poll() is not None

            assert wait_until(mirrored, 30, 0.3) and seen[-1] == expected, (seen[-1], log.read_text())
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log.read_text()
    assert "Traceback" not in text
    assert not redis_dir.exists(), "the private redis-server's temp dir is left behind"
    with pytest.raises(OSError):  # and the server itself is gone
        socket.create_connection(("127.0.0.1", redis_port), timeout=2).close()
