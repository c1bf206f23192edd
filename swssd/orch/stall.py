"""Telling a stalled table from a slow or a waiting one.

A table is stalled when its worker has work due and has finished no handler call (handled,
failed, timed out or Retry) for the table's `stall_after` seconds: a handler that swallows the
watchdog's cancellation, a handler_timeout longer than stall_after, a worker that missed its
wake-up. The daemon then reports it as it reports a dead worker: /health 503 naming the table,
`swssd_ready` 0, `swssd_table_stalled` 1, `swssd status` unhealthy, no WATCHDOG=1 (so systemd
restarts it; the task in the handler is set aside after set_aside_after_crashes such ends,
crash_guard.py). It is healthy again as soon as a handler call ends.

Not stalled: a slow handler that finishes tasks (each end is progress), a table with nothing
pending, and a worker asleep until a known time, as tasks waiting for their backoff or for
`Retry`'s retry_interval are (waiting is what they were told to do); the clock starts again
when that time comes and the worker has not woken.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from typing import Protocol

import structlog

from ..ops.sdnotify import SystemdNotifier

log = structlog.get_logger("swssd.daemon")

#: seconds between two looks at the tables (the log lines and systemd's STATUS=)
WATCH_INTERVAL = 1.0


class ProgressClock:
    """A worker's last sign of progress, and when it sleeps, until when. Loop times throughout;
    read from the metrics thread too (plain float reads)."""

    __slots__ = ("_asleep_until", "_progress_at", "_time")

    def __init__(self, time: Callable[[], float]) -> None:
        self._time = time
        self._progress_at = time()
        #: None while the worker runs; else the time it sleeps until (inf: until woken)
        self._asleep_until: float | None = None

    def progressed(self, now: float) -> None:
        """A handler call ended at loop time `now` (whatever its outcome)."""
        self._progress_at = now

    def sleeping(self, until: float | None) -> None:
        """The worker waits for new work (`until` None) or until a task may run again."""
        self._asleep_until = math.inf if until is None else until

    def woken(self) -> None:
        """Work was handed over or a wake-up sent: due now, whatever the worker slept until."""
        if self._asleep_until is not None:
            self._asleep_until = min(self._asleep_until, self._time())

    def running(self) -> None:
        """The worker woke and looks at its pending map: the clock starts from now."""
        self._asleep_until = None
        self._progress_at = self._time()

    def without_progress(self) -> float:
        """Seconds the worker has had work due and not ended a handler call (0 while asleep
        until a time still to come). The caller says whether anything is pending at all."""
        since = self._progress_at
        until = self._asleep_until
        if until is not None:
            since = max(since, until)
        return max(0.0, self._time() - since)


class Stallable(Protocol):
    """A table's worker, as the watcher sees it."""

    @property
    def db_name(self) -> str: ...
    @property
    def table(self) -> str: ...
    @property
    def stalled(self) -> bool: ...
    @property
    def pending_count(self) -> int: ...
    def without_progress(self) -> float: ...


def stalled_tables(workers: Sequence[Stallable]) -> list[Stallable]:
    """The stalled ones among `workers`."""
    return [w for w in list(workers) if w.stalled]


async def watch_stalls(
    workers: Sequence[Stallable], notifier: SystemdNotifier, status_line: Callable[[], str],
) -> None:
    """One log line when a table stalls (and again each minute while it stays stalled), one
    when it makes progress again; systemd's STATUS= follows."""
    said: dict[Stallable, float] = {}
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(WATCH_INTERVAL)
        now = loop.time()
        stalled = set(stalled_tables(workers))
        for worker in stalled:
            if now - said.get(worker, -math.inf) >= 60.0:
                log.error("table stalled: work pending and no handler call ended", db=worker.db_name,
                          table=worker.table, without_progress=round(worker.without_progress(), 1),
                          pending=worker.pending_count)
                if worker not in said:
                    notifier.status(status_line())
                said[worker] = now
        for worker in [w for w in said if w not in stalled]:
            del said[worker]
            log.info("table progressing again", db=worker.db_name, table=worker.table)
            notifier.status(status_line())
