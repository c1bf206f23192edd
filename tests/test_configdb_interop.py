"""swsscommon's ConfigDBConnector / ConfigDBPipeConnector and swssd's on one redis-server: the
same call sequences leave the same Redis contents (keys, fields in HGETALL order, values), return
the same Python values, and each reads what the other wrote as it reads its own writes.

swsscommon runs in a subprocess (SonicDBConfig can be initialized once per process) with the
environment of $SWSSD_SWSSCOMMON_ENV, else ../cpp/env.sh beside the repository when present, else
this process's. Skipped when `swsscommon` cannot be imported there.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from swssd.configdb import ConfigDBConnector
from swssd.embedded_redis import EmbeddedRedis

Call = tuple[str, tuple[Any, ...]]

DRIVER = """
import ast, sys
from swsscommon import swsscommon
request = ast.literal_eval(sys.stdin.read())
swsscommon.SonicDBConfig.initialize(request["db_config"])
db = getattr(swsscommon, request["cls"])()
db.connect(wait_for_init=False)
out = []
for method, args in request["calls"]:
    try:
        out.append(("ok", getattr(db, method)(*args)))
    except Exception as exc:
        out.append(("error", type(exc).__name__))
print(repr(out))
"""

PORTS = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"]


def _env_file() -> Path | None:
    given = os.environ.get("SWSSD_SWSSCOMMON_ENV")
    if given:
        return Path(given)
    beside = Path(__file__).resolve().parents[2] / "cpp" / "env.sh"
    return beside if beside.exists() else None


def _swsscommon_env() -> dict[str, str] | None:
    """This process's environment, plus what the env file exports; None when it cannot be read."""
    env_file = _env_file()
    if env_file is None:
        return dict(os.environ)
    dump = subprocess.run(
        ["bash", "-c", 'set -a; source "$1" >/dev/null && env -0', "bash", str(env_file)],
        capture_output=True,
    )
    if dump.returncode != 0:
        return None
    return dict(item.split("=", 1) for item in dump.stdout.decode().split("\0") if "=" in item)


@pytest.fixture(scope="module")
def swss_env() -> dict[str, str]:
    env = _swsscommon_env()
    if env is None:
        pytest.skip(f"cannot source {_env_file()} for swsscommon's environment")
    probe = subprocess.run(
        [env.get("PYTHON", sys.executable), "-c", "from swsscommon import swsscommon"],
        env=env, capture_output=True, text=True,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"swsscommon's Python binding cannot be imported ({last}); env file: {_env_file()}")
    return env


@pytest.fixture
async def cdb(clean_redis: EmbeddedRedis) -> AsyncIterator[ConfigDBConnector]:
    conn = await ConfigDBConnector.from_url(clean_redis.url)
    yield conn
    await conn.close()


def run_swsscommon(env: dict[str, str], db_config: Path, cls: str, calls: list[Call]) -> list[Any]:
    request = {"db_config": str(db_config), "cls": cls, "calls": calls}
    done = subprocess.run(
        [env.get("PYTHON", sys.executable), "-c", DRIVER],
        input=repr(request), env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


async def run_ours(cdb: ConfigDBConnector, calls: list[Call]) -> list[Any]:
    out: list[Any] = []
    for method, args in calls:
        try:
            out.append(("ok", await getattr(cdb, method)(*args)))
        except Exception as exc:
            out.append(("error", type(exc).__name__))
    return out


def canonical(value: Any) -> Any:
    """Dicts as item lists, so order is compared too."""
    if isinstance(value, dict):
        return [(k, canonical(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return type(value)(canonical(v) for v in value)
    return value


def comparable(calls: list[Call], results: list[Any]) -> list[Any]:
    """get_keys lists in KEYS order, which hangs on the server's hash table history, not on the
    data: sorted. Everything else exactly, order included."""
    out = []
    for (method, _), (status, value) in zip(calls, results):
        if method == "get_keys" and status == "ok":
            value = sorted(value, key=repr)
        out.append((status, canonical(value)))
    return out


async def snapshot(cdb: ConfigDBConnector) -> dict[str, Any]:
    r = cdb.db.redis
    state: dict[str, Any] = {}
    for key in sorted(await r.keys("*")):
        kind = await r.type(key)
        state[key] = list((await r.hgetall(key)).items()) if kind == "hash" else (kind, await r.get(key))
    return state


def reads(*tables: str, entries: tuple[tuple[str, Any], ...] = ()) -> list[Call]:
    calls: list[Call] = [("get_config", ())]
    for table in tables:
        calls += [("get_table", (table,)), ("get_keys", (table,)), ("get_keys", (table, False))]
    calls += [("get_entry", entry) for entry in entries]
    return calls


# name -> (raw Redis setup commands, calls, reads after them, swsscommon classes it holds for)
BOTH = ("ConfigDBConnector", "ConfigDBPipeConnector")
SCENARIOS: dict[str, tuple[list[tuple[str, ...]], list[Call], list[Call], tuple[str, ...]]] = {
    "set_replace": ([], [
        ("set_entry", ("TEST_PORT", "Ethernet111", {"alias": "etp1x"})),
        ("set_entry", ("TEST_PORT", "Ethernet111", {"mtu": "12345"})),
        ("set_entry", ("TEST_PORT", "Ethernet112", {"alias": "etp2x", "mtu": "9100"})),
        ("set_entry", ("TEST_PORT", "Ethernet112", {"speed": "100000", "mtu": "1500"})),
    ], reads("TEST_PORT", entries=(("TEST_PORT", "Ethernet111"), ("test_port", "Ethernet112"))), BOTH),
    "lists_and_field_order": ([], [
        ("set_entry", ("acl_table", "EVERFLOW", {"type": "MIRROR", "ports": PORTS, "policy_desc": "x"})),
        ("mod_entry", ("ACL_TABLE", "EVERFLOW", {"stage": "ingress", "empty": []})),
        ("set_entry", ("ACL_TABLE", "DATAACL", {"ports": ["Ethernet0"], "a@": "1", "a": "2"})),
    ], reads("ACL_TABLE", entries=(("ACL_TABLE", "EVERFLOW"), ("ACL_TABLE", "DATAACL"))), BOTH),
    "null_entries": ([], [
        ("set_entry", ("PORT_TABLE", "Ethernet1", {"alias": "etp1x"})),
        ("set_entry", ("PORT_TABLE", "Ethernet1", {})),
        ("set_entry", ("PORT_TABLE", "Ethernet2", {})),
        ("set_entry", ("PORT_TABLE", "Ethernet2", {"mtu": "9100"})),
        ("mod_entry", ("PORT_TABLE", "Ethernet2", {})),
        ("mod_entry", ("PORT_TABLE", "Ethernet3", {})),
    ], reads("PORT_TABLE", entries=(("PORT_TABLE", "Ethernet1"), ("PORT_TABLE", "Ethernet2"))), BOTH),
    "none_deletes": ([], [
        ("set_entry", ("PORT_TABLE", "Ethernet1", {"alias": "etp1x"})),
        ("set_entry", ("PORT_TABLE", "Ethernet2", {"alias": "etp2x"})),
        ("set_entry", ("ACL_TABLE", "EVERFLOW", {"ports": PORTS})),
        ("set_entry", ("PORT_TABLE", "Ethernet1", None)),
        ("mod_entry", ("ACL_TABLE", "EVERFLOW", None)),
        ("delete_table", ("port_table",)),
        ("delete_table", ("NOTHING",)),
    ], reads("PORT_TABLE", entries=(("PORT_TABLE", "Ethernet1"),)), BOTH),
    "tuple_keys": ([], [
        ("set_entry", ("VLAN_MEMBER", ("Vlan100", "Ethernet0"), {"tagging_mode": "untagged"})),
        ("mod_entry", ("vlan_member", "Vlan100|Ethernet4", {"tagging_mode": "tagged"})),
        ("set_entry", ("VLAN", "Vlan100", {"vlanid": "100"})),
        ("set_entry", ("X", "a||b|", {"f": "v"})),
        ("set_entry", ("X", "with space", {"f g": "v w", "h": ""})),
    ], reads("VLAN_MEMBER", "VLAN", "X", entries=(("VLAN_MEMBER", ("Vlan100", "Ethernet0")),)), BOTH),
    "str_values_and_keys": ([], [
        ("set_entry", ("T", 5, {"enabled": True, "mtu": 9100, "raw": b"ab", "pair": ("a", "b"), "n": None})),
        ("set_entry", ("T", "ratio", {"r": 1.5, "list_of_one": ["x"]})),
        ("set_entry", ("port_é", "x", {"a": "é"})),
    ], reads("T", "PORT_é", entries=(("T", 5), ("t", "ratio"))), BOTH),
    "refused": ([], [
        ("set_entry", ("T", "k", {1: "x"})),
        ("mod_entry", ("T", "k", {"ports": [1, 2]})),
        ("mod_entry", ("T", ("a", 1), {"f": "v"})),
        ("mod_config", ({"A": {"k": {"f": "v"}}, "T": {"k": {2: "x"}}},)),
        ("mod_config", ({"A": {"k": {"f": "v"}}, 3: {"k": {"f": "v"}}},)),
        ("mod_config", ({"A": {"k": {"f": "v"}}, 4: None},)),
    ], reads("T", "A"), BOTH),
    "separator_less_keys": ([("SET", "ItemWithoutSeparator", "item11"), ("SET", "CONFIG_DB_INITIALIZED", "1")], [
        ("set_entry", ("TEST_PORT", "Ethernet222", {"alias": "etp2x"})),
    ], reads("*", "TEST_PORT"), BOTH),
    "mod_config": ([
        ("HSET", "PORT|Ethernet0", "mtu", "9100", "speed", "100000"), ("HSET", "PORT|Ethernet4", "mtu", "9100"),
        ("HSET", "LOOPBACK|Loopback0", "a", "1"), ("HSET", "VLAN|Vlan1", "vlanid", "1"),
    ], [
        ("mod_config", ({
            "port": {"Ethernet0": {"mtu": "1500"}, "Ethernet8": {"lanes": ["1", "2"]}, "Ethernet4": None},
            "VLAN_MEMBER": {("Vlan1", "Ethernet0"): {"tagging_mode": "untagged"}, "Vlan1|Ethernet4": {}},
            "LOOPBACK": None,
            "VLAN": {},
        },)),
    ], reads("PORT", "VLAN_MEMBER", "VLAN", "LOOPBACK"), BOTH),
    "mod_config_large": ([], [
        ("mod_config", ({"PORT_TABLE": {f"Ethernet{i}": {"alias": f"etp{i}x"} for i in range(1, 1001)}},)),
        ("mod_config", ({"PORT_TABLE": {}},)),
        ("mod_config", ({"ACL_TABLE": {"EVERFLOW": {"ports": PORTS}}, "PORT_TABLE": None},)),
    ], reads("PORT_TABLE", "ACL_TABLE"), BOTH),
    # the pipe connector SCANs before EXEC; the plain one HSETs first and KEYS after it
    "mod_config_case_overlap": ([("HSET", "PORT|old", "a", "1")], [
        ("mod_config", ({"port": None, "PORT": {"new": {"b": "2"}}},)),
    ], reads("PORT"), ("ConfigDBPipeConnector",)),
}


@pytest.mark.parametrize("cls", BOTH)
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_same_contents_same_values(
    swss_env: dict[str, str], clean_redis: EmbeddedRedis, cdb: ConfigDBConnector,
    tmp_path: Path, name: str, cls: str,
) -> None:
    setup, calls, after, holds_for = SCENARIOS[name]
    if cls not in holds_for:
        pytest.skip(f"{name}: swssd follows ConfigDBPipeConnector here, not {cls}")
    db_config = clean_redis.write_database_config(tmp_path / "database_config.json")
    everything = calls + after

    async def reset() -> None:
        await cdb.db.redis.flushdb()
        for command in setup:
            await cdb.db.redis.execute_command(*command)

    await reset()
    theirs = run_swsscommon(swss_env, db_config, cls, everything)
    their_state = await snapshot(cdb)
    ours_reading_theirs = await run_ours(cdb, after)

    await reset()
    ours = await run_ours(cdb, everything)
    our_state = await snapshot(cdb)
    theirs_reading_ours = run_swsscommon(swss_env, db_config, cls, after)

    assert our_state == their_state
    assert comparable(everything, ours) == comparable(everything, theirs)
    assert comparable(after, ours_reading_theirs) == comparable(after, theirs[len(calls):])
    assert comparable(after, theirs_reading_ours) == comparable(after, ours[len(calls):])
