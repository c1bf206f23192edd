"""swssd.compat.dbconfig: SonicDBConfig's process-wide state and rules, as the C++ class has them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from compat_fixtures import database_config, no_db_config, sonic_db_config, write_json
from swssd.compat.dbconfig import SonicDBConfig, SonicDBKey
from swssd.redis.dbconfig import ENV_VAR, GLOBAL_ENV_VAR
from swssd.redis.embedded_redis import EmbeddedRedis

_ = (no_db_config, sonic_db_config)


def test_lookups_after_initialize(sonic_db_config: Path, clean_redis: EmbeddedRedis) -> None:
    assert SonicDBConfig.isInit() and not SonicDBConfig.isGlobalInit()
    assert SonicDBConfig.getDbId("CONFIG_DB") == 4
    assert SonicDBConfig.getSeparator("CONFIG_DB") == "|"
    assert SonicDBConfig.getSeparator(0) == ":"
    assert SonicDBConfig.getSeparator(5) == ":"
    assert SonicDBConfig.getDbInst("STATE_DB") == "redis"
    assert SonicDBConfig.getDbPort("APPL_DB") == clean_redis.port
    assert SonicDBConfig.getDbHostname("APPL_DB") == "127.0.0.1"
    assert SonicDBConfig.getDbSock("APPL_DB") == clean_redis.unix_socket
    assert SonicDBConfig.getDbList()[:3] == ("APPL_DB", "ASIC_DB", "COUNTERS_DB")
    assert SonicDBConfig.getNamespaces() == ("",)
    assert SonicDBConfig.get_ns_list() == ("",)
    instances = SonicDBConfig.getInstanceList()
    assert instances.keys()[0] == "redis"  # indexable, as the binding's map proxy
    assert instances["redis"].port == clean_redis.port
    assert instances["redis"].unixSocketPath == clean_redis.unix_socket


def test_initialize_twice_is_refused(sonic_db_config: Path) -> None:
    with pytest.raises(RuntimeError, match="already initialized"):
        SonicDBConfig.initialize(str(sonic_db_config))
    SonicDBConfig.reset()
    SonicDBConfig.load_sonic_db_config(str(sonic_db_config))
    assert SonicDBConfig.isInit()


def test_unknown_database_and_id_are_index_errors(sonic_db_config: Path) -> None:
    with pytest.raises(IndexError, match="Failed to find NO_SUCH_DB database"):
        SonicDBConfig.getDbId("NO_SUCH_DB")
    with pytest.raises(IndexError, match="Failed to find 9 database"):
        SonicDBConfig.getSeparator(9)


def test_lazy_default_file_is_named_when_missing(no_db_config: None) -> None:
    """Without initialize(), the first lookup loads SONiC's default path, as in C++."""
    assert not Path(SonicDBConfig.DEFAULT_SONIC_DB_CONFIG_FILE).exists()
    with pytest.raises(RuntimeError, match=r"doesn.t exist at /var/run/redis/sonic-db/database_config\.json"):
        SonicDBConfig.getDbId("APPL_DB")
    assert not SonicDBConfig.isInit()


def test_the_default_files_stand_for_the_environments(no_db_config: None, clean_redis: EmbeddedRedis,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$SWSSD_DB_CONFIG stands for SONiC's default database_config.json (the lazy load and an
    initialize() without a path); a path given is read as given."""
    laptop = write_json(tmp_path / "laptop.json", database_config(clean_redis, {"APPL_DB": (3, ":")}))
    monkeypatch.setenv(ENV_VAR, str(laptop))
    assert SonicDBConfig.getDbId("APPL_DB") == 3
    SonicDBConfig.reset()
    SonicDBConfig.initialize()
    assert SonicDBConfig.getDbId("APPL_DB") == 3
    SonicDBConfig.reset()
    given = write_json(tmp_path / "given.json", database_config(clean_redis, {"APPL_DB": (7, ":")}))
    SonicDBConfig.initialize(str(given))
    assert SonicDBConfig.getDbId("APPL_DB") == 7
    SonicDBConfig.reset()
    monkeypatch.setenv(GLOBAL_ENV_VAR, str(write_json(tmp_path / "global.json", {
        "INCLUDES": [{"include": "laptop.json"}, {"namespace": "asic0", "include": "given.json"}]})))
    SonicDBConfig.initializeGlobalConfig()
    assert SonicDBConfig.isGlobalInit() and SonicDBConfig.getDbId("APPL_DB", "asic0") == 7


def test_an_unmodified_program_reads_the_file_swssd_db_config_names(clean_redis: EmbeddedRedis,
                                                                    tmp_path: Path) -> None:
    """A SONiC program that loads the default file, run off the switch with the layer as swsscommon."""
    laptop = write_json(tmp_path / "laptop.json", database_config(clean_redis))
    redis.Redis(port=clean_redis.port, db=2).hset("COUNTERS_PORT_NAME_MAP", "Ethernet0", "oid:0x1000000000002")
    redis.Redis(port=clean_redis.port, db=0).hset("PORT_TABLE:Ethernet0", "mtu", "9100")
    program = (
        "from swsscommon.swsscommon import DBConnector, SonicV2Connector, Table\n"
        "db = SonicV2Connector(use_unix_socket_path=False)\n"
        "db.connect(db.COUNTERS_DB)\n"
        "print(db.get_all(db.COUNTERS_DB, 'COUNTERS_PORT_NAME_MAP'))\n"
        "print(Table(DBConnector('APPL_DB', 0), 'PORT_TABLE').get('Ethernet0'))\n"
    )
    compat = Path(__file__).resolve().parent.parent / "compat"
    env = {**os.environ, ENV_VAR: str(laptop), "PYTHONPATH": os.pathsep.join(
        [str(compat), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["{'Ethernet0': 'oid:0x1000000000002'}", "[True, (('mtu', '9100'),)]"]


def test_invalid_file_is_runtime_error_naming_the_field(no_db_config: None, tmp_path: Path) -> None:
    bad = write_json(tmp_path / "bad.json", {"INSTANCES": {}, "DATABASES": {"APPL_DB": {"id": 0, "separator": ":"}}})
    with pytest.raises(RuntimeError, match=r"DATABASES\.APPL_DB\.instance"):
        SonicDBConfig.initialize(str(bad))


def test_namespaces_from_the_global_config(no_db_config: None, clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    write_json(tmp_path / "database_config.json", database_config(clean_redis))
    (tmp_path / "asic0").mkdir()
    write_json(tmp_path / "asic0" / "database_config.json", database_config(clean_redis, {"APPL_DB": (3, ":")}))
    (tmp_path / "dpu0").mkdir()
    write_json(tmp_path / "dpu0" / "database_config.json", database_config(clean_redis, {"DPU_APPL_DB": (15, ":")}))
    global_file = write_json(tmp_path / "database_global.json", {"INCLUDES": [
        {"include": "database_config.json"},
        {"include": "asic0/database_config.json", "namespace": "asic0"},
        {"include": "dpu0/database_config.json", "container_name": "dpu0"},
    ]})
    SonicDBConfig.initialize(str(tmp_path / "database_config.json"))
    with pytest.raises(RuntimeError, match="initializeGlobalConfig"):
        SonicDBConfig.getDbList("asic0")
    SonicDBConfig.reset()
    SonicDBConfig.load_sonic_global_db_config(str(global_file))
    assert SonicDBConfig.isInit() and SonicDBConfig.isGlobalInit()
    assert SonicDBConfig.getNamespaces() == ("", "asic0")
    assert SonicDBConfig.getDbId("APPL_DB", "asic0") == 3
    key = SonicDBKey()
    key.containerName = "dpu0"
    assert SonicDBConfig.getDbId("DPU_APPL_DB", key) == 15
    assert SonicDBConfig.getDbId("DPU_APPL_DB", "", "dpu0") == 15
    assert len(SonicDBConfig.getDbKeys()) == 3
    with pytest.raises(RuntimeError, match="Namespace asic9 is not a valid namespace"):
        SonicDBConfig.getDbList("asic9")
    with pytest.raises(IndexError, match="Key :asic9 is not a valid key"):
        SonicDBConfig.getDbId("APPL_DB", "asic9")
    SonicDBConfig.initializeGlobalConfig(str(global_file))  # a second call only logs
    assert SonicDBConfig.getNamespaces() == ("", "asic0")


def test_global_config_keeps_an_earlier_initialize(sonic_db_config: Path, clean_redis: EmbeddedRedis,
                                                   tmp_path: Path) -> None:
    """The default include is skipped when initialize() ran first (its file is never read)."""
    write_json(tmp_path / "other.json", database_config(clean_redis, {"APPL_DB": (7, ":")}))
    global_file = write_json(tmp_path / "database_global.json", {"INCLUDES": [{"include": "other.json"}]})
    SonicDBConfig.initializeGlobalConfig(str(global_file))
    assert SonicDBConfig.getDbId("APPL_DB") == 0


def test_missing_global_file_only_marks_it_loaded(sonic_db_config: Path, tmp_path: Path) -> None:
    SonicDBConfig.initializeGlobalConfig(str(tmp_path / "absent.json"))
    assert SonicDBConfig.isGlobalInit()
    assert SonicDBConfig.getNamespaces() == ("",)
