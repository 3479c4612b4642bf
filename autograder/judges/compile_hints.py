"""The idea behind a kernel the GPU compiler refuses, as the "compiles for a GPU" part's hint says it.

Triton's interpreter runs a kernel as Python, so it forgives what the compiler refuses; each hint names the idea
(what the compiler does differently) and never the line that fixes it. `for_screen` speaks to what the course's
screen refused before compiling (coursetools.kernel_screen), `for_compiler` to the compiler's own reason, and
`return_line` finds the line a reason without one points at.
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Any

DEFAULT = (
    "the interpreter runs a kernel as Python and forgives what Triton's compiler refuses: keep to the Triton "
    "language (tl functions on blocks, typed accumulators, loops over range)."
)
SCREEN_DEFAULT = "A Triton kernel holds Triton code only: tl functions, numbers, its arguments."
DEBUGGING = (
    "Triton compiles a kernel's text itself, and neither Python's debugger nor its string formatting exist there "
    "(they run only in the interpreter); to look at values from a kernel, tl.device_print and tl.static_print "
    "print in both."
)


def for_screen(problem: str) -> str:
    """The idea behind what the screen refused (its sentence names the construct)."""
    if "formatted string" in problem:
        return DEBUGGING
    if "not a @triton.jit one" in problem:
        return (
            "a kernel calls Triton's functions and @triton.jit functions only: the compiler compiles each function a "
            "kernel calls from its text, which a plain Python function does not offer it."
        )
    named = re.search(r"names `(\w+)`, which it neither takes nor defines", problem)
    if named and named.group(1) in ("breakpoint", "input", "exec", "eval"):
        return DEBUGGING
    if named and hasattr(builtins, named.group(1)):
        return (
            f"`{named.group(1)}` is one of Python's builtins, which exist in the interpreter only: a compiled kernel "
            "has the Triton language (tl.*, its own min, max and range) and nothing else of Python's."
        )
    return SCREEN_DEFAULT


# (a pattern of the compiler's reason, the hint: its {0}, {1} the pattern's groups), the first that matches
COMPILER_HINTS: list[tuple[str, str]] = [
    (
        r"Loop-carried variable.*<\[",
        "a variable that is a single number before the loop becomes a block of values in it. The compiler gives a "
        "loop variable one type and shape, the one it has before the loop, and the interpreter does not check it.",
    ),
    (
        r"Loop-carried variable \w+ has initial type (\w+) but is re-assigned to (\w+)",
        "a loop variable's type changes in the loop: it starts as {0} and becomes {1}. The compiler gives a loop "
        "variable the type it has before the loop (a Python int is int32 there, a Python float float32), whatever "
        "the data; the interpreter lets the type change.",
    ),
    (
        r"Loop-carried variable",
        "a loop variable's type changes in the loop. The compiler gives a loop variable the type it has before the "
        "loop (a Python int is int32 there, a Python float float32), whatever the data; the interpreter lets the "
        "type change.",
    ),
    (
        r"Break|Continue",
        "Triton's compiler has no break or continue: a loop runs every iteration it names. Bound the loop instead, "
        "or mask the work of the iterations you meant to skip.",
    ),
    (
        r"`return` statements inside",
        "Triton's compiler takes no return inside a loop: a kernel's loop runs every iteration it names, and what an "
        "iteration should not do is masked or bounded, never left early.",
    ),
    (
        r"is not defined$",
        "the compiler builds both sides of an `if` on run-time values: a variable used after it needs a value on "
        "every path through it, though the interpreter only follows the path it takes.",
    ),
    (
        r"Mismatched type for",
        "both sides of an `if` on run-time values must leave a variable with the same type and shape: after the if, "
        "the compiler knows one of them.",
    ),
    (
        r"static_range.*not a constexpr",
        "tl.static_range is unrolled while the kernel compiles, so its bounds must be known then: literals or "
        "tl.constexpr parameters, not values the launch passes as arguments.",
    ),
    (
        r"Cannot access global variable",
        "the compiler reads a global of the kernel's module only if it is a constant it can fold in (a "
        "tl.constexpr); any other value reaches a kernel as an argument. The interpreter reads any global.",
    ),
    (
        r"did not finish",
        "the compiler unrolls tl.static_range loops and constexpr branches completely: a kernel that loops over its "
        "data with range() compiles in a fraction of a second.",
    ),
    (
        r"'int' object has no attribute",
        "a launch turns an integer argument equal to 1 into a constant, a plain Python int (Triton specializes it, "
        "as it does the tl.constexpr parameters): it has no tensor methods there, though the interpreter, which "
        "passes every argument the same way, has them.",
    ),
    (
        r"returns a value",
        "a kernel hands its results back only through the memory it stores to: the compiler takes a kernel that "
        "returns nothing (a value is returned by the @triton.jit helpers a kernel calls).",
    ),
    (
        r"^tl\.static_assert",
        "a tl.static_assert of the kernel is false for this launch's constants: the check's launch is legal.",
    ),
    (
        r"cannot read the source",
        "define the kernel with def in a cell of its own: Triton compiles from the source it reads.",
    ),
]


def for_compiler(why: str) -> str:
    """The idea behind the compile error the compiler gave."""
    for pattern, hint in COMPILER_HINTS:
        found = re.search(pattern, why)
        if found:
            return hint.format(*found.groups())
    return DEFAULT


def return_line(record: Any) -> int | None:
    """The line (1 = the def line) of the first `return value` in the kernel's own body, if it has one: the compiler
    refuses it with "PassManager::run failed" and no line."""
    try:
        (fn,) = ast.parse(record["functions"][record["entry"]]).body
    except (KeyError, TypeError, ValueError, SyntaxError):
        return None
    nested = {
        id(n) for node in ast.walk(fn) if node is not fn and isinstance(node, ast.FunctionDef) for n in ast.walk(node)
    }
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None and id(n) not in nested]
    return min((n.lineno for n in returns), default=None)
