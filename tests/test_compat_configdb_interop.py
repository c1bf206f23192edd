"""The compatible layer's ConfigDBConnector / ConfigDBPipeConnector against sonic-swss-common's
binding on one redis-server: every scenario of test_configdb_interop, run through the binding (in a
subprocess) and through swssd.compat (here), leaves the same Redis contents (fields in HGETALL
order), returns the same values, and each side reads what the other wrote as it reads its own.
Skipped with the reason when the binding cannot be imported (see test_configdb_interop)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat.configdb import ConfigDBConnector, ConfigDBPipeConnector
from swssd.compat.dbconnector import DBConnector
from swssd.redis.embedded_redis import EmbeddedRedis
from test_configdb_interop import BOTH, SCENARIOS, Call, comparable, run_swsscommon, swss_env

_ = (sonic_db_config, swss_env)


@pytest.fixture
def raw(sonic_db_config: Path) -> Iterator[DBConnector]:
    db = DBConnector("CONFIG_DB", 0)
    yield db
    db.close()


def snapshot(db: DBConnector) -> dict[str, Any]:
    """Every key: a hash's fields in HGETALL order, anything else as (type, GET)."""
    conn = db.connection
    state: dict[str, Any] = {}
    for key in sorted(conn.command("KEYS", "*")):
        if conn.command("TYPE", key) == "hash":
            flat = conn.command("HGETALL", key)
            state[key] = list(zip(flat[::2], flat[1::2]))
        else:
            state[key] = (conn.command("TYPE", key), conn.command("GET", key))
    return state


def run_ours(cls: str, calls: list[Call]) -> list[Any]:
    cdb = {"ConfigDBConnector": ConfigDBConnector, "ConfigDBPipeConnector": ConfigDBPipeConnector}[cls]()
    cdb.connect(wait_for_init=False)
    out: list[Any] = []
    for method, args in calls:
        try:
            out.append(("ok", getattr(cdb, method)(*args)))
        except Exception as exc:
            out.append(("error", type(exc).__name__))
    cdb.close()
    return out


@pytest.mark.parametrize("cls", BOTH)
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_same_contents_same_values(
    swss_env: dict[str, str], clean_redis: EmbeddedRedis, raw: DBConnector, tmp_path: Path, name: str, cls: str,
) -> None:
    setup, calls, after, _holds_for = SCENARIOS[name]  # the layer follows each C++ class in each scenario
    db_config = clean_redis.write_database_config(tmp_path / "binding_database_config.json")
    everything = calls + after

    def reset() -> None:
        raw.flushdb()
        for command in setup:
            raw.connection.command(*command)

    reset()
    theirs = run_swsscommon(swss_env, db_config, cls, everything)
    their_state = snapshot(raw)
    ours_reading_theirs = run_ours(cls, after)

    reset()
    ours = run_ours(cls, everything)
    our_state = snapshot(raw)
    theirs_reading_ours = run_swsscommon(swss_env, db_config, cls, after)

    assert our_state == their_state
    assert comparable(everything, ours) == comparable(everything, theirs)
    assert comparable(after, ours_reading_theirs) == comparable(after, theirs[len(calls):])
    assert comparable(after, theirs_reading_ours) == comparable(after, ours[len(calls):])
