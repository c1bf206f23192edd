"""Logger: the binding's process-wide logger object, its priorities and minimum priority.

Only the level API is provided (getInstance, setMinPrio/getMinPrio, the SWSS_* priorities and
their names); messages are logged through Python's logging as swssd.compat. Linking the level to
LOGLEVEL_DB (linkToDb*) and the output switch are not provided yet.
"""

from __future__ import annotations

import logging


class Logger:
    """Logger.getInstance(): one per process, as in C++."""

    SWSS_EMERG = 0
    SWSS_ALERT = 1
    SWSS_CRIT = 2
    SWSS_ERROR = 3
    SWSS_WARN = 4
    SWSS_NOTICE = 5
    SWSS_INFO = 6
    SWSS_DEBUG = 7

    _NAMES = ("EMERG", "ALERT", "CRIT", "ERROR", "WARN", "NOTICE", "INFO", "DEBUG")
    _LEVELS = (logging.CRITICAL, logging.CRITICAL, logging.CRITICAL, logging.ERROR, logging.WARNING,
               logging.INFO, logging.INFO, logging.DEBUG)
    _instance: Logger | None = None
    _min_prio = SWSS_NOTICE

    @staticmethod
    def getInstance() -> Logger:
        if Logger._instance is None:
            Logger._instance = Logger()
        return Logger._instance

    @staticmethod
    def setMinPrio(prio: int) -> None:
        """Messages below `prio` are dropped (the C++ default is SWSS_NOTICE)."""
        if not Logger.SWSS_EMERG <= prio <= Logger.SWSS_DEBUG:
            raise ValueError(f"priority {prio} is not one of SWSS_EMERG..SWSS_DEBUG (0..7)")
        Logger._min_prio = prio

    @staticmethod
    def getMinPrio() -> int:
        return Logger._min_prio

    @staticmethod
    def priorityToString(prio: int) -> str:
        return Logger._NAMES[prio]

    def write(self, prio: int, message: str) -> None:
        """Log `message` at `prio` if it is not below the minimum priority."""
        if prio <= Logger._min_prio:
            logging.getLogger("swssd.compat").log(Logger._LEVELS[prio], "%s", message)
