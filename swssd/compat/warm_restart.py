"""WarmStart: an application's warm-restart state in STATE_DB and its timer in CONFIG_DB, as the
C++ class keeps them (one instance per process, initialize() once). The records' names and rules
are swssd.warm_restart's, which the daemon follows too.

getWarmStartState(app_name) returns the state: the C++ fills an output argument that SWIG leaves
unusable from Python.
"""

from __future__ import annotations

from .. import warm_restart as rules
from .dbconnector import DBConnector
from .table import Table

#: the C++ MAXIMUM_WARMRESTART_TIMER_VALUE
MAXIMUM_WARMRESTART_TIMER_VALUE = rules.MAXIMUM_TIMER


class WarmStart:
    """Static methods over the process's one instance."""

    INITIALIZED, RESTORED, REPLAYED, RECONCILED, WSDISABLED, WSUNKNOWN = range(6)
    CHECK_IGNORED, CHECK_PASSED, CHECK_FAILED = range(3)
    STAGE_SHUTDOWN, STAGE_RESTORE = range(2)

    STATE_NAMES = rules.STATE_NAMES
    CHECK_NAMES = rules.CHECK_NAMES

    _instance: WarmStart | None = None

    def __init__(self) -> None:
        self._state_enable: Table | None = None
        self._state: Table | None = None
        self._cfg: Table | None = None
        self._enabled = False
        self._system_enabled = False

    @staticmethod
    def getInstance() -> WarmStart:
        if WarmStart._instance is None:
            WarmStart._instance = WarmStart()
        return WarmStart._instance

    @staticmethod
    def initialize(app_name: str, docker_name: str, db_timeout: int = 0, isTcpConn: bool = False) -> None:
        """Connect STATE_DB and CONFIG_DB (once per process)."""
        self = WarmStart.getInstance()
        if self._state is not None:
            return
        state_db = DBConnector("STATE_DB", db_timeout, isTcpConn)
        cfg_db = DBConnector("CONFIG_DB", db_timeout, isTcpConn)
        self._state_enable = Table(state_db, rules.ENABLE_TABLE)
        self._state = Table(state_db, rules.STATE_TABLE)
        self._cfg = Table(cfg_db, rules.CONFIG_TABLE)

    @staticmethod
    def _tables() -> tuple[Table, Table, Table]:
        self = WarmStart.getInstance()
        if self._state_enable is None or self._state is None or self._cfg is None:
            raise RuntimeError("WarmStart.initialize() was not called")
        return self._state_enable, self._state, self._cfg

    @staticmethod
    def checkWarmStart(app_name: str, docker_name: str, incr_restore_cnt: bool = True) -> bool:
        """Whether this start is a warm one (system or docker knob on, and a restore count on
        record, which is then incremented); a cold start records restore_count 0."""
        self = WarmStart.getInstance()
        enable, state, _ = WarmStart._tables()
        on, system_on = rules.knobs(enable.hget(rules.SYSTEM_KEY, rules.ENABLE_FIELD)[1],
                                    enable.hget(docker_name, rules.ENABLE_FIELD)[1])
        # as in C++, a knob seen on stays on for the process until a start falls back to cold
        self._enabled |= on
        self._system_enabled |= system_on
        count = state.hget(app_name, rules.RESTORE_COUNT_FIELD)[1] if self._enabled else None
        check = rules.check_warm_start(self._enabled, self._system_enabled, count, incr_restore_cnt)
        self._enabled, self._system_enabled = check.warm, check.system
        if check.restore_count is not None:
            state.hset(app_name, rules.RESTORE_COUNT_FIELD, check.restore_count)
        return check.warm

    @staticmethod
    def isWarmStart() -> bool:
        return WarmStart.getInstance()._enabled

    @staticmethod
    def isSystemWarmRebootEnabled() -> bool:
        return WarmStart.getInstance()._system_enabled

    @staticmethod
    def getWarmStartTimer(app_name: str, docker_name: str) -> int:
        """The `<app>_timer` of the docker's WARM_RESTART entry; 0 when unset or out of range."""
        return rules.timer_seconds(WarmStart._tables()[2].hget(docker_name, f"{app_name}_timer")[1])

    @staticmethod
    def getWarmStartState(app_name: str) -> int:
        """RECONCILED on a cold start, else the recorded state (WSUNKNOWN when none)."""
        if not WarmStart.isWarmStart():
            return WarmStart.RECONCILED
        return rules.state_of(WarmStart._tables()[1].hget(app_name, rules.STATE_FIELD)[1])

    @staticmethod
    def setWarmStartState(app_name: str, state: int) -> None:
        WarmStart._tables()[1].hset(app_name, rules.STATE_FIELD, WarmStart.STATE_NAMES[state])

    @staticmethod
    def setDataCheckState(app_name: str, stage: int, state: int) -> None:
        field = rules.check_field(stage == WarmStart.STAGE_SHUTDOWN)
        WarmStart._tables()[1].hset(app_name, field, WarmStart.CHECK_NAMES[state])

    @staticmethod
    def getDataCheckState(app_name: str, stage: int) -> int:
        recorded = WarmStart._tables()[1].hget(app_name, rules.check_field(stage == WarmStart.STAGE_SHUTDOWN))[1]
        names = WarmStart.CHECK_NAMES
        return names.index(recorded) if recorded in names else WarmStart.CHECK_IGNORED
