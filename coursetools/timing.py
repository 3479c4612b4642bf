"""Timing that is honest on a busy laptop: repeat, take the median, report seconds per call."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def seconds_per_call(fn: Callable[[], object], *, repeat: int = 5, min_time: float = 0.01) -> float:
    """Median over `repeat` rounds of the time one call of `fn()` takes.

    Each round calls `fn` enough times to last at least `min_time` seconds, so that the clock's
    resolution does not dominate very fast functions.
    """
    fn()  # warm-up: first calls pay for imports, caches, allocations
    number, elapsed = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time or number >= 1 << 20:
            break
        number *= 2
    rounds = [elapsed / number]
    for _ in range(repeat - 1):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return statistics.median(rounds)
