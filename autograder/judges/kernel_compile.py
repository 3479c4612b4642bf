"""The "compiles for a GPU" part of a kernel exercise: the learner's kernel compiled ahead of time for a GPU.

The probe records the kernel's source as Triton reads it (:func:`coursetools.gpu_compile.kernel_record`); the
judge compiles that source here, outside the sandbox, in a process of its own that no learner code ran in
(Triton's interpreter patches the process it runs in, and a learner's process could patch the compiler). The
source is screened first: Triton's code generator evaluates a kernel's defaults, annotations and constexpr
expressions as Python, so only what a Triton kernel can hold gets through (defs; constants as defaults; no
dunder names, no getattr/eval/imports; module globals only from triton.language and math).

The part is scored only when the kernel earned something in the interpreter: a blank kernel compiles, and
earns nothing for it. A compile process that cannot start leaves the part unscored (the grader's failure is never
a 0); a compile that hangs or kills its process fails the part (that is the kernel's doing).
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Sequence
from typing import Any

from coursetools.gpu_compile import KERNEL_MODULES, CompileProcess

from . import answers
from .verdict import Part, share_earned

GRADED_ARCH = 90  # an H100, the GPU the notebooks' figures are for
FORBIDDEN_CALLS = {
    "getattr", "setattr", "delattr", "hasattr", "eval", "exec", "compile", "open", "__import__", "globals",
    "locals", "vars", "breakpoint", "input", "type", "object", "super",
}  # fmt: skip
COMPILE_TIMEOUT_S = 60.0  # a kernel of these exercises compiles in well under a second
PART_TITLE = f"compiles for a GPU (Triton's compiler for sm_{GRADED_ARCH}, ahead of time: nothing runs)"

_process: CompileProcess | None = None
_answers: dict[str, dict] = {}  # within one grading process: the same kernel and signature compile once


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
    for what, signature, constexprs in launches:
        answer = compiled(record, signature, constexprs)
        if answer.get("ok") is None:
            part.passed = None
            part.messages.append(f"not scored: the compile could not run here ({answer.get('why')})")
            return
        if not answer["ok"]:
            where = f"line {answer['line']} of `{name}`" if answer.get("line") else f"`{name}`"
            part.fail(f"Compiled for sm_{GRADED_ARCH} ({what}): {where}: {answer['why']}", hint_for(answer["why"]))
            return


def compiled(record: dict, signature: dict[str, str], constexprs: dict[str, Any]) -> dict:
    """The compile process's answer, from this process's cache when the same request was answered before."""
    global _process
    key = json.dumps([record, signature, constexprs, GRADED_ARCH], sort_keys=True)
    if key in _answers:
        return _answers[key]
    if _process is None or not _process.alive() or _process.owner != os.getpid():  # a forked worker starts its own
        try:
            _process = CompileProcess(timeout_s=COMPILE_TIMEOUT_S)
        except OSError as error:
            return {"ok": None, "why": f"the compile process could not start: {error}"}
    answer = _process.ask(record, signature, constexprs, GRADED_ARCH)
    if answer.get("ok") is not None:
        _answers[key] = answer
    return answer


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
    if "cannot read the source" in why:
        return "define the kernel with def in a cell of its own: Triton compiles from the source it reads."
    return (
        "the interpreter runs a kernel as Python and forgives what Triton's compiler refuses: keep to the Triton "
        "language (tl functions on blocks, typed accumulators, loops over range)."
    )


def split_answer(data: Any) -> tuple[Any, Any]:
    """(the launches' data, the kernel's recorded source) of a kernel probe's answer."""
    if not isinstance(data, dict) or set(data) != {"launches", "kernel"}:
        raise answers.mismatch("a kernel's launches and its source were expected")
    return data["launches"], data["kernel"]


TRITON_TYPES = {"float64": "fp64", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "int64": "i64"}


def pointer(dtype: str) -> str:
    return "*" + TRITON_TYPES[dtype]


# --------------------------------------------------------------------------------------------- the screen


def screen(record: Any) -> str | None:
    """What makes the recorded kernel unfit to hand to Triton's code generator, or None."""
    if not isinstance(record, dict) or not isinstance(record.get("functions"), dict) or not record["functions"]:
        return "The kernel's source was not recorded: the check could not compile it."
    if not isinstance(record.get("entry"), str) or record["entry"] not in record["functions"]:
        return "The kernel's source was not recorded: the check could not compile it."
    globals_ = record.get("globals")
    if not isinstance(globals_, dict):
        return "The kernel's globals were not recorded: the check could not compile it."
    for name, value in globals_.items():
        if not isinstance(value, dict) or value.get("kind") not in ("module", "constexpr", "number", "object"):
            return f"The kernel's global `{name}` was not recorded in a form the check reads."
        if value["kind"] == "module" and not _kernel_module(value.get("value")):
            return (
                f"The kernel uses the module `{value.get('value')}` (as `{name}`), which a Triton kernel cannot call."
            )
        if value["kind"] in ("constexpr", "number") and not isinstance(value.get("value"), (bool, int, float)):
            return f"The kernel's global `{name}` was not recorded in a form the check reads."
    for name, source in record["functions"].items():
        if not isinstance(source, str):
            return f"The source of `{name}` was not recorded."
        if not source:
            continue  # the compile says Triton cannot read it
        problem = _screen_function(name, source, globals_)
        if problem:
            return problem
    return None


def _kernel_module(name: Any) -> bool:
    return isinstance(name, str) and (name in KERNEL_MODULES or name.startswith("triton.language."))


def _screen_function(name: str, source: str, globals_: dict) -> str | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return f"The source of `{name}` does not parse as Python."
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != name:
        return f"The source of `{name}` is not one function definition."
    fn = tree.body[0]
    if fn.decorator_list:
        return f"`{name}` carries decorators in its source: the check compiles plain kernels."
    args = fn.args
    for default in [*args.defaults, *args.kw_defaults]:
        if default is not None and not _constant(default):
            return f"A default value of `{name}` is not a constant: a kernel's defaults are numbers."
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.annotation is not None and not _annotation(arg.annotation):
            return f"The annotation of `{arg.arg}` in `{name}` is not one a Triton kernel takes (tl.constexpr)."
    for node in ast.walk(fn):
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Lambda, ast.ClassDef)):
            return f"`{name}` holds a {type(node).__name__.lower()}, which a Triton kernel cannot."
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not fn:
            return f"`{name}` defines a function inside it, which a Triton kernel cannot."
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            return f"`{name}` names `{node.id}`, which a Triton kernel cannot."
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            return f"`{name}` reads the attribute `{node.attr}`, which a Triton kernel cannot."
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            return f"`{name}` calls `{node.func.id}`, which a Triton kernel cannot."
        if isinstance(node, ast.Attribute):
            problem = _module_path(node, globals_)
            if problem:
                return f"`{name}` {problem}"
    return None


def _constant(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str, type(None)))


def _annotation(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.Name):
        return node.id in ("constexpr", "int", "float", "bool")
    return (
        isinstance(node, ast.Attribute)
        and node.attr in ("constexpr", "tensor", "int32", "int64")
        and (_dotted(node.value) in ("tl", "triton.language", "triton"))
    )


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _module_path(node: ast.Attribute, globals_: dict) -> str | None:
    """An attribute chain rooted at a module global may only pass through Triton's language and math."""
    chain: list[str] = []
    root: ast.AST = node
    while isinstance(root, ast.Attribute):
        chain.insert(0, root.attr)
        root = root.value
    if not isinstance(root, ast.Name) or globals_.get(root.id, {}).get("kind") != "module":
        return None
    import importlib

    value: Any = importlib.import_module(globals_[root.id]["value"])
    for attr in chain:
        value = getattr(value, attr, None)
        if isinstance(value, type(os)) and not _kernel_module(value.__name__):
            return f"reaches the module `{value.__name__}`, which a Triton kernel cannot call."
        if value is None:
            return None
    return None
