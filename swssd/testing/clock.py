"""A virtual clock for OrchHarness: time moves only when the test says so, so retry intervals,
backoff and handler time-outs take no real time and happen at exactly the same point every run."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class TimerHandle:
    """A callback the clock runs at `when`, unless cancelled first."""

    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """`time()` and `call_at()` as an event loop has them (what swssd.orch.worker.Timers asks for),
    on a time that starts at `start` and moves only by `advance_to()`."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._timers: list[tuple[float, int, TimerHandle]] = []
        self._order = itertools.count()

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None], /) -> TimerHandle:
        handle = TimerHandle(when, callback)
        heapq.heappush(self._timers, (when, next(self._order), handle))
        return handle

    def next_timer(self) -> float | None:
        """When the next timer not cancelled is due, if any."""
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def advance_to(self, when: float) -> None:
        """Move the time to `when` (never back), running the timers due by then in time order."""
        while (due := self.next_timer()) is not None and due <= when:
            _, _, handle = heapq.heappop(self._timers)
            self.now = max(self.now, due)
            handle.callback()
        self.now = max(self.now, when)
