"""Periodic work of an Orch: coroutines a plugin declares with `@timer(...)`, run by the daemon on
its event loop, as orchagent's SelectableTimers and the loops beside a SONiC Python daemon's Select.

Each timer runs in a task of its own, one call at a time: a call never overlaps the one before.
Calls come at fixed ticks, `first_delay` after start (one interval by default, as a
SelectableTimer's first expiry) and then every `interval`, each one a random part of `jitter`
after its tick; a tick a call ran past is skipped and counted, never made up in a burst. A call
is bounded by the plugin's handler_timeout; an exception or a time-out is logged with its
traceback and counted, and the timer goes on. A call still running after the timer's
`stall_after` (one that swallowed the time-out's cancellation) is a stall, reported as a stalled
table is: /health 503 naming it, `swssd_ready` 0, no systemd watchdog ping. At shutdown every
timer stops (no new call; a running one gets until shutdown_timeout) before any plugin's stop().
"""

from __future__ import annotations

import asyncio
import math
import random
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

import structlog

from ..errors import ConfigError
from ..ops.metrics import LATENCY_BUCKETS
from .config import MAX_SECONDS, Config, OrchConfig
from .orch import Orch, TimerSpec, declared_timers
from .stall import ProgressClock

log = structlog.get_logger("swssd.daemon")

#: Seconds between two log lines about a timer that stays stalled.
STALL_REPEAT = 60.0


def resolve_timers(orch: Orch, oc: OrchConfig, index: int, config: Config) -> list[TimerSpec]:
    """The plugin's timers with its config entry's `timers` overrides applied, each checked:
    ConfigError names the field (the override's, or the plugin's for a declared value)."""
    path = config.path
    declared = declared_timers(type(orch))
    by_name: dict[str, TimerSpec] = {}
    for spec in declared:
        if spec.name in by_name:
            raise ConfigError(path, f"orchs.{index}.plugin", f"plugin {oc.display_name!r}: two timers are "
                              f"named {spec.name!r} (methods {by_name[spec.name].method} and {spec.method})")
        by_name[spec.name] = spec
    for name in oc.timers:
        if name not in by_name:
            has = ", ".join(sorted(by_name)) or "none"
            raise ConfigError(path, f"orchs.{index}.timers.{name}",
                              f"plugin {oc.display_name!r} has no timer {name!r} (its timers: {has})")
    resolved = []
    for spec in declared:
        override = oc.timers.get(spec.name)
        changes = override.model_dump(exclude_none=True) if override is not None else {}
        merged = replace(spec, **changes)
        problem = _problem(merged)
        if problem is not None:
            fields, text = problem
            changed = [f for f in fields if f in changes]
            field = f"orchs.{index}.timers.{spec.name}.{changed[0]}" if changed else f"orchs.{index}.plugin"
            raise ConfigError(path, field, f"plugin {oc.display_name!r}: timer {spec.name!r}: {text}")
        resolved.append(merged)
    return resolved


def _problem(spec: TimerSpec) -> tuple[tuple[str, ...], str] | None:
    """(the fields involved, what is wrong) for values no timer can run with, else None."""
    for field, value, zero_ok in (("interval", spec.interval, False), ("jitter", spec.jitter, True),
                                  ("first_delay", spec.first_delay, True), ("stall_after", spec.stall_after, False)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return (field,), f"{field} must be a number of seconds, not {value!r}"
        low = "at least 0" if zero_ok else "above 0"
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok) or value > MAX_SECONDS:
            return (field,), f"{field} must be {low} and at most {MAX_SECONDS:g} seconds, not {value!r}"
    if spec.jitter > spec.interval:
        return ("jitter", "interval"), f"jitter {spec.jitter:g} s is longer than the interval {spec.interval:g} s"
    return None


class TimerStats:
    """Counters of one timer, read by the metrics."""

    __slots__ = ("failed", "latency_counts", "runs", "seconds", "skipped", "timed_out")

    def __init__(self) -> None:
        #: calls that ended, whatever their outcome
        self.runs = 0
        #: calls that raised (time-outs apart)
        self.failed = 0
        #: calls that ran past handler_timeout
        self.timed_out = 0
        #: ticks skipped because a call ran past them
        self.skipped = 0
        self.seconds = 0.0
        self.latency_counts = [0] * (len(LATENCY_BUCKETS) + 1)


class TimerRun:
    """One timer of one plugin, running in its own task (see the module docstring)."""

    def __init__(self, orch: Orch, spec: TimerSpec, handler_timeout: float, stall_after: float) -> None:
        self.orch = orch
        self.spec = spec
        self.name = spec.name
        self.handler_timeout = handler_timeout
        self.stall_after = spec.stall_after or stall_after
        self.stats = TimerStats()
        self._method: Callable[[], Awaitable[None]] = getattr(orch, spec.method)
        self._loop = asyncio.get_running_loop()
        self.clock = ProgressClock(self._loop.time)
        self._task: asyncio.Task[None] | None = None
        self._in_call = False
        self._stopping = False
        self._stall_check: asyncio.TimerHandle | None = None
        self._stall_logged = False
        self._log = log.bind(orch=orch.name, timer=spec.name)

    @property
    def orch_name(self) -> str:
        return self.orch.name

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The timer's task once started."""
        return self._task

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()

    def without_progress(self) -> float:
        """Seconds the running call has gone on (0 between calls)."""
        return self.clock.without_progress() if self._in_call else 0.0

    @property
    def stalled(self) -> bool:
        """Whether one call has gone on for stall_after seconds."""
        return self.without_progress() >= self.stall_after

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.ensure_future(self._run())
        return self._task

    def halt(self) -> None:
        """No call after this one: a timer waiting for its tick ends now; a running call ends first."""
        self._stopping = True
        if self._task is not None and not self._in_call:
            self._task.cancel()

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        spec, loop = self.spec, self._loop
        tick = loop.time() + (spec.interval if spec.first_delay is None else spec.first_delay)
        try:
            while not self._stopping:
                at = tick + random.uniform(0.0, spec.jitter) if spec.jitter else tick
                self.clock.sleeping(at)
                await asyncio.sleep(max(0.0, at - loop.time()))
                if self._stopping:
                    return
                await self._call()
                tick += spec.interval
                now = loop.time()
                if now > tick:  # the call ran past the next tick(s): skip them, do not make them up
                    missed = math.floor((now - tick) / spec.interval) + 1
                    self.stats.skipped += missed
                    tick += missed * spec.interval
        finally:
            self._end_stall_check()

    async def _call(self) -> None:
        """One call under handler_timeout; whatever it raises is logged and counted."""
        loop = self._loop
        self._in_call = True
        self.clock.running()
        started = loop.time()
        self._stall_check = loop.call_at(started + self.stall_after, self._check_stall)
        deadline = asyncio.timeout(self.handler_timeout)
        try:
            async with deadline:
                await self._method()
        except Exception as exc:  # a plugin's failure must not end its timer
            if deadline.expired():
                self.stats.timed_out += 1
                self._log.error("timer call timed out", timeout=self.handler_timeout)
            else:
                self.stats.failed += 1
                self._log.error("timer failed", error=f"{type(exc).__name__}: {exc}", exc_info=exc)
        else:
            if deadline.expired():  # it swallowed the cancellation and ended later
                self.stats.timed_out += 1
                self._log.error("timer call ran past handler_timeout and ignored its cancellation",
                                timeout=self.handler_timeout, seconds=round(loop.time() - started, 3))
        finally:
            self._in_call = False
            now = loop.time()
            self.clock.progressed(now)
            self.stats.runs += 1
            self.stats.seconds += now - started
            self.stats.latency_counts[bisect_left(LATENCY_BUCKETS, now - started)] += 1
            self._end_stall_check()

    def _check_stall(self) -> None:
        """stall_after passed with the call still running: say so (again each STALL_REPEAT)."""
        self._stall_check = self._loop.call_later(STALL_REPEAT, self._check_stall)
        self._stall_logged = True
        self._log.error("timer stalled: one call has gone on past stall_after", stall_after=self.stall_after,
                        without_progress=round(self.without_progress(), 1))

    def _end_stall_check(self) -> None:
        if self._stall_check is not None:
            self._stall_check.cancel()
            self._stall_check = None
        if self._stall_logged:
            self._stall_logged = False
            self._log.info("timer progressing again")


class Timers:
    """Every plugin's timers in one daemon: started together once the daemon is ready, stopped
    together at shutdown before the plugins' stop()."""

    def __init__(self) -> None:
        self.runs: list[TimerRun] = []
        #: called with a timer's task when it ends by an error of the daemon's own (a crash)
        self.on_crash: Callable[[asyncio.Task[None]], Any] = lambda task: None

    def add(self, orch: Orch, specs: Sequence[TimerSpec], handler_timeout: float, stall_after: float) -> None:
        self.runs.extend(TimerRun(orch, spec, handler_timeout, stall_after) for spec in specs)

    def start(self) -> None:
        for run in self.runs:
            run.start().add_done_callback(self.on_crash)
        if self.runs:
            log.info("timers started", timers=[f"{r.orch_name}.{r.name} every {r.spec.interval:g}s" for r in self.runs])

    def halt(self) -> None:
        """Shutdown begins: no new calls."""
        for run in self.runs:
            run.halt()

    async def stop(self, deadline: float, force: asyncio.Event) -> None:
        """Until the running calls end (or `deadline`, loop time, or `force`), then cancel what
        is left and wait a little for it: a call may swallow the cancellation."""
        self.halt()
        tasks = [r.task for r in self.runs if r.task is not None and not r.task.done()]
        if not tasks:
            return
        budget = max(0.1, deadline - asyncio.get_running_loop().time())
        ended = asyncio.ensure_future(asyncio.wait(tasks, timeout=budget))
        forced = asyncio.ensure_future(force.wait())
        await asyncio.wait((ended, forced), return_when=asyncio.FIRST_COMPLETED)
        forced.cancel()
        ended.cancel()
        left = [t for t in tasks if not t.done()]
        if left:
            log.warning("shutdown: cancelling timer calls still running", timers=len(left))
            for task in left:
                task.cancel()
            await asyncio.wait(left, timeout=1.0)

    def stalled(self) -> list[TimerRun]:
        return [r for r in list(self.runs) if r.stalled]
