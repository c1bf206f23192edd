"""Table names with glob characters, separators, whitespace or control characters are refused by
the daemon's config and the tools (one line, exit 2); tables are read with SCAN and an escaped
MATCH pattern, so `P?RT_TABLE` reads nothing of PORT_TABLE and a hash named `*:x` or a key that is
not a hash does not break a full dump. The library classes keep the C++ library's behaviour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swssd import ConfigError, DBConnector, Table
from swssd.names import table_name_problem
from swssd.orch.config_file import load_config
from swssd.redis.embedded_redis import EmbeddedRedis
from swssd.redis.scan import read_table

BAD_NAMES = ["PORT*", "R?UTE_TABLE", "PORT[12]", "back\\slash", "A:B", "A|B", "two words", "tab\tbed",
             "new\nline", "esc\x1b[2J", "del\x7f", "nel\x85", "", "bidi\u202e"]
GOOD_NAMES = ["PORT_TABLE", "ROUTE_TABLE", "VXLAN_TUNNEL_MAP", "BUFFER_PG", "Port-Table.2", "ÉTAT"]


def write(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "swssd.toml"
    path.write_text(f'[[orchs]]\nplugin = "m:C"\ntables = [{{ table = {json.dumps(table)} }}]\n')
    return path


@pytest.mark.parametrize("name", BAD_NAMES)
def test_config_refuses_bad_table_names(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, name)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert (err.path, err.field) == (str(path), "orchs.0.tables.0.table")
    assert "\n" not in str(err) and "\x1b" not in str(err)


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_config_takes_ordinary_table_names(tmp_path: Path, name: str) -> None:
    assert table_name_problem(name) is None
    assert load_config(write(tmp_path, name)).orchs[0].tables[0].table == name


def swssd(*args: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SWSSD_DB_CONFIG"}
    return subprocess.run([sys.executable, "-m", "swssd.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("command", ["check", "run"])
def test_run_and_check_refuse_a_glob_name_in_one_line(tmp_path: Path, command: str) -> None:
    path = write(tmp_path, "PORT*")
    out = swssd(command, "--config", path)
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert str(path) in line and "orchs.0.tables.0.table" in line and "glob character '*'" in line


def test_tools_refuse_bad_table_names(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    config = clean_redis.write_database_config(tmp_path / "database_config.json")
    ops = tmp_path / "ops.jsonl"
    ops.write_text('{"op": "SET", "key": "k", "fvs": {"a": "1"}}\n{"table": "X*", "op": "DEL", "key": "k"}\n')
    swssconfig = tmp_path / "swssconfig.json"
    swssconfig.write_text('[{"R?UTE_TABLE:10.0.0.0/8": {"nexthop": "1"}, "OP": "SET"}]')
    cases = [
        (["dump", "--db-config", config, "--table", "PORT*"], "--table", "'*'"),
        (["watch", "--db-config", config, "--db", "CONFIG_DB", "--table", "R?UTE_TABLE"], "--table", "'?'"),
        (["produce", "--db-config", config, "--table", "A|B", "set", "k", "a=1"], "--table", "'|'"),
        (["produce", "--db-config", config, "--table", "T", "--file", ops], f"{ops}:2", "'*'"),
        (["produce", "--db-config", config, "--file", swssconfig], f"{swssconfig}: item 1", "'?'"),
    ]
    for args, where, char in cases:
        out = swssd(*args)
        assert out.returncode == 2, (args, out.stderr)
        (line,) = out.stderr.strip().splitlines()
        assert where in line and char in line, line
    assert json.loads(swssd("dump", "--db-config", config).stdout) == {}  # nothing was produced


async def test_read_table_matches_its_own_table_only(db: DBConnector) -> None:
    r = db.redis
    await r.hset("PORT_TABLE:a", "f", "1")
    await r.hset("PORT_TABLE:b", mapping={"NULL": "NULL", "g": "2"})
    await r.hset("PORT_TABLEX:c", "f", "3")
    await r.hset("*:x", "f", "4")
    await r.set("PORT_TABLE:bad", "a string")
    await r.rpush("PORT_TABLE:list", "x")
    found = await read_table(db, "PORT_TABLE")
    assert found.entries == {"a": [("f", "1")], "b": [("g", "2")]}
    assert sorted(found.not_hashes) == ["PORT_TABLE:bad", "PORT_TABLE:list"]
    assert (await read_table(db, "*")).entries == {"x": [("f", "4")]}
    assert (await read_table(db, "P?RT_TABLE")).entries == {}
    assert (await read_table(db, "PORT_TABLE[X]")).entries == {}


async def test_read_table_reads_every_entry_over_many_scans(db: DBConnector) -> None:
    pipe = db.redis.pipeline(transaction=False)
    for i in range(3000):
        pipe.hset(f"BIG:k{i}", "i", str(i))
    await pipe.execute()
    found = await read_table(db, "BIG", count=100)
    assert found.entries == {f"k{i}": [("i", str(i))] for i in range(3000)}


async def test_library_tables_keep_cpp_semantics(db: DBConnector) -> None:
    """Table takes any name and keys() is getKeys' `KEYS <name>:*`, glob and all."""
    await Table(db, "T*").set("k", [("a", "1")])
    assert await Table(db, "T*").get("k") == [("a", "1")]
    await Table(db, "TA").set("other", [("b", "2")])
    assert sorted(await Table(db, "T?").keys()) == ["k", "other"]


def test_full_dump_survives_a_glob_named_hash_and_keys_that_are_not_hashes(
    clean_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    import redis

    r = redis.Redis(port=clean_redis.port, decode_responses=True)
    r.hset("*:x", "f", "v")
    r.hset("PORT_TABLE:Ethernet0", "speed", "100000")
    r.set("PORT_TABLE:bad", "not a hash")
    config = clean_redis.write_database_config(tmp_path / "database_config.json")
    out = swssd("dump", "--db-config", config, "--db", "APPL_DB")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"*": {"x": {"f": "v"}}, "PORT_TABLE": {"Ethernet0": {"speed": "100000"}}}
    (line,) = out.stderr.strip().splitlines()
    assert "PORT_TABLE" in line and "1 key(s) skipped" in line and "PORT_TABLE:bad" in line
