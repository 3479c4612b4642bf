"""Start a kernel, and try again when the start fails (a busy machine, a slow file system, a kernel
killed while it started): a failed start is never a learner's 0.

    await start_with_retries(start, clean_up, attempts=3, pause_s=1.0) -> failures before the success
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

ATTEMPTS = 3


class KernelStartFailed(RuntimeError):
    """Every attempt failed; the message lists each failure."""


async def start_with_retries(
    start: Callable[[], Awaitable[None]],
    clean_up: Callable[[], Awaitable[None]],
    attempts: int = ATTEMPTS,
    pause_s: float = 1.0,
) -> list[str]:
    """await start() until it succeeds, awaiting clean_up() after each failure (to leave no half-started
    kernel). Returns the failures that came before the success; raises KernelStartFailed after `attempts`."""
    failures: list[str] = []
    for attempt in range(1, attempts + 1):
        try:
            await start()
            return failures
        except Exception as exc:  # noqa: BLE001 -- any failure to start is retried the same way
            failures.append(f"attempt {attempt}: {type(exc).__name__}: {exc}"[:500])
            try:
                await clean_up()
            except Exception:  # noqa: BLE001 -- a kernel that never started may not clean up cleanly
                pass
            if attempt < attempts:
                await asyncio.sleep(pause_s * attempt)
    raise KernelStartFailed("; ".join(failures))
