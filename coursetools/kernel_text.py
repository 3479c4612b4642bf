"""A Triton kernel as text: taken once from the object @triton.jit made, and rebuilt from that text wherever the
kernel runs or compiles.

    record = take(kernel)           # {"entry": name, "functions": {name: source}, "globals": {name: {...}}}: data
    kernel = rebuild(record, interpreted=True)   # the same text, defined afresh: Triton's interpreter runs it
    kernel = rebuild(record, interpreted=False)  # ... or its compiler compiles it

Triton reads a kernel's source twice, and not the same way: its compiler keeps the text from the first line that
starts with ``def``, its interpreter from the last one; a ``def`` inside a string makes them two kernels. And both
resolve names in the globals of the cell the kernel was defined in, where any object can pose as
``triton.language``. So the course takes the text once, here (the lines of the one function definition, from its
``def`` line to its end), records the globals the text names as data (modules by identity, numbers, constexprs,
other @triton.jit functions by their own text), and every judge -- the screen, the interpreter, the compiler --
reads that record: what is judged is what ran.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import math
import textwrap
import types
from typing import Any

MAX_SOURCE_CHARS = 40_000
MAX_FUNCTIONS = 16
# the modules a kernel's globals may name, by the module's own name
KERNEL_MODULES = ("triton", "triton.language", "triton.language.math", "math")


class NotAKernel(TypeError):
    """The object is not what @triton.jit makes."""


def real_modules() -> dict[str, types.ModuleType]:
    """The kernel modules as this process imported them. A caller that runs beside learner code calls this once
    before any of it runs (the probes do, at import), so that a module put in their place later is not taken for
    them."""
    if not _REAL:
        import triton
        import triton.language
        import triton.language.math

        _REAL.update({"triton": triton, "triton.language": triton.language, "math": math})
        _REAL["triton.language.math"] = triton.language.math
    return _REAL


_REAL: dict[str, types.ModuleType] = {}


def function_of(obj: Any) -> types.FunctionType | None:
    """The Python function behind a @triton.jit object (compiled or interpreted), exactly as Triton made it: a
    subclass, or any other object with a `fn`, is not one."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    fn = getattr(obj, "fn", None) if type(obj) in (JITFunction, InterpretedFunction) else None
    return fn if isinstance(fn, types.FunctionType) else None


def take(kernel: Any) -> dict:
    """The kernel's record: its text and that of every @triton.jit function it calls (by name), and the globals
    the texts name. NotAKernel when `kernel` is not what @triton.jit makes."""
    entry = function_of(kernel)
    if entry is None:
        raise NotAKernel(f"not a Triton kernel (a function decorated with @triton.jit): {type(kernel).__name__}")
    modules = real_modules()
    functions: dict[str, str] = {}
    globals_: dict[str, dict] = {}
    problems: dict[str, str] = {}
    pending = [entry]
    while pending and len(functions) < MAX_FUNCTIONS:
        fn = pending.pop()
        if fn.__name__ in functions:
            continue
        text, problem = source_of(fn)
        functions[fn.__name__] = text
        if problem:
            problems[fn.__name__] = problem
            continue
        for name in sorted(free_names(text)):
            if name in functions or name in globals_ or name not in fn.__globals__:
                continue
            value = fn.__globals__[name]
            helper = function_of(value)
            if helper is not None:
                pending.append(helper)
            else:
                globals_[name] = global_record(value, modules)
    record = {"entry": entry.__name__, "functions": functions, "globals": globals_}
    if problems:
        record["unreadable"] = problems
    return record


def source_of(fn: types.FunctionType) -> tuple[str, str | None]:
    """(the text of fn's definition from its def line, dedented; why it cannot be read, or None)."""
    try:
        lines, _ = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return "", "Triton cannot read its source: define it with def in a cell (or a file) of its own"
    source = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source[:MAX_SOURCE_CHARS], "its source, as Python reads it back, does not parse"
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != fn.__name__:
        return source[:MAX_SOURCE_CHARS], "its source, as Python reads it back, is not one function definition"
    node = tree.body[0]
    text = "\n".join(source.splitlines()[node.lineno - 1 : node.end_lineno]) + "\n"
    if len(text) > MAX_SOURCE_CHARS:
        return text[:MAX_SOURCE_CHARS], f"its source is longer than {MAX_SOURCE_CHARS} characters"
    return text, None


def free_names(text: str) -> set[str]:
    """The names the function's text reads that it does not bind itself (its parameters, its assignments)."""
    try:
        fn = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        return set()
    bound = bound_names(fn) if isinstance(fn, ast.FunctionDef) else set()
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def bound_names(fn: ast.FunctionDef) -> set[str]:
    """The function's parameters and every name it assigns (its locals)."""
    args = fn.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return names | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def global_record(value: Any, modules: dict[str, types.ModuleType]) -> dict:
    """A global the kernel names, as data: a module only when it is one of the real kernel modules (by identity,
    not by name), numbers and tl.constexpr numbers by value, anything else by what it is."""
    from triton.language import constexpr

    if isinstance(value, types.ModuleType):
        for name, module in modules.items():
            if value is module:
                return {"kind": "module", "value": name}
        return {"kind": "object", "value": f"a module that calls itself {value.__name__!r} and is not it"[:200]}
    if isinstance(value, types.FunctionType):
        return {"kind": "object", "value": "a Python function, not a @triton.jit one"}
    member = _member_of(value, modules)
    if member is not None:
        return {"kind": "member", "module": member[0], "value": member[1]}
    if isinstance(value, constexpr) and type(value.value) in (bool, int, float):
        return {"kind": "constexpr", "value": value.value}
    if type(value) in (bool, int, float):
        return {"kind": "number", "value": value}
    return {"kind": "object", "value": f"a {type(value).__name__[:100]}"}


def _member_of(value: Any, modules: dict[str, types.ModuleType]) -> tuple[str, str] | None:
    """(module, name) when value is itself a public function or type of a kernel module (`from triton.language
    import constexpr`), found by identity."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return None
    for module_name in ("triton.language", "triton.language.math", "math"):
        module = modules[module_name]
        for name in dir(module):
            if not name.startswith("_") and getattr(module, name, None) is value:
                return module_name, name
    for name in ("cdiv", "next_power_of_2"):
        if getattr(modules["triton"], name, None) is value:
            return "triton", name
    return None


# --------------------------------------------------------------------------------------------- rebuilding


def rebuild(record: dict, interpreted: bool) -> Any:
    """The recorded functions defined afresh from their text in a namespace of their own (the real kernel modules,
    the recorded numbers), wrapped as Triton wraps them: InterpretedFunction (interpreted) or JITFunction. Nothing
    of the process the record was taken in comes along. Only a record the screen passed may be rebuilt: this
    executes its definitions."""
    from triton.language import constexpr
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    from .interpreter import faster_device_calls

    for name, text in record["functions"].items():
        if sum(line.strip().startswith("def ") for line in text.splitlines()) != 1:
            raise ValueError(
                f"`{name}`'s source holds a second line that starts with `def` (in a string?): Triton's interpreter "
                "and its compiler would read two different kernels from it"
            )
    modules = real_modules()
    namespace: dict[str, Any] = {"__name__": "recorded_kernel"}
    for name, value in record["globals"].items():
        if value["kind"] == "object":
            namespace[name] = Unusable(name, str(value.get("value")))
        elif value["kind"] == "module":
            namespace[name] = modules[value["value"]]
        elif value["kind"] == "constexpr":
            namespace[name] = constexpr(value["value"])
        elif value["kind"] == "number":
            namespace[name] = value["value"]
        elif value["kind"] == "member":
            namespace[name] = getattr(modules[value["module"]], value["value"])
    wrap = InterpretedFunction if interpreted else JITFunction
    if interpreted:
        faster_device_calls()
    for name, text in record["functions"].items():
        # a file name of its own: Triton reads the text back through linecache (the interpreter only when it
        # first runs the kernel), and another record may hold a function of the same name
        filename = f"<kernel {name} {next(_REBUILT)}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
        exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - one screened def
        namespace[name] = wrap(namespace[name])
        if interpreted:
            namespace[name].rewrite()  # read back now, while the text under its name is this one
    return namespace[record["entry"]]


_REBUILT = itertools.count()


class Unusable:
    """Stands in for a global that is no part of the Triton language (a module posing as one, a Python object):
    using it says so."""

    def __init__(self, name: str, what: str) -> None:
        self.name, self.what = name, what

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise NameError(f"`{self.name}` is {self.what}, which a Triton kernel cannot use")

    __getattr__ = __call__ = __getitem__ = __add__ = __radd__ = __mul__ = __rmul__ = __bool__ = _refuse
