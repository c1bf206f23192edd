"""WarmStart: an application's warm-restart state in STATE_DB and its timer in CONFIG_DB, as the
C++ class keeps them (one instance per process, initialize() once).

getWarmStartState(app_name) returns the state: the C++ fills an output argument that SWIG leaves
unusable from Python.
"""

from __future__ import annotations

from .dbconnector import DBConnector
from .schema import CFG_WARM_RESTART_TABLE_NAME, STATE_WARM_RESTART_ENABLE_TABLE_NAME, STATE_WARM_RESTART_TABLE_NAME
from .table import Table

#: the C++ MAXIMUM_WARMRESTART_TIMER_VALUE
MAXIMUM_WARMRESTART_TIMER_VALUE = 9999


class WarmStart:
    """Static methods over the process's one instance."""

    INITIALIZED, RESTORED, REPLAYED, RECONCILED, WSDISABLED, WSUNKNOWN = range(6)
    CHECK_IGNORED, CHECK_PASSED, CHECK_FAILED = range(3)
    STAGE_SHUTDOWN, STAGE_RESTORE = range(2)

    STATE_NAMES = ("initialized", "restored", "replayed", "reconciled", "disabled", "unknown")
    CHECK_NAMES = ("ignored", "passed", "failed")

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
        self._state_enable = Table(state_db, STATE_WARM_RESTART_ENABLE_TABLE_NAME)
        self._state = Table(state_db, STATE_WARM_RESTART_TABLE_NAME)
        self._cfg = Table(cfg_db, CFG_WARM_RESTART_TABLE_NAME)

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
        if enable.hget("system", "enable")[1] == "true":
            self._enabled = self._system_enabled = True
        if enable.hget(docker_name, "enable")[1] == "true":
            self._enabled = True
        if not self._enabled:
            state.hset(app_name, "restore_count", "0")
            return False
        count = state.hget(app_name, "restore_count")[1]
        if count == "":
            self._enabled = self._system_enabled = False
            state.hset(app_name, "restore_count", "0")
            return False
        if incr_restore_cnt:
            state.hset(app_name, "restore_count", str(int(count) + 1))
        return True

    @staticmethod
    def isWarmStart() -> bool:
        return WarmStart.getInstance()._enabled

    @staticmethod
    def isSystemWarmRebootEnabled() -> bool:
        return WarmStart.getInstance()._system_enabled

    @staticmethod
    def getWarmStartTimer(app_name: str, docker_name: str) -> int:
        """The `<app>_timer` of the docker's WARM_RESTART entry; 0 when unset or out of range."""
        value = WarmStart._tables()[2].hget(docker_name, f"{app_name}_timer")[1]
        try:
            seconds = int(value, 0)
        except ValueError:
            return 0
        return seconds if 0 < seconds <= MAXIMUM_WARMRESTART_TIMER_VALUE else 0

    @staticmethod
    def getWarmStartState(app_name: str) -> int:
        """RECONCILED on a cold start, else the recorded state (WSUNKNOWN when none)."""
        if not WarmStart.isWarmStart():
            return WarmStart.RECONCILED
        recorded = WarmStart._tables()[1].hget(app_name, "state")[1]
        names = WarmStart.STATE_NAMES
        return names.index(recorded) if recorded in names else WarmStart.WSUNKNOWN

    @staticmethod
    def setWarmStartState(app_name: str, state: int) -> None:
        WarmStart._tables()[1].hset(app_name, "state", WarmStart.STATE_NAMES[state])

    @staticmethod
    def _check_field(stage: int) -> str:
        return "shutdown_check" if stage == WarmStart.STAGE_SHUTDOWN else "restore_check"

    @staticmethod
    def setDataCheckState(app_name: str, stage: int, state: int) -> None:
        WarmStart._tables()[1].hset(app_name, WarmStart._check_field(stage), WarmStart.CHECK_NAMES[state])

    @staticmethod
    def getDataCheckState(app_name: str, stage: int) -> int:
        recorded = WarmStart._tables()[1].hget(app_name, WarmStart._check_field(stage))[1]
        names = WarmStart.CHECK_NAMES
        return names.index(recorded) if recorded in names else WarmStart.CHECK_IGNORED
