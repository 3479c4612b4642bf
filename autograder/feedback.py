"""How a check talks to a learner: one exception type and the wording of common failures.

A check raises :class:`CheckFailed` with a message that says what to do next (blank exercise) or
what is wrong (which entry, by how much, a hint for a known mistake) -- never the answer.
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable


class CheckFailed(AssertionError):
    """A learner's answer did not pass a check. The message is written for the learner."""


def not_written(name: str) -> CheckFailed:
    return CheckFailed(
        f"`{name}` is not written yet: it still raises NotImplementedError.\n"
        f"Replace `raise NotImplementedError()` in the cell that defines `{name}` with your code, "
        "run that cell, then run this test cell again."
    )


_CHECKER_DIR = os.path.dirname(os.path.abspath(__file__))


def innermost_function(exc: BaseException, default: str) -> str:
    """The learner's function that actually raised: a written `backward` calling a blank
    `topological_order` should name `topological_order`, not `backward`."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        learners = os.path.dirname(os.path.abspath(code.co_filename)) != _CHECKER_DIR and \
            "site-packages" not in code.co_filename and not code.co_filename.startswith("<frozen")
        if learners and code.co_name not in ("<module>", "<lambda>", "<listcomp>", "<dictcomp>", "<genexpr>"):
            frames.append(code)
        tb = tb.tb_next
    if len(frames) < 2 or frames[-1] is frames[0]:
        return default  # the function the check called is itself the blank one
    return getattr(frames[-1], "co_qualname", frames[-1].co_name)


def call_learner(fn: Callable, *args: Any, name: str | None = None, **kwargs: Any) -> Any:
    """Call the learner's function; turn a blank stub or a crash into a readable failure."""
    name = name or getattr(fn, "__name__", "your function")
    if not callable(fn):
        raise CheckFailed(f"`{name}` should be a function, but it is a {type(fn).__name__}.")
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as exc:
        raise not_written(innermost_function(exc, name)) from None
    except CheckFailed:
        raise
    except Exception as exc:  # the learner's code crashed: say where, in their terms
        shown = ", ".join([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()])
        raise CheckFailed(
            f"`{name}({shown})` raised {type(exc).__name__}: {exc}\n"
            "Run your function on these inputs in a cell of your own to see where it fails."
        ) from exc


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def as_float(value: Any, what: str) -> float:
    """A learner's number as a Python float, or a failure that says what came back instead."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CheckFailed(f"{what} should be a number, but it is {_short(value)} ({type(value).__name__}).") from None
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
