"""How a check talks to a learner: one exception type and the wording of common failures.

Used on both sides: by the probes inside the sandbox and by the judges outside it.

A check raises :class:`CheckFailed` with a message that says what to do next (blank exercise) or
what is wrong (which entry, by how much, a hint for a known mistake) -- never the answer.
"""

from __future__ import annotations

import math
from typing import Any


class CheckFailed(AssertionError):
    """A learner's answer did not pass a check. The message is written for the learner; `verdict`, where the check
    has parts, is what they earned part by part."""

    verdict: Any = None


def not_written(name: str) -> CheckFailed:
    return CheckFailed(
        f"`{name}` is not written yet: it still raises NotImplementedError.\n"
        f"Replace `raise NotImplementedError()` in the cell that defines `{name}` with your code, "
        "run that cell, then run this test cell again."
    )


def short(value: Any, width: int = 40) -> str:
    """repr() of a learner's value, cut to `width` characters (a repr that crashes is named by its type)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 -- a learner object whose repr crashes
        text = f"<{type(value).__name__}>"
    return text if len(text) <= width else text[: width - 3] + "..."


def as_float(value: Any, what: str) -> float:
    """A learner's number as a Python float, or a failure that says what came back instead."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what} should be a number, but it is {short(value)} ({type(value).__name__}).") from None
    if math.isnan(number):
        raise CheckFailed(f"{what} is NaN (not a number): look for 0/0, log of a negative number or inf - inf.")
    return number


def relative_error(got: float, expected: float) -> float:
    return abs(got - expected) / max(abs(expected), 1e-12)


def close(got: float, expected: float, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    return abs(got - expected) <= atol + rtol * abs(expected)


def mismatch(what: str, got: float, expected: float) -> str:
    """Describe a wrong number without printing the right one: the size and direction of the error."""
    if expected != 0 and close(got, -expected, rtol=1e-7):
        return f"{what} has the wrong sign."
    ratio = got / expected if expected != 0 else math.inf
    if expected != 0 and math.isfinite(ratio) and abs(ratio - round(ratio)) < 1e-7 and round(ratio) not in (0, 1):
        return f"{what} is {round(ratio)} times too large."
    return f"{what} is off by {abs(got - expected):.3g} (relative error {relative_error(got, expected):.2g})."
