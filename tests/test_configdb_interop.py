"""swsscommon's ConfigDBConnector / ConfigDBPipeConnector and swssd's on one redis-server: the
same call sequences leave the same Redis contents (keys, fields in HGETALL order, values), return
the same Python values, and each reads what the other wrote as it reads its own writes.

swsscommon runs in a subprocess (SonicDBConfig can be initialized once per process) with the
environment of $SWSSD_SWSSCOMMON_ENV, else ../cpp/env.sh beside the repository when present, else
this process's. Skipped when `swsscommon` cannot be imported there.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from swssd.channels.configdb import ConfigDBConnector
from swssd.redis.embedded_redis import EmbeddedRedis

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
        pytest.skip(f"compares with sonic-swss-common's Python binding: the env file {_env_file()} "
                    "($SWSSD_SWSSCOMMON_ENV, a shell file exporting the binding's PYTHONPATH and "
                    "LD_LIBRARY_PATH) could not be sourced by bash")
    probe = subprocess.run(
        # the C++ binding itself: swssd's opt-in `swsscommon` package (compat/) has no _swsscommon
        [env.get("PYTHON", sys.executable), "-c", "from swsscommon import swsscommon, _swsscommon"],
        env=env, capture_output=True, text=True,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"compares with sonic-swss-common's Python binding, which cannot be imported ({last}); "
                    "set $SWSSD_SWSSCOMMON_ENV to a shell file exporting the built binding's PYTHONPATH "
                    f"and LD_LIBRARY_PATH (env file used: {_env_file() or 'none'})")
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


# -- listening: swsscommon writes -> swssd listen(), swssd writes -> swsscommon listen() ------


#: swsscommon's ConfigDBConnector (or the pipe one) taking one call a line, answering each
#: with the repr of its result: the test paces its writes.
WRITER = """
import ast, sys
from swsscommon import swsscommon
request = ast.literal_eval(sys.stdin.readline())
swsscommon.SonicDBConfig.initialize(request["db_config"])
db = getattr(swsscommon, request["cls"])()
db.connect(wait_for_init=False)
for line in sys.stdin:
    method, args = ast.literal_eval(line)
    print(repr(getattr(db, method)(*args)), flush=True)
"""

#: swsscommon's own listen(), printing what its handlers get as JSON lines; it never returns.
LISTENER = """
import ast, json, sys
from swsscommon import swsscommon
request = ast.literal_eval(sys.stdin.readline())
swsscommon.SonicDBConfig.initialize(request["db_config"])
db = swsscommon.ConfigDBConnector()
db.connect(wait_for_init=False)
def out(*item):
    print(json.dumps(item), flush=True)
for table, fire in request["tables"]:
    db.subscribe(table, lambda table, key, data: out("event", table, key, data), fire_init_data=fire)
db.listen(init_data_handler=lambda data: out("init", {t: list(rows.items()) for t, rows in data.items()}))
"""

WAIT = 20.0


class SwssProcess:
    """A swsscommon driver in a subprocess: a request line in, then lines both ways."""

    def __init__(self, env: dict[str, str], source: str, request: dict[str, Any], stderr: Path) -> None:
        self.env, self.source, self.request, self.stderr = env, source, request, stderr
        self.lines: list[str] = []
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> SwssProcess:
        with self.stderr.open("wb") as err:
            self.proc = await asyncio.create_subprocess_exec(
                self.env.get("PYTHON", sys.executable), "-c", self.source,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err, env=self.env,
            )
        self._reader = asyncio.ensure_future(self._read())
        self.send(repr(self.request))
        return self

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.lines.append(line.decode().rstrip("\n"))

    def send(self, line: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")

    async def until(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        """Wait for `predicate`; fail with the subprocess's stderr when it died or time ran out."""
        assert self.proc is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            if self.proc.returncode is not None or loop.time() > deadline:
                raise AssertionError(f"swsscommon driver: rc={self.proc.returncode}\n{self.stderr.read_text()}")
            await asyncio.sleep(0.01)

    async def call(self, method: str, *args: Any) -> Any:
        """One call of the WRITER driver, answered before it returns."""
        answered = len(self.lines)
        self.send(repr((method, args)))
        await self.until(lambda: len(self.lines) > answered)
        return ast.literal_eval(self.lines[answered])

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None and self._reader is not None
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()
        await self._reader


@pytest.fixture
async def keyspace_events(cdb: ConfigDBConnector) -> AsyncIterator[None]:
    """notify-keyspace-events AKE, as SONiC's redis.conf has it, for the test only."""
    before = (await cdb.db.redis.config_get("notify-keyspace-events"))["notify-keyspace-events"]
    await cdb.db.redis.config_set("notify-keyspace-events", "AKE")
    yield
    await cdb.db.redis.config_set("notify-keyspace-events", before)


def as_json(value: Any) -> Any:
    """What a value looks like after JSON (tuple keys as lists), to compare with the listener's lines."""
    return json.loads(json.dumps(value))


def collapse(sequence: list[Any]) -> list[Any]:
    """Consecutive repeats dropped: swsscommon reads an entry once per keyspace event."""
    return [x for i, x in enumerate(sequence) if i == 0 or x != sequence[i - 1]]


def is_subsequence(wanted: list[Any], got: list[Any]) -> bool:
    it = iter(got)
    return all(any(x == y for y in it) for x in wanted)


class Fold:
    """listen()'s handlers: every call, and the table as the calls leave it (keys deserialized)."""

    def __init__(self, cdb: ConfigDBConnector) -> None:
        self.cdb = cdb
        self.calls: list[tuple[str, Any, Any]] = []
        self.init: Any = None
        self.view: dict[str, dict[Any, Any]] = {}

    def handler(self, table: str, key: Any, data: Any) -> None:
        self.calls.append((table, key, data))
        key = self.cdb.deserialize_key(key) if isinstance(key, str) else key
        if data is None:
            self.view.setdefault(table, {}).pop(key, None)
        else:
            self.view.setdefault(table, {})[key] = data

    def init_handler(self, data: Any) -> None:
        self.init = data
        for table, rows in data.items():
            self.view.setdefault(table, {}).update(rows)

    def per_key(self, changes_from: int = 0) -> dict[tuple[str, Any], list[Any]]:
        out: dict[tuple[str, Any], list[Any]] = {}
        for table, key, data in self.calls[changes_from:]:
            key = self.cdb.deserialize_key(key) if isinstance(key, str) else key
            out.setdefault((table, key), []).append(data)
        return out


LISTENED = ("PORT", "VLAN_MEMBER", "ACL_TABLE")
SETUP_CALLS: list[Call] = [
    ("set_entry", ("PORT", "Ethernet4", {"alias": "etp2", "lanes": ["4", "5"]})),
    ("set_entry", ("PORT", "Ethernet0", {"alias": "etp1"})),
    ("set_entry", ("VLAN_MEMBER", ("Vlan1", "Ethernet0"), {"tagging_mode": "untagged"})),
    ("set_entry", ("ACL_TABLE", "EVERFLOW", {})),
    ("set_entry", ("VLAN", "Vlan1", {"vlanid": "1"})),  # not listened to
]
STEP_CALLS: list[Call] = [
    ("mod_entry", ("PORT", "Ethernet0", {"mtu": "9100", "lanes": ["0", "1"]})),
    ("set_entry", ("PORT", "Ethernet0", {"mtu": "1500"})),  # replaced: alias and lanes go
    ("set_entry", ("PORT", "Ethernet8", {})),
    ("mod_entry", ("PORT", "Ethernet8", {"speed": "1000"})),
    ("set_entry", ("VLAN_MEMBER", ("Vlan1", "Ethernet4"), {"tagging_mode": "tagged"})),
    ("mod_entry", ("ACL_TABLE", "EVERFLOW", {"ports": PORTS, "stage": "ingress"})),
    ("mod_config", ({
        "PORT": {"Ethernet12": {"mtu": "9100"}, "Ethernet0": None, "Ethernet4": {"mtu": "9100"}},
        "VLAN_MEMBER": {"Vlan1|Ethernet8": {"tagging_mode": "tagged"}, ("Vlan1", "Ethernet0"): None},
        "VLAN": {"Vlan2": {"vlanid": "2"}},
    },)),
    ("set_entry", ("PORT", "Ethernet8", None)),
    ("delete_table", ("VLAN_MEMBER",)),
    ("mod_config", ({"ACL_TABLE": None, "PORT": {"Ethernet0": {"alias": "etp1"}}},)),
    ("set_entry", ("PORT", "Ethernet0", {"alias": "etp1", "mtu": "9100"})),
]


@pytest.mark.parametrize("cls", BOTH)
async def test_swsscommon_writes_swssd_listens(
    swss_env: dict[str, str], clean_redis: EmbeddedRedis, cdb: ConfigDBConnector,
    keyspace_events: None, tmp_path: Path, cls: str,
) -> None:
    """swsscommon's ConfigDBConnector writes, one call at a time, while swssd listens: the initial
    data is swsscommon's get_table (fired in its order, or handed to the init handler), every
    state a call leaves is delivered, in order per key, and the end is swsscommon's get_config."""
    db_config = clean_redis.write_database_config(tmp_path / "database_config.json")
    request = {"db_config": str(db_config), "cls": cls}
    async with SwssProcess(swss_env, WRITER, request, tmp_path / "stderr") as writer:
        for method, args in SETUP_CALLS:
            await writer.call(method, *args)
        fold = Fold(cdb)
        cdb.subscribe("PORT", fold.handler, fire_init_data=True)
        cdb.subscribe("VLAN_MEMBER", fold.handler)
        cdb.subscribe("ACL_TABLE", fold.handler)
        task = asyncio.ensure_future(cdb.listen(fold.init_handler))
        await writer.until(lambda: fold.init is not None or task.done())
        assert canonical(fold.calls) == canonical(
            [("PORT", key, entry) for key, entry in (await writer.call("get_table", "PORT")).items()]
        )
        assert canonical(fold.init) == canonical(
            {t: await writer.call("get_table", t) for t in ("VLAN_MEMBER", "ACL_TABLE")}
        )
        initial_calls = len(fold.calls)

        wanted: dict[tuple[str, Any], list[Any]] = {}
        for method, args in STEP_CALLS:
            before = {t: dict(rows) for t, rows in fold.view.items()}
            await writer.call(method, *args)
            config = await writer.call("get_config")
            expected = {t: config.get(t, {}) for t in LISTENED}
            await writer.until(lambda want=expected: {t: fold.view.get(t, {}) for t in LISTENED} == want)
            for table in LISTENED:
                for key in set(before.get(table, {})) | set(expected[table]):
                    after = expected[table].get(key)
                    if before.get(table, {}).get(key) != after:
                        wanted.setdefault((table, key), []).append(after)
        cdb.stop()
        await asyncio.wait_for(task, WAIT)

    got = fold.per_key(initial_calls)
    assert set(got) == set(wanted)
    for key, states in wanted.items():
        # the plain connector's set_entry is HSET then HDEL: the state between may show too
        assert is_subsequence(states, collapse(got[key])), (key, states, got[key])
        if cls == "ConfigDBPipeConnector":
            assert collapse(got[key]) == states, (key, states, got[key])


@pytest.mark.parametrize("cls", BOTH)
async def test_swsscommon_burst_swssd_listens(
    swss_env: dict[str, str], clean_redis: EmbeddedRedis, cdb: ConfigDBConnector,
    keyspace_events: None, tmp_path: Path, cls: str,
) -> None:
    """1,500 swsscommon calls sent without pacing: every write sets field v to its sequence
    number, so each key's v only grows; what swssd's handlers get per key keeps that order, and
    they end at swsscommon's get_config."""
    rng = random.Random(1)
    keys: list[Any] = [f"Ethernet{i}" for i in range(40)] + [("Vlan1", f"Ethernet{i}") for i in range(10)]
    calls: list[Call] = []
    for n in range(1500):
        key = rng.choice(keys)
        r = rng.random()
        if r < 0.3:
            calls.append(("set_entry", ("PORT", key, {"v": str(n), "lanes": [str(n), "x"]})))
        elif r < 0.6:
            calls.append(("mod_entry", ("PORT", key, {"v": str(n)})))
        elif r < 0.8:
            calls.append(("mod_config", ({"PORT": {key: {"v": str(n)}, rng.choice(keys): None}},)))
        elif r < 0.995:
            calls.append(("set_entry", ("PORT", key, None)))
        else:
            calls.append(("delete_table", ("PORT",)))
    db_config = clean_redis.write_database_config(tmp_path / "database_config.json")
    fold = Fold(cdb)
    cdb.subscribe("PORT", fold.handler)
    task = asyncio.ensure_future(cdb.listen(fold.init_handler))
    async with SwssProcess(swss_env, WRITER, {"db_config": str(db_config), "cls": cls}, tmp_path / "stderr") as writer:
        await writer.until(lambda: fold.init is not None or task.done())
        for call in calls:
            writer.send(repr(call))
        await writer.until(lambda: len(writer.lines) == len(calls))
        final = (await writer.call("get_config")).get("PORT", {})
        await writer.until(lambda: fold.view.get("PORT", {}) == final)
    cdb.stop()
    await asyncio.wait_for(task, WAIT)
    for key, datas in fold.per_key().items():
        versions = [int(data["v"]) for data in datas if data is not None]
        assert versions == sorted(versions), (key, versions)


SWSSD_STEPS: list[Call] = [
    ("mod_entry", ("PORT", "Ethernet0", {"mtu": "9100", "lanes": ["0", "1"]})),
    ("set_entry", ("PORT", "Ethernet0", {"mtu": "1500"})),
    ("set_entry", ("PORT", "Ethernet8", {})),
    ("mod_entry", ("PORT", "Ethernet8", {"speed": "1000"})),
    ("set_entry", ("VLAN_MEMBER", ("Vlan1", "Ethernet4"), {"tagging_mode": "tagged"})),
    ("mod_config", ({
        "PORT": {"Ethernet12": {"mtu": "9100"}, "Ethernet0": None},
        "VLAN_MEMBER": {("Vlan1", "Ethernet0"): None, "Vlan1|Ethernet8": {"tagging_mode": "tagged"}},
        "ACL_TABLE": {"EVERFLOW": {"ports": PORTS}},
    },)),
    ("set_entry", ("PORT", "Ethernet8", None)),
    ("delete_table", ("VLAN_MEMBER",)),
    ("mod_config", ({"ACL_TABLE": None, "PORT": {"Ethernet0": {"alias": "etp1"}}},)),
]


def fold_lines(cdb: ConfigDBConnector, lines: list[str]) -> Fold:
    """The LISTENER driver's lines folded as Fold folds swssd's calls (JSON lists back to tuples)."""
    fold = Fold(cdb)
    for line in lines:
        kind, *rest = json.loads(line)
        if kind == "init":
            fold.init_handler({t: {_key(k): d for k, d in rows} for t, rows in rest[0].items()})
        else:
            table, key, data = rest
            fold.handler(table, _key(key), data)
    return fold


def _key(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


async def test_swssd_writes_swsscommon_listens(
    swss_env: dict[str, str], clean_redis: EmbeddedRedis, cdb: ConfigDBConnector,
    keyspace_events: None, tmp_path: Path,
) -> None:
    """swssd writes, one call at a time, while swsscommon's own listen() (in a subprocess) and
    swssd's listen() follow the same tables the same way: the same initial calls in the same
    order, the same init data, and per key the same changes (swsscommon may repeat one: it
    reads an entry once per keyspace event), keys as row strings in both."""
    for method, args in SETUP_CALLS:
        await getattr(cdb, method)(*args)
    db_config = clean_redis.write_database_config(tmp_path / "database_config.json")
    subscribed = [("PORT", True), ("VLAN_MEMBER", False), ("ACL_TABLE", True)]
    request = {"db_config": str(db_config), "tables": subscribed}
    listener = await ConfigDBConnector.from_url(clean_redis.url)
    ours = Fold(listener)
    for table, fire in subscribed:
        listener.subscribe(table, ours.handler, fire_init_data=fire)
    task = asyncio.ensure_future(listener.listen(ours.init_handler))
    try:
        async with SwssProcess(swss_env, LISTENER, request, tmp_path / "stderr") as theirs:
            await theirs.until(lambda: any(line.startswith('["init"') for line in theirs.lines))
            await theirs.until(lambda: ours.init is not None or task.done())
            assert [json.loads(line) for line in theirs.lines] == as_json(
                [["event", *call] for call in ours.calls]
                + [["init", {t: list(rows.items()) for t, rows in ours.init.items()}]]
            )
            initial_calls, initial_lines = len(ours.calls), len(theirs.lines)

            for method, args in SWSSD_STEPS:
                await getattr(cdb, method)(*args)
                expected = {t: await cdb.get_table(t) for t, _ in subscribed}
                await theirs.until(lambda want=expected: {t: ours.view.get(t, {}) for t, _ in subscribed} == want)
                await theirs.until(
                    lambda want=expected: {
                        t: fold_lines(cdb, theirs.lines).view.get(t, {}) for t, _ in subscribed
                    } == want
                )
            their_changes = [json.loads(line)[1:] for line in theirs.lines[initial_lines:]]
    finally:
        listener.stop()
        await asyncio.wait_for(task, WAIT)
        await listener.close()

    assert all(isinstance(key, str) for _, key, _ in ours.calls[initial_calls:])
    assert all(isinstance(key, str) for _, key, _ in their_changes)
    theirs_per_key: dict[tuple[str, Any], list[Any]] = {}
    for table, key, data in their_changes:
        theirs_per_key.setdefault((table, cdb.deserialize_key(key)), []).append(data)
    assert {k: collapse(v) for k, v in theirs_per_key.items()} == {
        k: collapse(v) for k, v in ours.per_key(initial_calls).items()
    }
