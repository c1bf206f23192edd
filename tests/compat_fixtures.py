"""Fixtures of the swsscommon-compatible layer's tests: a database_config.json that places SONiC's
databases on the suite's private redis-server, loaded into the layer's process-wide SonicDBConfig."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from swssd.compat.dbconfig import SonicDBConfig
from swssd.redis.dbconfig import ENV_VAR, GLOBAL_ENV_VAR
from swssd.redis.embedded_redis import EmbeddedRedis

#: name -> (id, separator), as SONiC's database_config.json and sonic-swss-common's tests have them
DATABASES = {
    "APPL_DB": (0, ":"),
    "ASIC_DB": (1, ":"),
    "COUNTERS_DB": (2, ":"),
    "CONFIG_DB": (4, "|"),
    "FLEX_COUNTER_DB": (5, ":"),
    "STATE_DB": (6, "|"),
    "TEST_DB": (15, ":"),
}


def database_config(server: EmbeddedRedis, databases: dict[str, tuple[int, str]] | None = None) -> dict[str, object]:
    """A database_config.json document for `server` (TCP and unix socket)."""
    return {
        "INSTANCES": {"redis": {"hostname": "127.0.0.1", "port": server.port, "unix_socket_path": server.unix_socket}},
        "DATABASES": {
            name: {"id": db_id, "separator": sep, "instance": "redis"}
            for name, (db_id, sep) in (databases or DATABASES).items()
        },
        "VERSION": "1.0",
    }


def write_json(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document))
    return path


@pytest.fixture
def sonic_db_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> Iterator[Path]:
    """The layer's SonicDBConfig initialized with a database_config.json for the emptied server;
    reset again afterwards, so each test starts from a process that loaded nothing else."""
    path = write_json(tmp_path / "database_config.json", database_config(clean_redis))
    SonicDBConfig.reset()
    SonicDBConfig.initialize(str(path))
    yield path
    SonicDBConfig.reset()


@pytest.fixture
def no_db_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """SonicDBConfig with nothing loaded, as in a fresh process off a switch with no
    $SWSSD_DB_CONFIG / $SWSSD_DB_GLOBAL_CONFIG to stand for the default files."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv(GLOBAL_ENV_VAR, raising=False)
    SonicDBConfig.reset()
    yield
    SonicDBConfig.reset()
