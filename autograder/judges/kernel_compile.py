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
from . import answers, compile_hints, kernel_runs
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
        part.fail(problem, compile_hints.for_screen(problem))
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
            why = plain(answer.get("why"))
            if "PassManager::run failed" in why and type(line) is not int:  # the diagnostic went to stderr
                line = compile_hints.return_line(record)
                why = "the kernel returns a value (the compiler's passes failed)" if line else why
            where = f"line {line} of `{name}`" if type(line) is int else f"`{name}`"
            part.fail(f"Compiled for sm_{GRADED_ARCH} ({what}): {where}: {why}", compile_hints.for_compiler(why))
            return
    if len(answered) < len(launches):
        part.passed = None
        part.messages.append("not scored: the compile could not run here (an answer was missing)")


def plain(why: Any) -> str:
    """A reason as it may be shown: text, bounded, no control characters."""
    text = why if isinstance(why, str) else "no reason given"
    text = "".join(c if c.isprintable() else " " for c in text)
    return text[:MAX_REASON_CHARS]


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
