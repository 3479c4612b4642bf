"""The one way a probe calls learner code: a time limit, a recursion cap, and failures in the learner's terms.

    out = call_learner(fn, *args, name="backward", call="nodes[-1].backward()", seconds=10)

Every way the call can go wrong becomes a :class:`CheckFailed` whose message names the learner's
function that actually failed (the innermost frame of the learner's code, not the probe's):
a blank stub ("not written yet"), a crash (with a hint when ``crash_hint`` knows the mistake), runaway
recursion, or running past ``seconds``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from ..feedback import CheckFailed, not_written, short

DEFAULT_SECONDS = 60.0  # a probe's single call; the grader's cell timeout is the outer bound
RECURSION_HEADROOM = 2000  # nested calls allowed beyond the probe's own depth

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # autograder/
_ANONYMOUS = ("<module>", "<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")


class OutOfTime(BaseException):
    """Raised by the alarm inside the learner's code (a BaseException, so that `except Exception`
    there does not swallow it)."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the body after `seconds` (main thread only: signals are delivered there)."""
    usable = seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def on_alarm(signum, frame):
        raise OutOfTime()

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_timer[0] > 0:  # someone else's alarm was pending: give it back
            signal.setitimer(signal.ITIMER_REAL, *old_timer)


def _stack_depth() -> int:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


@contextmanager
def recursion_cap(extra: int = RECURSION_HEADROOM) -> Iterator[None]:
    """Lower (never raise) the recursion limit while learner code runs, so that code which recurses
    once per node fails with RecursionError instead of overflowing the C stack after the learner
    raised the limit with sys.setrecursionlimit."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(min(old, _stack_depth() + extra))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _is_learners(code) -> bool:
    filename = code.co_filename
    return not (
        os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
        or "site-packages" in filename
        or filename.startswith("<frozen")
    )


def innermost_function(exc: BaseException, default: str, by_own_name: bool = False) -> str:
    """The learner's function that actually raised: a written `backward` calling a blank
    `topological_order` is named `topological_order`, not `backward`. When the check called the
    blank function itself, it is named `default` (the check's name for it), unless `by_own_name`."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if _is_learners(code) and code.co_name not in _ANONYMOUS:
            frames.append(code)
        tb = tb.tb_next
    if not frames or not by_own_name and (len(frames) < 2 or frames[-1] is frames[0]):
        return default
    return getattr(frames[-1], "co_qualname", frames[-1].co_name)


_TENSOR_FUNCTION = torch.Tensor.__torch_function__
_NO_FUNCTION = torch._C._disabled_torch_function_impl
_DisableTorchFunction = torch._C.DisableTorchFunction


def _answers_for_itself(value: Any) -> bool:
    """A tensor of a subclass with a __torch_function__ of its own: every probe operation on it would be its to
    answer (clone, to, equal...). nn.Parameter and plain tensors are not."""
    if not isinstance(value, torch.Tensor) or type(value) is torch.Tensor:
        return False
    own = getattr(type(value), "__torch_function__", _TENSOR_FUNCTION)
    return getattr(own, "__func__", own) not in (getattr(_TENSOR_FUNCTION, "__func__", _TENSOR_FUNCTION), _NO_FUNCTION)


def plain_tensors(value: Any, depth: int = 0) -> Any:
    """The learner's return value with every tensor that would answer for itself seen as a plain tensor (the same
    memory, as_subclass taken with torch functions off): the probe's own operations on it are then PyTorch's.
    The learner's call itself ran with torch functions on, as it would in the learner's own code."""
    if depth > 6:
        return value
    if _answers_for_itself(value):
        with _DisableTorchFunction():
            return value.as_subclass(torch.Tensor)
    if type(value) in (tuple, list):
        return type(value)(plain_tensors(v, depth + 1) for v in value)
    if type(value) is dict:
        return {k: plain_tensors(v, depth + 1) for k, v in value.items()}
    return value


def call_learner(
    fn: Callable,
    *args: Any,
    name: str | None = None,
    call: str | None = None,
    seconds: float | None = DEFAULT_SECONDS,
    on_timeout: str = "",
    on_recursion: str = "",
    crash_hint: Callable[[Exception], str] | None = None,
    blank_by_own_name: bool = False,
    **kwargs: Any,
) -> Any:
    """Call the learner's `fn(*args, **kwargs)`; every way it can fail becomes a readable CheckFailed.

    name: the learner's name for `fn`; call: how the call is shown (default `name(args...)`, the arguments as they
    are when it fails);
    on_timeout / on_recursion: words appended to those messages; crash_hint(exc) -> "" or "\\nHint: ...";
    blank_by_own_name: a blank stub is named by its own name (a method installed under another name).
    """
    name = name or getattr(fn, "__name__", "your function")
    if not callable(fn):
        raise CheckFailed(f"`{name}` should be a function, but it is a {type(fn).__name__}.")

    def shown() -> str:  # for a message only: repr() of every tensor argument of every call cost more than the calls
        if call is not None:
            return call
        return f"{name}({', '.join([short(a) for a in args] + [f'{k}={short(v)}' for k, v in kwargs.items()])})"

    try:
        with recursion_cap(), time_limit(seconds):
            result = fn(*args, **kwargs)
        return plain_tensors(result)
    except NotImplementedError as exc:
        raise not_written(innermost_function(exc, name, blank_by_own_name)) from None
    except RecursionError:
        raise CheckFailed(
            f"`{shown()}` raised RecursionError{on_recursion}: your {name} recurses, once per node along a "
            "path, and Python allows only about a thousand nested calls. Use an explicit stack or "
            "queue (a list you append to and pop from) instead of calling a function from itself."
        ) from None
    except OutOfTime:
        raise CheckFailed(f"`{shown()}` did not finish within {seconds:g} s{on_timeout}") from None
    except CheckFailed:
        raise
    except Exception as exc:  # the learner's code crashed: say where, in their terms
        hint = crash_hint(exc) if crash_hint else ""
        raise CheckFailed(
            f"`{shown()}` raised {type(exc).__name__}: {exc}{hint}\n"
            "Run the same call in a cell of your own to see where it fails."
        ) from exc
