"""Seeded fault schedules: which faults hit a run, when, and how the handlers misbehave.

A schedule is a pure function of its seed, so a failing run is replayed by its seed alone (the
interleaving with the daemon's own timing is not, as in any campaign against real processes).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

#: Every fault the runner knows, in a fixed order (seed % len picks the one a schedule must hold).
FAULT_KINDS: tuple[str, ...] = (
    "daemon_sigkill",       # SIGKILL, start again at once
    "daemon_sigkill_burst", # 3-4 SIGKILLs about 1.3 s apart, each followed by a start (a restart loop)
    "daemon_sigterm",       # SIGTERM (must exit 0), start again
    "daemon_stop_cont",     # SIGSTOP, a pause, SIGCONT
    "redis_restart",        # SIGTERM redis-server (AOF written), start it again: nothing lost
    "redis_kill",           # SIGKILL redis-server (appendfsync always), start it again: nothing lost
    "redis_wipe",           # restart without persistence: everything gone, the producers write their truth again
    "client_kill_pubsub",   # CLIENT KILL every pub/sub connection
    "client_kill_normal",   # CLIENT KILL every command connection not the campaign's own
    "client_pause",         # CLIENT PAUSE ALL for a while
    "notify_off",           # CONFIG SET notify-keyspace-events ""
    "script_flush",         # SCRIPT FLUSH
    "proxy_delay",          # the daemon's proxy delays every chunk for a while
    "proxy_stall",          # the proxy forwards nothing for a while, connections kept
    "proxy_cut",            # the proxy closes every connection
)


@dataclass(frozen=True)
class Fault:
    at: float        # seconds after the workload started (a fault never starts before the previous ended)
    kind: str
    length: float    # how long a timed fault lasts (pause, stall, delay, SIGSTOP); 0 for the others


@dataclass(frozen=True)
class HandlerFaults:
    """Per handler call, independently: sleep, raise Retry, raise an error (retried with backoff)."""

    slow_rate: float = 0.0
    slow_seconds: float = 0.0
    retry_rate: float = 0.0
    fail_rate: float = 0.0


@dataclass(frozen=True)
class Schedule:
    seed: int
    seconds: float
    faults: tuple[Fault, ...]
    handler: HandlerFaults = field(default_factory=HandlerFaults)
    #: the kinds this schedule was drawn from, and whether the blocking layer's clients run
    kinds: tuple[str, ...] = FAULT_KINDS
    blocking: bool = True

    def describe(self) -> str:
        faults = ", ".join(f"{f.at:.1f}s {f.kind}" + (f" {f.length:.1f}s" if f.length else "") for f in self.faults)
        return f"seed {self.seed}: {faults or 'no faults'}; handlers {asdict(self.handler)}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


TIMED = {"daemon_stop_cont": (0.3, 2.5), "client_pause": (0.2, 1.2), "proxy_delay": (0.5, 2.5),
         "proxy_stall": (0.5, 3.0)}


def generate(seed: int, seconds: float = 5.0, faults: tuple[int, int] = (2, 4),
             kinds: tuple[str, ...] = FAULT_KINDS, blocking: bool = True) -> Schedule:
    """The schedule of `seed`: `faults` (min, max) faults within the first `seconds`, one of them
    always `kinds[seed % len(kinds)]` so consecutive seeds cover every kind."""
    rng = random.Random(seed)
    count = rng.randint(*faults)
    chosen = [kinds[seed % len(kinds)]] + [rng.choice(kinds) for _ in range(count - 1)]
    rng.shuffle(chosen)
    times = sorted(rng.uniform(0.3, max(0.4, seconds - 0.8)) for _ in chosen)
    out = tuple(Fault(round(at, 2), kind, round(rng.uniform(*TIMED[kind]), 2) if kind in TIMED else 0.0)
                for at, kind in zip(times, chosen))
    handler = HandlerFaults(
        slow_rate=rng.choice((0.0, 0.01, 0.05)), slow_seconds=round(rng.uniform(0.02, 0.2), 3),
        retry_rate=rng.choice((0.0, 0.02, 0.1)), fail_rate=rng.choice((0.0, 0.02, 0.05)),
    )
    return Schedule(seed, seconds, out, handler, kinds, blocking)
