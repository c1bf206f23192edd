"""SONiC's warm-restart records and their rules, as sonic-swss-common's WarmStart keeps them
(common/warm_restart.cpp): the table and field names, the state names, whether a start is warm
and what restore_count becomes, and how the reconcile timer's value is read. No I/O: the blocking
layer (swssd.compat.warm_restart) and the daemon (swssd.orch.warm_restart) read and write the
records each with its own connections and follow these rules, so both behave as the C++ class.

The records: STATE_DB `WARM_RESTART_ENABLE_TABLE|system` and `|<container>` field `enable`
(the knobs warm-reboot and `config warm_restart enable` set); STATE_DB
`WARM_RESTART_TABLE|<app>` fields `restore_count`, `state`, `shutdown_check`, `restore_check`;
CONFIG_DB `WARM_RESTART|<container>` field `<app>_timer`.
"""

from __future__ import annotations

from typing import NamedTuple

#: STATE_DB: the knobs, per container and `system`
ENABLE_TABLE = "WARM_RESTART_ENABLE_TABLE"
#: STATE_DB: each application's record
STATE_TABLE = "WARM_RESTART_TABLE"
#: CONFIG_DB: each container's timers
CONFIG_TABLE = "WARM_RESTART"
SYSTEM_KEY = "system"
ENABLE_FIELD = "enable"
RESTORE_COUNT_FIELD = "restore_count"
STATE_FIELD = "state"
#: the C++ MAXIMUM_WARMRESTART_TIMER_VALUE: a larger `<app>_timer` is not used
MAXIMUM_TIMER = 9999

#: WarmStart::WarmStartState, in the enum's order
INITIALIZED, RESTORED, REPLAYED, RECONCILED, WSDISABLED, WSUNKNOWN = range(6)
STATE_NAMES = ("initialized", "restored", "replayed", "reconciled", "disabled", "unknown")
#: WarmStart::DataCheckState, in the enum's order
CHECK_NAMES = ("ignored", "passed", "failed")


class WarmStartCheck(NamedTuple):
    """What checkWarmStart decides: whether this start is warm (and warm because of the system
    knob), and the restore_count to write (None: leave it)."""

    warm: bool
    system: bool
    restore_count: str | None


def knobs(system_enable: str | None, container_enable: str | None) -> tuple[bool, bool]:
    """(warm restart enabled, enabled by the system knob) from the two `enable` values: on when
    "true", exactly, as checkWarmStart compares them."""
    system = system_enable == "true"
    return system or container_enable == "true", system


def check_warm_start(enabled: bool, system: bool, restore_count: str | None, increment: bool = True) -> WarmStartCheck:
    """WarmStart::checkWarmStart's rule, given the knobs (knobs()): warm when enabled and a
    restore_count is on record, which is then incremented (unless `increment` is off); a start with
    the knobs off, or with no restore_count (the database was flushed), is cold and records 0."""
    if not enabled:
        return WarmStartCheck(False, system, "0")
    if not restore_count:
        return WarmStartCheck(False, False, "0")
    if not increment:
        return WarmStartCheck(True, system, None)
    return WarmStartCheck(True, system, str(_strtoul(restore_count)[0] + 1))


def timer_seconds(value: str | None) -> int:
    """WarmStart::getWarmStartTimer's reading of `<app>_timer`: strtoul with base 0 (decimal,
    0x hex, 0 octal; what follows the number is ignored); 0 (not set) when the value is empty,
    not a number, 0 or above MAXIMUM_TIMER."""
    seconds, ok = _strtoul(value or "", base=0)
    return seconds if ok and 0 < seconds <= MAXIMUM_TIMER else 0


def state_of(name: str | None) -> int:
    """The WarmStartState a recorded `state` names; WSUNKNOWN for anything else."""
    return STATE_NAMES.index(name) if name in STATE_NAMES else WSUNKNOWN


def check_field(shutdown: bool) -> str:
    """The record's field of a data check: `shutdown_check` or `restore_check`."""
    return "shutdown_check" if shutdown else "restore_check"


def _strtoul(text: str, base: int = 10) -> tuple[int, bool]:
    """C's strtoul, as far as these records need it: leading blanks, an optional sign, the
    longest run of digits (base 0: a 0x or 0 prefix picks 16 or 8); (value, whether digits were
    found). A negative number wraps as C's does, so it is never a valid timer."""
    s = text.lstrip(" \t\n\r\f\v")
    negative = s[:1] == "-"
    if s[:1] in "+-":
        s = s[1:]
    if base == 0:
        if s[:2].lower() == "0x" and s[2:3] and s[2:3] in "0123456789abcdefABCDEF":
            base, s = 16, s[2:]
        elif s[:1] == "0":
            base = 8
        else:
            base = 10
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:base]
    end = 0
    while end < len(s) and s[end].lower() in digits:
        end += 1
    if end == 0:
        return 0, False
    value = int(s[:end], base)
    if value >= 2**64:
        return 2**64 - 1, True
    return ((2**64 - value) % 2**64 if negative else value), True
