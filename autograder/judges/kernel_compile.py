"""The "compiles for a GPU" part of a kernel exercise: the learner's kernel compiled ahead of time for a GPU.

The probe takes the kernel's text once (coursetools.kernel_text); the same record is what the kernel probes run
(autograder/judges/kernel_runs.py) and what is compiled here, for the signature of the check's own launches. The
text is screened first (coursetools.kernel_screen: an allow-list of the Triton language, since Triton's code
generator evaluates a kernel's text as Python): what it refuses costs this part, with the sentence that names the
construct, and is never handed to the compiler. While a submission is graded the compile runs in a child process of
that submission's sandbox (kernel_runs), whose answer is data, never its output.

The part is scored only when the kernel earned something in the interpreter: a blank kernel compiles, and
earns nothing for it. A compile that could not run leaves the part unscored (the grader's failure is never a 0); a
compile that hangs or kills its process fails the part (that is the kernel's doing).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coursetools.kernel_screen import screen

from ..feedback import CheckFailed
from ..registry import FAILED
from . import answers, kernel_runs
from .verdict import Part, share_earned

GRADED_ARCH = kernel_runs.GRADED_ARCH
PART_TITLE = f"compiles for a GPU (Triton's compiler for sm_{GRADED_ARCH}, ahead of time: nothing runs)"
MAX_REASON_CHARS = 400


def compile_part() -> Part:
    return Part("compiles", title=PART_TITLE)


def judge_compiles(
    part: Part, record: Any, launches: Sequence[tuple[str, dict[str, str], dict[str, Any]]], others: Sequence[Part]
) -> None:
    """Compile the recorded kernel for each (what, signature, constexprs) of the check's own launches; a compile
    error fails `part` with the compiler's reason and a hint naming the idea. Unscored while nothing else passed."""
    if share_earned(list(others))[0] == 0:  # by the one rule: a mistake shown in several parts costs one idea
        part.passed = None
        part.messages.append("not scored: the kernel earns nothing in the interpreter yet")
        return
    problem = screen(record)
    if problem:
        part.fail(problem, "A Triton kernel holds Triton code only: tl functions, numbers, its arguments.")
        return
    name = record["entry"]
    answered = kernel_runs.compile(record, [(signature, constexprs) for _, signature, constexprs in launches])
    for (what, _, _), answer in zip(launches, answered):
        if not isinstance(answer, dict) or answer.get("ok") is None:
            why = answer.get("why") if isinstance(answer, dict) else None
            part.passed = None
            part.messages.append(f"not scored: the compile could not run here ({plain(why)})")
            return
        if answer["ok"] is not True:
            line = answer.get("line")
            where = f"line {line} of `{name}`" if type(line) is int else f"`{name}`"
            why = plain(answer.get("why"))
            part.fail(f"Compiled for sm_{GRADED_ARCH} ({what}): {where}: {why}", hint_for(why))
            return
    if len(answered) < len(launches):
        part.passed = None
        part.messages.append("not scored: the compile could not run here (an answer was missing)")


def int_kind(n: int) -> str:
    """How a real launch specializes an integer argument: the constant 1, divisible by 16, or neither."""
    return "one" if n == 1 else "multiple of 16" if n % 16 == 0 else "other"


def plain(why: Any) -> str:
    """A reason as it may be shown: text, bounded, no control characters."""
    text = why if isinstance(why, str) else "no reason given"
    text = "".join(c if c.isprintable() else " " for c in text)
    return text[:MAX_REASON_CHARS]


def hint_for(why: str) -> str:
    """The idea behind the compile error the compiler gave."""
    if "Loop-carried variable" in why and "<[" in why:
        return (
            "a variable that is a single number before the loop becomes a block of values in it. The compiler "
            "keeps a loop variable's type fixed: start it as a block (tl.zeros([BLOCK], dtype)), or reduce the "
            "block inside the loop (tl.sum, tl.max) so it stays one number."
        )
    if "Loop-carried variable" in why:
        return (
            "a loop variable's type changes in the loop: a Python number (0.0, -float('inf')) starts as float32, "
            "and float64 data makes it float64. The interpreter lets a type change; the compiler does not. Start "
            "accumulators typed like the data: tl.zeros([], dtype) or tl.full([], value, dtype), with dtype = "
            "out_ptr.dtype.element_ty."
        )
    if "Break" in why or "Continue" in why:
        return (
            "Triton's compiler has no break or continue: a loop runs every iteration it names. Bound the loop "
            "instead, or mask the work of the iterations you meant to skip."
        )
    if "Cannot access global variable" in why:
        return (
            "a global read inside a kernel must be a tl.constexpr (NAME = tl.constexpr(2.0)), or be passed as an "
            "argument: the interpreter reads any Python global, the compiler only constants it can fold in."
        )
    if "did not finish" in why:
        return (
            "the compiler unrolls tl.static_range loops and constexpr branches completely: a kernel that loops over "
            "its data with range() compiles in a fraction of a second."
        )
    if "'int' object has no attribute" in why:
        return (
            "a launch turns an integer argument equal to 1 into a constant, a plain Python int (Triton specializes "
            "it, as it does the tl.constexpr parameters): it has no tensor methods there, though the interpreter, "
            "which passes every argument the same way, has them."
        )
    if "cannot read the source" in why:
        return "define the kernel with def in a cell of its own: Triton compiles from the source it reads."
    return (
        "the interpreter runs a kernel as Python and forgives what Triton's compiler refuses: keep to the Triton "
        "language (tl functions on blocks, typed accumulators, loops over range)."
    )


def run_recorded(data: Any, probe: str, params: dict[str, Any]) -> tuple[Any, dict]:
    """(what the kernel probe `probe` found running the recorded kernel on the check's cases, the record) for a
    kernel check's data (the probe's record of the kernel's text: nothing it ran)."""
    if not isinstance(data, dict) or set(data) != {"kernel"} or not isinstance(data["kernel"], dict):
        raise answers.mismatch("the kernel's recorded source was expected")
    record = data["kernel"]
    found = kernel_runs.probe(probe, record, params)
    if isinstance(found, dict) and FAILED in found:
        raise CheckFailed(str(found[FAILED]))
    if not isinstance(found, dict) or set(found) != {"launches"}:
        raise answers.mismatch("the kernel's launches were expected")
    return found["launches"], record


TRITON_TYPES = {"float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "int64": "i64"}


def pointer(dtype: str) -> str:
    return "*" + TRITON_TYPES[dtype]
