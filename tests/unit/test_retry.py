"""Retry intervals: IntervalSeconds x BackoffRate^(n-1), capped, optionally jittered."""

import random

from faastlane.runtime.asl.model import Retrier
from faastlane.runtime.interpreter.states import retry_delay


def test_defaults_are_one_second_doubling() -> None:
    retrier = Retrier(error_equals=("States.ALL",))
    assert [retry_delay(retrier, n) for n in (1, 2, 3)] == [1, 2, 4]


def test_backoff_and_cap() -> None:
    retrier = Retrier(("E",), interval_seconds=3, backoff_rate=1.5, max_delay_seconds=5)
    assert retry_delay(retrier, 1) == 3
    assert retry_delay(retrier, 2) == 4.5
    assert retry_delay(retrier, 3) == 5  # 6.75 capped at MaxDelaySeconds


def test_full_jitter_stays_between_zero_and_the_delay() -> None:
    retrier = Retrier(("E",), interval_seconds=2, backoff_rate=2.0, jitter_strategy="FULL")
    random.seed(7)
    delays = [retry_delay(retrier, 3) for _ in range(200)]
    assert all(0 <= d <= 8 for d in delays)
    assert len(set(delays)) > 100  # really random, not the fixed delay
