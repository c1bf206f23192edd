"""One backoff for every retry loop: redis-py's exponential policies, with the count of failures
in a row kept here.

The count stops growing once the delay reaches its cap: redis-py computes `base * 2 ** failures`,
which overflows a float after about a thousand failures (half an hour of a Redis outage at 2 s).
"""

from __future__ import annotations

import asyncio

from redis.backoff import AbstractBackoff, EqualJitterBackoff, ExponentialBackoff


class Backoff:
    """Delays that double from `initial` up to `maximum` with each failure in a row; `reset()`
    after a success. With `jitter`, each delay is drawn between half of it and all of it, so that
    many retrying clients do not come back at the same instant."""

    def __init__(self, initial: float, maximum: float, jitter: bool = False) -> None:
        policy = EqualJitterBackoff if jitter else ExponentialBackoff
        self._policy: AbstractBackoff = policy(cap=maximum, base=initial)
        #: failures in a row past which the delay stays at `maximum`
        self._capped_at = _doublings(initial, maximum)
        self.failures = 0

    def delay(self, failures: int) -> float:
        """The delay after `failures` failures in a row."""
        return self._policy.compute(min(failures, self._capped_at))

    def next(self) -> float:
        """The delay before the next attempt, counting this failure."""
        delay = self.delay(self.failures)
        self.failures = min(self.failures + 1, self._capped_at)
        return delay

    def reset(self) -> None:
        """A success: the next failure waits `initial` again."""
        self.failures = 0

    async def sleep(self) -> None:
        """Wait the next delay."""
        await asyncio.sleep(self.next())


def retry_delay(attempt: int, initial: float, maximum: float) -> float:
    """The jittered delay before retry number `attempt` (1 for the first) of a failed task."""
    return Backoff(initial, maximum, jitter=True).delay(attempt - 1)


def _doublings(initial: float, maximum: float) -> int:
    """How many doublings take `initial` to `maximum` (beyond that the delay stays capped)."""
    if initial <= 0:  # zero never doubles into anything (it used to loop here forever): no wait, ever
        return 0
    n = 0
    while initial * 2**n < maximum:
        n += 1
    return n
