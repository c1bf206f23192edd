"""Namespaces (multi-ASIC): database_global.json and its INCLUDES, connecting by (database, namespace)
to real redis-servers, and `swssd produce/dump --namespace`. Ports the checks of the C++ library's
tests/redis_multi_ns_ut.cpp and the database_global.json part of tests/main.cpp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from swssd import (
    ConfigError,
    ConsumerStateTable,
    DBConnector,
    ProducerStateTable,
    SonicDBConfig,
    SonicDBGlobalConfig,
    Table,
    UnknownDatabaseError,
    UnknownNamespaceError,
)
from swssd.redis.dbconfig import ENV_VAR, GLOBAL_DEFAULT_PATH, GLOBAL_ENV_VAR, SonicDBKey
from swssd.redis.embedded_redis import EmbeddedRedis, free_port

DATABASES = {
    "APPL_DB": (0, ":"), "ASIC_DB": (1, ":"), "COUNTERS_DB": (2, ":"), "LOGLEVEL_DB": (3, ":"),
    "CONFIG_DB": (4, "|"), "PFC_WD_DB": (5, ":"), "FLEX_COUNTER_DB": (5, ":"), "STATE_DB": (6, "|"),
    "SNMP_OVERLAY_DB": (7, "|"), "STATE_DB2": (13, "|"),
}


def db_config(port: int, unix_socket: str | None, databases: dict[str, tuple[int, str]] = DATABASES) -> dict[str, Any]:
    """One namespace's database_config.json, SONiC's schema."""
    instance: dict[str, Any] = {"hostname": "127.0.0.1", "port": port}
    if unix_socket:
        instance["unix_socket_path"] = unix_socket
    return {
        "INSTANCES": {"redis": instance},
        "DATABASES": {n: {"id": i, "separator": s, "instance": "redis"} for n, (i, s) in databases.items()},
        "VERSION": "1.0",
    }


def write_json(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=4))
    return path


def sonic_layout(root: Path, configs: dict[str, dict[str, Any]], extra: list[dict[str, Any]] | None = None) -> Path:
    """SONiC's multi-ASIC layout under `root` (its /var/run): redis/sonic-db/database_global.json
    including ../../redis/..., ../../redis0/..., ../../redis1/... per namespace ("" is the host's)."""
    includes = []
    for namespace, doc in configs.items():
        run_dir = "redis" + namespace.removeprefix("asic")
        write_json(root / run_dir / "sonic-db" / "database_config.json", doc)
        entry = {"include": f"../../{run_dir}/sonic-db/database_config.json"}
        if namespace:
            entry["namespace"] = namespace
        includes.append(entry)
    return write_json(root / "redis" / "sonic-db" / "database_global.json",
                      {"INCLUDES": includes + (extra or []), "VERSION": "1.0"})


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """Three namespaces on made-up addresses (one TCP-only), plus a DPU container in the host's."""
    root = tmp_path / "var" / "run"
    dpu = {"DPU_APPL_DB": (15, ":"), "DPU_STATE_DB": (17, "|")}
    write_json(root / "redis-dpu0" / "sonic-db" / "database_config.json", db_config(6390, "/run/dpu0.sock", dpu))
    return sonic_layout(
        root,
        {"": db_config(6379, "/var/run/redis/redis.sock"),
         "asic0": db_config(6380, "/var/run/redis0/redis.sock"),
         "asic1": db_config(6381, None, {**DATABASES, "ASIC1_ONLY_DB": (9, ":")})},
        [{"container_name": "dpu0", "include": "../../redis-dpu0/sonic-db/database_config.json"}],
    )


# -- database_global.json -------------------------------------------------------------------


def test_every_database_of_every_include_resolves(layout: Path) -> None:
    """redis_multi_ns_ut.cpp multi_ns_test: each include read on its own agrees with the lookups."""
    cfg = SonicDBGlobalConfig.load(layout)
    assert cfg.path == str(layout) and cfg.version == "1.0"
    expected_keys = []
    for entry in json.loads(layout.read_text())["INCLUDES"]:
        key = SonicDBKey(entry.get("namespace", ""), entry.get("container_name", ""))
        expected_keys.append(key)
        doc = json.loads((layout.parent / entry["include"]).read_text())
        assert cfg.db_names(*key) == list(doc["DATABASES"])
        for name, info in doc["DATABASES"].items():
            inst = doc["INSTANCES"][info["instance"]]
            assert cfg.database(name, *key).instance == info["instance"]
            assert cfg.db_id(name, *key) == info["id"]
            assert cfg.separator(name, *key) == info["separator"]
            got = cfg.instance_of(name, *key)
            assert (got.hostname, got.port, got.unix_socket_path) == (
                inst["hostname"], inst["port"], inst.get("unix_socket_path"))
    assert cfg.namespaces() == ["", "asic0", "asic1"]
    assert sorted(cfg.keys()) == sorted(expected_keys)
    assert cfg.instance_of("APPL_DB", "asic0").port == 6380
    assert cfg.instance_of("APPL_DB").unix_socket_path == "/var/run/redis/redis.sock"
    assert cfg.db_id("ASIC1_ONLY_DB", "asic1") == 9
    assert cfg.db_id("DPU_STATE_DB", container_name="dpu0") == 17
    assert cfg.config("asic1").path == str(layout.parent / "../../redis1/sonic-db/database_config.json")


def test_invalid_database_name_in_a_namespace(layout: Path) -> None:
    """multi_ns_test: an unknown database name fails every lookup, in any namespace."""
    cfg = SonicDBGlobalConfig.load(layout)
    for namespace in ("", "asic0"):
        for lookup in (cfg.database, cfg.db_id, cfg.separator, cfg.instance_of):
            with pytest.raises(UnknownDatabaseError) as err:
                lookup("INVALID_DBNAME", namespace)
            assert "APPL_DB" in str(err.value)
    with pytest.raises(UnknownDatabaseError) as err:
        cfg.db_id("ASIC1_ONLY_DB", "asic0")
    assert "redis0/sonic-db/database_config.json" in str(err.value)


def test_unknown_namespace_lists_the_known_ones(layout: Path) -> None:
    """main.cpp: getDbId(APPL_DB, "invalid") fails; ours says which namespaces there are."""
    cfg = SonicDBGlobalConfig.load(layout)
    for lookup in (cfg.config, lambda ns: cfg.db_id("APPL_DB", ns), lambda ns: cfg.db_names(ns)):
        with pytest.raises(UnknownNamespaceError) as err:
            lookup("invalid")
        message = str(err.value)
        assert message.startswith("unknown namespace 'invalid' in " + str(layout))
        assert "'' (default), 'asic0', 'asic1', '' (default) with container 'dpu0'" in message
        assert isinstance(err.value, LookupError) and err.value.namespace == "invalid"
    with pytest.raises(UnknownNamespaceError) as err:
        cfg.config("asic0", "dpu0")
    assert "unknown namespace 'asic0' with container 'dpu0'" in str(err.value)


def test_relative_includes_come_from_the_global_file_directory(layout: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert SonicDBGlobalConfig.load(layout).instance_of("APPL_DB", "asic0").port == 6380
    # a relative path to the global file: its directory is relative to the working directory
    monkeypatch.chdir(layout.parent.parent)
    assert SonicDBGlobalConfig.load("sonic-db/database_global.json").instance_of("APPL_DB", "asic1").port == 6381
    monkeypatch.chdir(layout.parent)
    assert SonicDBGlobalConfig.load("database_global.json").namespaces() == ["", "asic0", "asic1"]


def test_dot_dot_follows_a_symlinked_directory_as_the_cpp_library_does(tmp_path: Path) -> None:
    """C++ appends the include to the directory name and lets the kernel resolve '..': through a
    symlinked directory that is the link target's parent, not the link's."""
    real = tmp_path / "real" / "a" / "sonic-db"
    write_json(real.parent / "ns.json", db_config(7001, None))
    write_json(real / "database_global.json", {"INCLUDES": [{"namespace": "asic0", "include": "../ns.json"}]})
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    write_json(tmp_path / "ns.json", db_config(7002, None))  # where a normalised path would point
    loaded = SonicDBGlobalConfig.load(tmp_path / "link" / "database_global.json")
    assert loaded.instance_of("APPL_DB", "asic0").port == 7001


def test_absolute_include(tmp_path: Path) -> None:
    absolute = write_json(tmp_path / "abs" / "database_config.json", db_config(7003, None))
    path = write_json(
        tmp_path / "g" / "database_global.json", {"INCLUDES": [{"namespace": "asic0", "include": str(absolute)}]}
    )
    assert SonicDBGlobalConfig.load(path).instance_of("APPL_DB", "asic0").port == 7003


def test_env_var_and_default_path(layout: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert GLOBAL_DEFAULT_PATH == "/var/run/redis/sonic-db/database_global.json"
    monkeypatch.setenv(GLOBAL_ENV_VAR, str(layout))
    assert SonicDBGlobalConfig.load().path == str(layout)
    other = sonic_layout(tmp_path / "other", {"asic0": db_config(7004, None)})
    assert SonicDBGlobalConfig.load(other).namespaces() == ["asic0"], "an explicit path wins"
    monkeypatch.delenv(GLOBAL_ENV_VAR)
    if Path(GLOBAL_DEFAULT_PATH).exists():
        pytest.skip("a real SONiC database_global.json is installed here")
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load()
    assert GLOBAL_DEFAULT_PATH in str(err.value)


def test_missing_include_names_the_global_file_and_the_index(layout: Path) -> None:
    (layout.parent.parent.parent / "redis1" / "sonic-db" / "database_config.json").unlink()
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load(layout)
    assert err.value.path == str(layout)
    assert err.value.field == "INCLUDES.2.include"
    message = str(err.value)
    assert "../../redis1/sonic-db/database_config.json" in message and "No such file" in message


def test_ignore_nonexistent_skips_missing_includes(tmp_path: Path) -> None:
    """main.cpp with database_global_with_invalid_include.json: the missing dpu1 include is skipped."""
    write_json(tmp_path / "database_config.json", db_config(6379, None))
    write_json(tmp_path / "dpu0.json", db_config(6390, None))
    write_json(tmp_path / "dpu2.json", db_config(6392, None))
    path = write_json(tmp_path / "sonic-db" / "database_global.json", {"INCLUDES": [
        {"include": "../database_config.json"},
        {"container_name": "dpu0", "include": "../dpu0.json"},
        {"container_name": "dpu1", "include": "../non_existent.json"},
        {"container_name": "dpu2", "include": "../dpu2.json"},
    ], "VERSION": "1.0"})
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load(path)
    assert err.value.field == "INCLUDES.2.include"
    cfg = SonicDBGlobalConfig.load(path, ignore_nonexistent=True)
    # SonicDBGlobalConfig.keys() is its own method: iterating the pydantic model would give its fields.
    assert sorted(k.container_name for k in cfg.keys()) == ["", "dpu0", "dpu2"]  # noqa: SIM118
    assert cfg.namespaces() == [""]
    assert cfg.instance_of("APPL_DB", "", "dpu2").port == 6392


def test_unreadable_include_names_the_global_file(layout: Path) -> None:
    include = layout.parent.parent.parent / "redis0" / "sonic-db" / "database_config.json"
    include.unlink()
    include.mkdir()  # a directory cannot be read, even by root
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load(layout)
    assert (err.value.path, err.value.field) == (str(layout), "INCLUDES.1.include")


def test_bad_include_content_names_its_file_field_and_the_global_file(layout: Path) -> None:
    include = layout.parent.parent.parent / "redis0" / "sonic-db" / "database_config.json"
    doc = json.loads(include.read_text())
    doc["DATABASES"]["STATE_DB"]["separator"] = "/"
    include.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load(layout)
    assert err.value.path.endswith("redis0/sonic-db/database_config.json")
    assert err.value.field == "DATABASES.STATE_DB.separator"
    assert f"{layout} INCLUDES.1" in str(err.value)
    include.write_text("{")
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load(layout)
    assert (err.value.path, err.value.field) == (str(layout), "INCLUDES.1.include")
    assert "not valid JSON" in str(err.value)


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"VERSION": "1.0"}, "INCLUDES"),
        ({"INCLUDES": {"include": "x.json"}}, "INCLUDES"),
        ({"INCLUDES": [{"namespace": "asic0"}]}, "INCLUDES.0.include"),
        ({"INCLUDES": [{"include": "a.json", "namespace": 0}]}, "INCLUDES.0.namespace"),
        ({"INCLUDES": [{"include": "a.json", "container_name": ["dpu0"]}]}, "INCLUDES.0.container_name"),
    ],
)
def test_bad_global_file_names_the_field(tmp_path: Path, doc: dict[str, Any], field: str) -> None:
    path = write_json(tmp_path / "database_global.json", doc)
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load(path)
    assert (err.value.path, err.value.field) == (str(path), field)
    assert str(path) in str(err.value) and field in str(err.value)


@pytest.mark.parametrize("text", ["{", "", "[1]"])
def test_malformed_global_file_names_the_file(tmp_path: Path, text: str) -> None:
    path = write_json(tmp_path / "database_global.json", text)
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load(path)
    assert str(path) in str(err.value)


def test_missing_global_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        SonicDBGlobalConfig.load(tmp_path / "database_global.json")
    assert str(tmp_path / "database_global.json") in str(err.value) and "cannot read" in str(err.value)


def test_null_and_empty_namespace_are_the_default_and_unknown_keys_are_accepted(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", db_config(7010, None))
    write_json(tmp_path / "b.json", db_config(7011, None))
    path = write_json(tmp_path / "database_global.json", {
        "INCLUDES": [
            {"include": "a.json", "namespace": None, "container_name": None, "database_type": "local"},
            {"include": "b.json", "namespace": "", "container_name": ""},
        ],
        "VERSION": "1.0",
        "FUTURE_KEY": {"anything": True},
    })
    cfg = SonicDBGlobalConfig.load(path)
    assert cfg.keys() == [SonicDBKey("", "")]
    assert cfg.instance_of("APPL_DB").port == 7011, "a later include for the same namespace wins, as in C++"


def test_from_dict_resolves_includes_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_json(tmp_path / "asic0.json", db_config(7020, None))
    monkeypatch.chdir(tmp_path)
    cfg = SonicDBGlobalConfig.from_dict({"INCLUDES": [{"include": "asic0.json", "namespace": "asic0"}]})
    assert cfg.path is None and cfg.instance_of("APPL_DB", "asic0").port == 7020
    with pytest.raises(UnknownNamespaceError) as err:
        cfg.config("")
    assert "known namespaces: 'asic0'" in str(err.value)


# -- connecting by (database, namespace) to real redis-servers -------------------------------


@pytest.fixture(scope="module")
def asic_servers() -> Iterator[dict[str, EmbeddedRedis]]:
    """Two more real redis-servers, one per ASIC namespace."""
    with EmbeddedRedis() as asic0, EmbeddedRedis() as asic1:
        yield {"asic0": asic0, "asic1": asic1}


@pytest.fixture
def servers(clean_redis: EmbeddedRedis, asic_servers: dict[str, EmbeddedRedis]) -> dict[str, EmbeddedRedis]:
    """Namespace -> its emptied server; "" (the host's) is the session server."""
    for server in asic_servers.values():
        with redis.Redis(port=server.port) as raw:
            raw.flushall()
            raw.script_flush()
    return {"": clean_redis, **asic_servers}


@pytest.fixture
def live_layout(servers: dict[str, EmbeddedRedis], tmp_path: Path) -> Path:
    """database_global.json for the real servers: the host's and asic1 by unix socket, asic0 by TCP."""
    return sonic_layout(tmp_path / "var" / "run", {
        "": db_config(servers[""].port, servers[""].unix_socket),
        "asic0": db_config(servers["asic0"].port, None),
        "asic1": db_config(servers["asic1"].port, servers["asic1"].unix_socket),
    })


def raw_client(server: EmbeddedRedis, db: int) -> redis.Redis:
    return redis.Redis(port=server.port, db=db, decode_responses=True)


async def test_each_namespace_writes_to_its_own_server(servers: dict[str, EmbeddedRedis], live_layout: Path) -> None:
    cfg = SonicDBGlobalConfig.load(live_layout)
    for namespace in ("", "asic0", "asic1"):
        async with await DBConnector.connect("STATE_DB", cfg, namespace=namespace) as db:
            assert (db.namespace, db.db_id, db.separator, db.name) == (namespace, 6, "|", "STATE_DB")
            assert f"namespace={namespace!r}" in repr(db)
            await Table(db, "NS_TABLE").set("k", [("written_in", namespace or "host")])
    async with await DBConnector.connect("STATE_DB", cfg, namespace="asic0") as db:
        assert db.address == f"127.0.0.1:{servers['asic0'].port}"
    async with await DBConnector.connect("STATE_DB", cfg, namespace="asic1") as db:
        assert db.address == f"unix:{servers['asic1'].unix_socket}"
    for namespace, server in servers.items():
        with raw_client(server, 6) as raw:
            assert raw.keys("*") == ["NS_TABLE|k"]
            assert raw.hgetall("NS_TABLE|k") == {"written_in": namespace or "host"}


async def test_table_in_a_namespace(servers: dict[str, EmbeddedRedis], live_layout: Path) -> None:
    """redis_multi_ns_ut.cpp TableNetnsTest on STATE_DB2 of asic0."""
    async with await DBConnector.connect("STATE_DB2", live_layout, namespace="asic0") as db:
        t = Table(db, "TABLE_NS_TEST")
        values = [(f"field_{i}", str(i)) for i in range(1, 4)]
        await t.set("a", values)
        await t.set("b", values)
        assert sorted(await t.keys()) == ["a", "b"]
        assert await t.dump() == {"a": dict(values), "b": dict(values)}
        await t.delete("a")
        assert await t.get("a") is None
        assert await t.get("b") == values
        await t.delete("b")
        assert await t.dump() == {}
        await t.hset("k", "f1", "v1")
        await t.hset("k", "f2", "v2")
        await t.hset("k", "", "")
        assert (await t.hget("k", "f1"), await t.hget("k", "f2"), await t.hget("k", "")) == ("v1", "v2", "")
        assert await t.hget("k", "e") is None
    with raw_client(servers["asic0"], 13) as raw:
        assert raw.keys("*") == ["TABLE_NS_TEST|k"]
    for namespace in ("", "asic1"):
        with raw_client(servers[namespace], 13) as raw:
            assert raw.dbsize() == 0


async def test_state_channel_stays_in_its_namespace(live_layout: Path) -> None:
    cfg = SonicDBGlobalConfig.load(live_layout)
    async with await DBConnector.connect("APPL_DB", cfg, namespace="asic0") as asic0, \
            await DBConnector.connect("APPL_DB", cfg, namespace="asic1") as asic1:
        await ProducerStateTable(asic0, "PORT_TABLE").set("Ethernet0", [("speed", "100000")])
        assert await ConsumerStateTable(asic1, "PORT_TABLE").pops() == []
        popped = await ConsumerStateTable(asic0, "PORT_TABLE").pops()
        assert [(k.key, k.op, k.fvs) for k in popped] == [("Ethernet0", "SET", [("speed", "100000")])]


async def test_what_config_a_namespace_is_resolved_through(servers: dict[str, EmbeddedRedis], live_layout: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    host_config = live_layout.parent.parent / "sonic-db" / "database_config.json"
    # the path of database_global.json, and $SWSSD_DB_GLOBAL_CONFIG without one
    async with await DBConnector.connect("APPL_DB", str(live_layout), namespace="asic1") as db:
        assert db.address == f"unix:{servers['asic1'].unix_socket}"
    monkeypatch.setenv(GLOBAL_ENV_VAR, str(live_layout))
    async with await DBConnector.connect("APPL_DB", namespace="asic0") as db:
        assert db.address == f"127.0.0.1:{servers['asic0'].port}"
    # no namespace (None or ""): database_config.json exactly as before, or the global file's default
    for namespace in (None, ""):
        async with await DBConnector.connect("APPL_DB", host_config, namespace=namespace) as db:
            assert (db.namespace, db.address) == ("", f"unix:{servers[''].unix_socket}")
    async with await DBConnector.connect("APPL_DB", SonicDBGlobalConfig.load(live_layout)) as db:
        assert (db.namespace, db.address) == ("", f"unix:{servers[''].unix_socket}")
    # one namespace's database_config.json cannot place another namespace
    with pytest.raises(ConfigError) as err:
        await DBConnector.connect("APPL_DB", SonicDBConfig.load(host_config), namespace="asic0")
    assert str(host_config) in str(err.value) and "database_global.json" in str(err.value)
    with pytest.raises(UnknownNamespaceError) as unknown:
        await DBConnector.connect("APPL_DB", live_layout, namespace="asic7")
    assert "'asic0', 'asic1'" in str(unknown.value)


# -- swssd produce / dump --namespace --------------------------------------------------------


def swssd(*args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in (ENV_VAR, GLOBAL_ENV_VAR)}
    return subprocess.run([sys.executable, "-m", "swssd.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=60, env={**clean, **env})


def ok(*args: str | Path, **env: str) -> str:
    out = swssd(*args, **env)
    assert out.returncode == 0, out.stderr
    return out.stdout


async def test_cli_produce_and_dump_in_a_namespace(servers: dict[str, EmbeddedRedis], live_layout: Path) -> None:
    out = ok("produce", "--db-global-config", live_layout, "--namespace", "asic0", "--table", "PORT_TABLE",
             "set", "Ethernet0", "speed=100000", "mtu=9100")
    assert out.strip() == "produced 1 operation(s) to APPL_DB in namespace asic0"
    ok("produce", "-n", "asic1", "--db", "CONFIG_DB", "--table", "PORT", "set", "Ethernet8", "admin_status=up",
       SWSSD_DB_GLOBAL_CONFIG=str(live_layout))
    async with await DBConnector.connect("APPL_DB", live_layout, namespace="asic0") as db:
        await ConsumerStateTable(db, "PORT_TABLE").pops()
    async with await DBConnector.connect("CONFIG_DB", live_layout, namespace="asic1") as db:
        await ConsumerStateTable(db, "PORT").pops()

    def dump(*args: str) -> Any:
        return json.loads(ok("dump", "--db-global-config", live_layout, *args))

    assert dump("--namespace", "asic0") == {"PORT_TABLE": {"Ethernet0": {"mtu": "9100", "speed": "100000"}}}
    assert dump("--namespace", "asic1", "--db", "CONFIG_DB") == {"PORT": {"Ethernet8": {"admin_status": "up"}}}
    assert dump("--namespace", "asic1") == {}
    assert dump() == {}, "without --namespace: the host's namespace of database_global.json"
    host_config = live_layout.parent.parent / "sonic-db" / "database_config.json"
    assert json.loads(ok("dump", "--db-config", host_config)) == {}
    with raw_client(servers["asic1"], 4) as raw:
        assert raw.hgetall("PORT|Ethernet8") == {"admin_status": "up"}


def test_cli_namespace_errors_are_one_line(
    servers: dict[str, EmbeddedRedis], live_layout: Path, tmp_path: Path
) -> None:
    host_config = live_layout.parent.parent / "sonic-db" / "database_config.json"
    broken = sonic_layout(tmp_path / "broken", {"": db_config(1, None), "asic0": db_config(1, None)})
    (broken.parent.parent.parent / "redis0" / "sonic-db" / "database_config.json").unlink()
    closed = sonic_layout(tmp_path / "closed", {"asic0": db_config(free_port(), None)})
    g = str(live_layout)
    cases: list[tuple[list[str | Path], int, list[str]]] = [
        (["dump", "--db-global-config", g, "--namespace", "asic9"], 2,
         ["unknown namespace 'asic9'", "'asic0', 'asic1'", "--namespace"]),
        (["produce", "--db-global-config", g, "-n", "asic0", "--table", "T", "set", "k", "a=1", "--db", "APP_DB"], 2,
         ["APP_DB", "APPL_DB", "--db"]),
        (["dump", "--url", servers["asic0"].url, "--namespace", "asic0"], 2, ["--url", "--namespace"]),
        (["dump", "--db-config", host_config, "--namespace", "asic0"], 2, ["--db-config", "--db-global-config"]),
        (["dump", "--db-config", host_config, "--db-global-config", g], 2, ["--db-config", "--db-global-config"]),
        (["dump", "--db-global-config", tmp_path / "absent.json", "-n", "asic0"], 2,
         ["absent.json", "cannot read", "--db-global-config"]),
        (["dump", "--db-global-config", broken, "-n", "asic0"], 2,
         [str(broken), "INCLUDES.1.include", "--db-global-config"]),
        (["produce", "--db-global-config", closed, "-n", "asic0", "--table", "T", "del", "k"], 1, ["127.0.0.1:"]),
    ]
    for args, code, needles in cases:
        out = swssd(*args)
        where = f"swssd {' '.join(map(str, args))}: {out.stderr!r}"
        assert out.returncode == code, where
        assert out.stdout == "", where
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, where
        assert all(n in out.stderr for n in needles), where
    missing = swssd("dump", "-n", "asic0")  # neither --db-global-config nor $SWSSD_DB_GLOBAL_CONFIG
    if not Path(GLOBAL_DEFAULT_PATH).exists():
        assert missing.returncode == 2 and GLOBAL_DEFAULT_PATH in missing.stderr
