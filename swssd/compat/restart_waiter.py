"""RestartWaiter: wait until a warm or fast reboot in progress is over, as the C++ class does
(STATE_DB's WARM_RESTART_ENABLE_TABLE|system enable turning "false", followed with a
SubscriberStateTable and a Select)."""

from __future__ import annotations

import time

from .dbconfig import SonicDBConfig
from .dbconnector import DBConnector
from .schema import STATE_WARM_RESTART_ENABLE_TABLE_NAME
from .selector import Select
from .subscriber_state_table import SubscriberStateTable

RESTART_KEY = "system"
RESTART_ENABLE_FIELD = "enable"
FAST_REBOOT_TABLE_NAME = "FAST_RESTART_ENABLE_TABLE"


class RestartWaiter:
    """Static methods only."""

    @staticmethod
    def waitAdvancedBootDone(maxWaitSec: int = 180, dbTimeout: int = 0, isTcpConn: bool = False) -> bool:
        state_db = DBConnector("STATE_DB", dbTimeout, isTcpConn)
        return RestartWaiter._wait(state_db, maxWaitSec) if RestartWaiter.isAdvancedBootInProgress(state_db) else True

    @staticmethod
    def waitWarmBootDone(maxWaitSec: int = 180, dbTimeout: int = 0, isTcpConn: bool = False) -> bool:
        state_db = DBConnector("STATE_DB", dbTimeout, isTcpConn)
        if RestartWaiter.isFastBootInProgress(state_db):
            return True
        return RestartWaiter._wait(state_db, maxWaitSec) if RestartWaiter.isAdvancedBootInProgress(state_db) else True

    @staticmethod
    def waitFastBootDone(maxWaitSec: int = 180, dbTimeout: int = 0, isTcpConn: bool = False) -> bool:
        state_db = DBConnector("STATE_DB", dbTimeout, isTcpConn)
        if not RestartWaiter.isFastBootInProgress(state_db):
            return True
        return RestartWaiter._wait(state_db, maxWaitSec) if RestartWaiter.isAdvancedBootInProgress(state_db) else True

    @staticmethod
    def isAdvancedBootInProgressHelper(stateDb: DBConnector, checkFastBoot: bool = False) -> bool:
        table = FAST_REBOOT_TABLE_NAME if checkFastBoot else STATE_WARM_RESTART_ENABLE_TABLE_NAME
        value = stateDb.hget(f"{table}|{RESTART_KEY}", RESTART_ENABLE_FIELD)
        return value is not None and value.lower() == "true"

    @staticmethod
    def isAdvancedBootInProgress(stateDb: DBConnector) -> bool:
        return RestartWaiter.isAdvancedBootInProgressHelper(stateDb)

    @staticmethod
    def isFastBootInProgress(stateDb: DBConnector) -> bool:
        return RestartWaiter.isAdvancedBootInProgressHelper(stateDb, True)

    @staticmethod
    def isWarmBootInProgress(stateDb: DBConnector) -> bool:
        return RestartWaiter.isAdvancedBootInProgress(stateDb) and not RestartWaiter.isFastBootInProgress(stateDb)

    @staticmethod
    def _wait(state_db: DBConnector, max_wait_sec: int) -> bool:
        """True once `enable` reads "false" (any case), False after `max_wait_sec` seconds."""
        separator = SonicDBConfig.getSeparator(state_db)
        value = state_db.hget(f"{STATE_WARM_RESTART_ENABLE_TABLE_NAME}{separator}{RESTART_KEY}", RESTART_ENABLE_FIELD)
        if value is not None and value.lower() == "false":
            return True
        if max_wait_sec == 0:
            return False
        table = SubscriberStateTable(state_db, STATE_WARM_RESTART_ENABLE_TABLE_NAME)
        sel = Select()
        sel.addSelectable(table)
        deadline = time.monotonic() + max_wait_sec
        while (left := deadline - time.monotonic()) > 0:
            state, _ = sel.select(max(int(left * 1000), 1))
            if state != Select.OBJECT:
                continue
            key, op, fvs = table.pop()
            if op == "SET" and key == RESTART_KEY:
                for field, got in fvs:
                    if field == RESTART_ENABLE_FIELD:
                        if got.lower() == "false":
                            return True
                        break
        return False
