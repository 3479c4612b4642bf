"""How a probe runs a learner's Triton kernel, and how a kernel check's probe records it.

`record` is what the probe of every kernel check returns in the learner's process: it takes the kernel's text once
(coursetools.kernel_text) and runs nothing. Where the text then runs -- a kernel runner's child while a submission
is graded, this process in a learner's own notebook -- the notebooks' kernel probes launch it through
`kernel_launcher`: compiled on a GPU where there is one and Triton runs compiled, else in Triton's interpreter.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from coursetools.device import triton_mode
from coursetools.kernel_text import NotAKernel, take

from ..feedback import CheckFailed, not_written
from ..registry import ProbeData


def kernel_device() -> str:
    """Where tensors handed to the learner's Triton Function must live."""
    return "cpu" if triton_mode() == "interpreter" else "cuda"


def kernel_launcher(kernel: Any, name: str) -> tuple[Any, str, Callable[[], Any]]:
    """(launcher, device, context) for running the learner's kernel: compiled on the GPU where there is one and
    Triton runs compiled; else in the interpreter on the CPU, in a context where Triton's own @jit helpers
    (tl.sigmoid, tl.softmax ...) run as Python, which they do not when Triton was imported in compiled mode."""
    from triton.runtime.jit import JITFunction

    if type(kernel) is JITFunction and torch.cuda.is_available() and triton_mode() != "interpreter":
        return JITFunction(kernel.fn), "cuda", _nothing  # the probe's own wrapper of the learner's function
    return interpreted(kernel, name), "cpu", helpers_as_python


@contextmanager
def _nothing():
    yield


@contextmanager
def helpers_as_python() -> Iterator[None]:
    """While an interpreted kernel runs: a @triton.jit function it calls (compiled-mode object) runs its Python body."""
    from triton.runtime.jit import JITFunction

    before = JITFunction.__dict__.get("__call__")
    JITFunction.__call__ = lambda self, *args, **kwargs: self.fn(*args, **kwargs)
    try:
        yield
    finally:
        if before is None:
            del JITFunction.__call__
        else:
            JITFunction.__call__ = before


def interpreted(kernel: Any, name: str) -> Any:
    """The learner's kernel as an interpreted Triton function (whatever mode the notebook compiled it in)."""
    try:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction
    except ImportError:  # pragma: no cover - triton is pinned in requirements.txt
        raise CheckFailed("Triton is not installed in this environment: `pip install -r requirements.txt`.") from None
    # exactly what @triton.jit makes (a subclass could run anything), re-wrapped by the probe around the learner's
    # own Python function: what runs is that function, in Triton's interpreter
    if type(kernel) in (InterpretedFunction, JITFunction) and callable(getattr(kernel, "fn", None)):
        return InterpretedFunction(kernel.fn)
    raise CheckFailed(
        f"`{name}` should be a Triton kernel (a function decorated with @triton.jit, as Triton makes it), "
        f"but it is a {type(kernel).__name__}."
    )


def record(kernel: Any) -> ProbeData:
    """What a kernel check's probe hands the judges from the learner's process: the kernel's text, taken once
    (coursetools.kernel_text), and nothing it ran. The judges run that text on the check's cases and compile it,
    where grading decides nothing (autograder/judges/kernel_runs.py)."""
    try:
        record = take(kernel)
    except NotAKernel:
        name = getattr(kernel, "__name__", None) or "the kernel"
        raise CheckFailed(
            f"`{name}` should be a Triton kernel (a function decorated with @triton.jit, as Triton makes it), "
            f"but it is a {type(kernel).__name__}."
        ) from None
    if blank(record["functions"].get(record["entry"], "")):
        raise not_written(record["entry"])
    return {"kernel": record}


def blank(text: str) -> bool:
    """Whether the function's text is the released stub: its body (a docstring aside) is `raise NotImplementedError`."""
    try:
        body = ast.parse(text).body[0].body  # type: ignore[attr-defined]
    except (SyntaxError, IndexError, AttributeError):
        return False
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise):
        return False
    exc = body[0].exc
    exc = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
