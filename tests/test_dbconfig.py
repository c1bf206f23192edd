"""database_config.json loading and its errors (must-hold 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swssd import ConfigError, SonicDBConfig, UnknownDatabaseError
from swssd.redis.dbconfig import DEFAULT_PATH, ENV_VAR


def sonic_config(**db_overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "INSTANCES": {
            "redis": {"hostname": "127.0.0.1", "port": 6379, "unix_socket_path": "/var/run/redis/redis.sock"},
            "redis_chassis": {"hostname": "redis_chassis.server", "port": 6380},
        },
        "DATABASES": {
            "APPL_DB": {"id": 0, "separator": ":", "instance": "redis"},
            "CONFIG_DB": {"id": 4, "separator": "|", "instance": "redis"},
            "STATE_DB": {"id": 6, "separator": "|", "instance": "redis"},
            "CHASSIS_APP_DB": {"id": 12, "separator": "|", "instance": "redis_chassis"},
        },
        "VERSION": "1.0",
    }
    doc["DATABASES"]["APPL_DB"].update(db_overrides)
    return doc


def write(tmp_path: Path, doc: Any, name: str = "database_config.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_load_sonic_schema(tmp_path: Path) -> None:
    path = write(tmp_path, sonic_config())
    cfg = SonicDBConfig.load(path)
    assert cfg.path == str(path)
    assert cfg.db_names() == ["APPL_DB", "CONFIG_DB", "STATE_DB", "CHASSIS_APP_DB"]
    assert (cfg.db_id("STATE_DB"), cfg.separator("STATE_DB")) == (6, "|")
    assert (cfg.db_id("APPL_DB"), cfg.separator("APPL_DB")) == (0, ":")
    inst = cfg.instance_of("APPL_DB")
    assert (inst.hostname, inst.port, inst.unix_socket_path) == ("127.0.0.1", 6379, "/var/run/redis/redis.sock")
    chassis = cfg.instance_of("CHASSIS_APP_DB")
    assert (chassis.hostname, chassis.port, chassis.unix_socket_path) == ("redis_chassis.server", 6380, None)
    assert cfg.version == "1.0"


def test_load_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, sonic_config(id=3))
    monkeypatch.setenv(ENV_VAR, str(path))
    cfg = SonicDBConfig.load()
    assert cfg.db_id("APPL_DB") == 3
    assert cfg.path == str(path)


def test_explicit_path_wins_over_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(write(tmp_path, sonic_config(id=3), "env.json")))
    assert SonicDBConfig.load(write(tmp_path, sonic_config(id=5), "arg.json")).db_id("APPL_DB") == 5


def test_default_path_without_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert DEFAULT_PATH == "/var/run/redis/sonic-db/database_config.json"
    monkeypatch.delenv(ENV_VAR, raising=False)
    if Path(DEFAULT_PATH).exists():
        pytest.skip("a real SONiC database_config.json is installed here")
    with pytest.raises(ConfigError) as err:
        SonicDBConfig.load()
    assert DEFAULT_PATH in str(err.value)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "database_config.json"
    with pytest.raises(ConfigError) as err:
        SonicDBConfig.load(path)
    assert str(path) in str(err.value)
    assert err.value.path == str(path)


def test_unreadable_path_names_the_file(tmp_path: Path) -> None:
    """A directory where the file should be cannot be read, even by root."""
    with pytest.raises(ConfigError) as err:
        SonicDBConfig.load(tmp_path)
    assert str(tmp_path) in str(err.value)


@pytest.mark.parametrize("text", ["{", '{"INSTANCES": {}, "DATABASES": {},}', "", "not json"])
def test_malformed_json_names_the_file(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        SonicDBConfig.load(path)
    assert str(path) in str(err.value)
    assert "JSON" in str(err.value)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("INSTANCES"), "INSTANCES"),
        (lambda d: d.pop("DATABASES"), "DATABASES"),
        (lambda d: d["DATABASES"]["APPL_DB"].pop("id"), "DATABASES.APPL_DB.id"),
        (lambda d: d["DATABASES"]["APPL_DB"].pop("separator"), "DATABASES.APPL_DB.separator"),
        (lambda d: d["DATABASES"]["APPL_DB"].pop("instance"), "DATABASES.APPL_DB.instance"),
        (lambda d: d["DATABASES"]["APPL_DB"].update(id="zero"), "DATABASES.APPL_DB.id"),
        (lambda d: d["DATABASES"]["APPL_DB"].update(id=-1), "DATABASES.APPL_DB.id"),
        (lambda d: d["INSTANCES"]["redis"].update(port="six"), "INSTANCES.redis.port"),
        (lambda d: d["DATABASES"]["APPL_DB"].update(instance="nope"), "DATABASES.APPL_DB.instance"),
    ],
)
def test_missing_or_bad_field_names_file_and_field(tmp_path: Path, mutate: Any, field: str) -> None:
    doc = sonic_config()
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ConfigError) as err:
        SonicDBConfig.load(path)
    message = str(err.value)
    assert str(path) in message
    assert field in message
    assert err.value.field == field


@pytest.mark.parametrize("separator", ["/", "", "::", ";", " "])
def test_bad_separator_in_config_names_the_field(tmp_path: Path, separator: str) -> None:
    path = write(tmp_path, sonic_config(separator=separator))
    with pytest.raises(ConfigError) as err:
        SonicDBConfig.load(path)
    message = str(err.value)
    assert str(path) in message
    assert "DATABASES.APPL_DB.separator" in message
    assert "':'" in message and "'|'" in message


def test_not_an_object(tmp_path: Path) -> None:
    path = write(tmp_path, "[1, 2]")
    with pytest.raises(ConfigError) as err:
        SonicDBConfig.load(path)
    assert str(path) in str(err.value)


def test_unknown_database_lists_the_known_ones(tmp_path: Path) -> None:
    path = write(tmp_path, sonic_config())
    cfg = SonicDBConfig.load(path)
    with pytest.raises(UnknownDatabaseError) as err:
        cfg.database("APP_DB")
    message = str(err.value)
    assert "'APP_DB'" in message
    for name in ("APPL_DB", "CONFIG_DB", "STATE_DB", "CHASSIS_APP_DB"):
        assert name in message
    assert str(path) in message
    for lookup in (cfg.db_id, cfg.separator, cfg.instance_of):
        with pytest.raises(UnknownDatabaseError):
            lookup("APP_DB")


def test_errors_are_value_and_lookup_errors(tmp_path: Path) -> None:
    """Callers that catch the builtin families still catch ours."""
    with pytest.raises(ValueError):
        SonicDBConfig.load(write(tmp_path, "{"))
    with pytest.raises(LookupError):
        SonicDBConfig.load(write(tmp_path, sonic_config())).database("X")


def test_from_dict_without_a_file() -> None:
    cfg = SonicDBConfig.from_dict(sonic_config())
    assert cfg.db_id("CONFIG_DB") == 4
    with pytest.raises(ConfigError) as err:
        SonicDBConfig.from_dict(sonic_config(separator="#"))
    assert "DATABASES.APPL_DB.separator" in str(err.value)


def test_extra_keys_in_sonic_files_are_accepted(tmp_path: Path) -> None:
    doc = sonic_config()
    doc["INSTANCES"]["redis"]["persistence_for_warm_boot"] = "yes"
    doc["DATABASES"]["APPL_DB"]["format"] = "hash"
    assert SonicDBConfig.load(write(tmp_path, doc)).db_id("APPL_DB") == 0
