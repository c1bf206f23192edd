"""swssd.compat.warm_restart and restart_waiter: WarmStart's STATE_DB records and RestartWaiter's
wait, as the C++ classes keep and follow them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_fixtures import sonic_db_config
from swssd.compat.dbconnector import DBConnector
from swssd.compat.restart_waiter import RestartWaiter
from swssd.compat.warm_restart import WarmStart

_ = sonic_db_config


@pytest.fixture
def state_db(sonic_db_config: Path) -> Iterator[DBConnector]:
    WarmStart._instance = None  # a fresh process's WarmStart
    db = DBConnector("STATE_DB", 0)
    db.config_set("notify-keyspace-events", "AKE")
    yield db
    WarmStart._instance = None


def test_cold_start_records_restore_count_zero(state_db: DBConnector) -> None:
    WarmStart.initialize("orchagent", "swss")
    assert WarmStart.checkWarmStart("orchagent", "swss") is False
    assert state_db.hgetall("WARM_RESTART_TABLE|orchagent").asdict() == {"restore_count": "0"}
    assert not WarmStart.isWarmStart() and WarmStart.getWarmStartState("orchagent") == WarmStart.RECONCILED


def test_warm_start_counts_restores_and_keeps_states(state_db: DBConnector) -> None:
    state_db.hset("WARM_RESTART_ENABLE_TABLE|swss", "enable", "true")
    state_db.hset("WARM_RESTART_TABLE|orchagent", "restore_count", "2")
    WarmStart.initialize("orchagent", "swss")
    assert WarmStart.checkWarmStart("orchagent", "swss") is True
    assert WarmStart.isWarmStart() and not WarmStart.isSystemWarmRebootEnabled()
    assert state_db.hget("WARM_RESTART_TABLE|orchagent", "restore_count") == "3"
    assert WarmStart.getWarmStartState("orchagent") == WarmStart.WSUNKNOWN
    WarmStart.setWarmStartState("orchagent", WarmStart.REPLAYED)
    assert state_db.hget("WARM_RESTART_TABLE|orchagent", "state") == "replayed"
    assert WarmStart.getWarmStartState("orchagent") == WarmStart.REPLAYED
    WarmStart.setDataCheckState("orchagent", WarmStart.STAGE_SHUTDOWN, WarmStart.CHECK_PASSED)
    assert state_db.hget("WARM_RESTART_TABLE|orchagent", "shutdown_check") == "passed"
    assert WarmStart.getDataCheckState("orchagent", WarmStart.STAGE_SHUTDOWN) == WarmStart.CHECK_PASSED
    assert WarmStart.getDataCheckState("orchagent", WarmStart.STAGE_RESTORE) == WarmStart.CHECK_IGNORED


def test_enabled_without_a_record_is_a_cold_start(state_db: DBConnector) -> None:
    state_db.hset("WARM_RESTART_ENABLE_TABLE|system", "enable", "true")
    WarmStart.initialize("bgp", "bgp")
    assert WarmStart.checkWarmStart("bgp", "bgp") is False
    assert not WarmStart.isSystemWarmRebootEnabled()


def test_timer(state_db: DBConnector) -> None:
    cfg = DBConnector("CONFIG_DB", 0)
    WarmStart.initialize("neighsyncd", "swss")
    assert WarmStart.getWarmStartTimer("neighsyncd", "swss") == 0
    cfg.hset("WARM_RESTART|swss", "neighsyncd_timer", "120")
    assert WarmStart.getWarmStartTimer("neighsyncd", "swss") == 120
    cfg.hset("WARM_RESTART|swss", "neighsyncd_timer", "10000")
    assert WarmStart.getWarmStartTimer("neighsyncd", "swss") == 0


def test_uninitialized_is_a_runtime_error(state_db: DBConnector) -> None:
    with pytest.raises(RuntimeError, match="initialize"):
        WarmStart.checkWarmStart("a", "b")


def test_restart_waiter(state_db: DBConnector) -> None:
    assert RestartWaiter.waitWarmBootDone(1) is True  # nothing in progress
    state_db.hset("WARM_RESTART_ENABLE_TABLE|system", "enable", "TRUE")
    assert RestartWaiter.isWarmBootInProgress(state_db)
    started = time.monotonic()
    assert RestartWaiter.waitWarmBootDone(1) is False  # still in progress after 1 s
    assert time.monotonic() - started >= 0.9

    def done_later() -> None:
        time.sleep(0.3)
        DBConnector("STATE_DB", 0).hset("WARM_RESTART_ENABLE_TABLE|system", "enable", "false")

    thread = threading.Thread(target=done_later)
    thread.start()
    assert RestartWaiter.waitAdvancedBootDone(5) is True
    thread.join()
    state_db.hset("FAST_RESTART_ENABLE_TABLE|system", "enable", "true")
    assert RestartWaiter.isFastBootInProgress(state_db) and RestartWaiter.waitWarmBootDone(1) is True
