"""The layer keeps no memory per call: RSS grows by less than 50 kB over 50,000 table operations
and over 50,000 select() + pop() rounds, once warmed up (issue 23's bound)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import psutil

from compat_fixtures import sonic_db_config
from swssd.compat import swsscommon
from swssd.compat.dbconnector import DBConnector

_ = sonic_db_config
N = 50_000
LIMIT = 50_000  # bytes


def rss_growth(run: Callable[[], None]) -> int:
    """RSS after a second run minus RSS after a first (the first pays one-time allocations)."""
    run()
    before = psutil.Process(os.getpid()).memory_info().rss
    run()
    return int(psutil.Process(os.getpid()).memory_info().rss - before)


def test_table_operations(sonic_db_config: Path) -> None:
    table = swsscommon.Table(DBConnector("APPL_DB", 0, True), "TABLE")
    fvs = swsscommon.FieldValuePairs([("x" * 100, "x" * 100)])

    def run() -> None:
        for _ in range(N // 2):
            table.set("long_data", fvs)
            table.get("long_data")

    assert rss_growth(run) < LIMIT


def test_selects_and_pops(sonic_db_config: Path) -> None:
    db = DBConnector("APPL_DB", 0, True)
    db.config_set("notify-keyspace-events", "AKE")
    sst = swsscommon.SubscriberStateTable(db, "MEM")
    sel = swsscommon.Select()
    sel.addSelectable(sst)
    writer = swsscommon.Table(DBConnector("APPL_DB", 0, True), "MEM")

    def run() -> None:
        for i in range(N):
            writer.set("k", [("state", "up" if i % 2 else "down")])
            state, _ = sel.select(1000)
            assert state == swsscommon.Select.OBJECT
            sst.pop()

    assert rss_growth(run) < LIMIT
