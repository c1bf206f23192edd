"""swssd.backoff: exponential delays, capped, reset, jitter within its bounds, no overflow."""

from __future__ import annotations

import pytest

from swssd.backoff import Backoff, retry_delay


def test_doubles_up_to_the_cap_and_resets() -> None:
    b = Backoff(0.05, 2.0)
    assert [b.next() for _ in range(8)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    b.reset()
    assert b.next() == 0.05


def test_a_long_outage_does_not_overflow() -> None:
    b = Backoff(0.05, 2.0)
    for _ in range(5000):
        assert b.next() <= 2.0
    assert b.failures < 10


@pytest.mark.parametrize("attempt", [1, 2, 3, 10, 100_000])
def test_retry_delay_is_jittered_within_half_and_all_of_the_capped_delay(attempt: int) -> None:
    full = min(30.0, 0.1 * 2 ** min(attempt - 1, 20))
    delays = {retry_delay(attempt, 0.1, 30.0) for _ in range(200)}
    assert all(full / 2 <= d <= full for d in delays)
    assert len(delays) > 1


def test_an_initial_delay_of_zero_means_no_wait_and_does_not_hang() -> None:
    backoff = Backoff(0, 5)
    assert [backoff.next() for _ in range(3)] == [0, 0, 0]
