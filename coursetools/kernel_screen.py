"""What a kernel's text may hold before anything runs or compiles it: an allow-list of the Triton language.

Triton's code generator evaluates a kernel's text as Python as it compiles it -- it calls whatever callable it
meets, on both sides of a runtime `if` -- and Triton's interpreter runs the text as Python. So the text of a
recorded kernel (coursetools.kernel_text) is read here first, and only what a Triton kernel is made of gets
through:
- names the kernel binds (its parameters, its assignments), the @triton.jit functions recorded with it, globals
  recorded as numbers or tl.constexpr numbers, and a few builtins Triton gives a meaning (range, min, max, ...);
- the kernel modules (triton.language as recorded by identity, its math, Python's math, triton's cdiv and
  next_power_of_2) only as the root of an attribute chain that ends at one of their public members, never as a
  value; no further attribute on such a member;
- on any other value (a tensor, a pointer, a tensor descriptor, a dtype, a constexpr) only attributes of Triton's
  tensors, descriptors and types (`x.to`, `x.dtype`, `x_ptr.dtype.element_ty`, `x.shape`, `desc.load` ...);
- numbers, booleans and None as constants; a string only as a docstring, in float("-inf") and its kin, or as the
  message of `tl.static_assert`,
  `tl.static_print`, `tl.device_assert`, `tl.device_print`, `print` or `assert` (a static print's text is the
  learner's own output, read by nobody);
- statements: assignments, for/while/if, return, expressions, pass, assert, break/continue (the compiler says
  what it thinks of those), and a blank exercise's `raise NotImplementedError()`.
What is refused is named in one sentence; the caller charges it to the compile part.
"""

from __future__ import annotations

import ast
import types
from functools import cache
from typing import Any

from .kernel_text import KERNEL_MODULES, bound_names

BUILTINS = {"range", "len", "min", "max", "float", "int", "print"}  # what Triton's code generator gives a meaning
MESSAGE_CALLS = {"static_assert": 1, "device_assert": 1, "static_print": None, "device_print": None, "print": None}
# numbers of the positional argument that is a message (None: any), for tl.<name>(...) and print(...)
TRITON_MEMBERS = {"cdiv", "next_power_of_2"}  # of `triton` itself (triton.language is walked through)
STATEMENTS = (
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If, ast.Return, ast.Expr, ast.Pass,
    ast.Assert, ast.Break, ast.Continue,
)  # fmt: skip
EXPRESSIONS = (
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Call, ast.Constant, ast.Attribute,
    ast.Subscript, ast.Slice, ast.Name, ast.Tuple, ast.List, ast.keyword,
)  # fmt: skip
CONTEXTS = (ast.Load, ast.Store, ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.arguments, ast.arg)


@cache
def value_attributes() -> frozenset[str]:
    """The attributes a kernel may read on a value: what Triton's tensors, pointers, dtypes and constexprs offer a
    kernel (methods such as to, reshape, sum; dtype, shape, element_ty), none of the compiler's internals (handle,
    to_ir, ...)."""
    import triton.language as tl

    methods = {n for n in dir(tl.tensor) if not n.startswith("_")}
    descriptors = {n for n in dir(tl.tensor_descriptor) if not n.startswith("_")}  # desc.load([i, j]) ...
    predicates = {n for n in dir(tl.dtype) if n.startswith("is_")}
    fields = {"dtype", "shape", "numel", "element_ty", "scalar", "primitive_bitwidth"}
    return frozenset(methods | descriptors | predicates | fields)


@cache
def module_members(module: str) -> frozenset[str]:
    """The public members a kernel may name in one of the kernel modules: no submodule, nothing private."""
    from .kernel_text import real_modules

    value = real_modules()[module]
    if module == "triton":
        return frozenset(TRITON_MEMBERS)
    out = set()
    for name in dir(value):
        member = getattr(value, name, None)
        if name.startswith("_") or name in ("T", "List", "wraps"):
            continue
        if isinstance(member, types.ModuleType):
            continue  # (tl.math is walked through to its members)
        out.add(name)
    return frozenset(out)


def screen(record: Any) -> str | None:
    """What makes the recorded kernel unfit to run or compile, in one sentence; None when nothing does."""
    if not isinstance(record, dict) or not isinstance(record.get("functions"), dict) or not record["functions"]:
        return "The kernel's source was not recorded."
    entry, functions, globals_ = record.get("entry"), record["functions"], record.get("globals")
    if not isinstance(entry, str) or entry not in functions or not isinstance(globals_, dict):
        return "The kernel's source was not recorded."
    unreadable = record.get("unreadable") or {}
    if not isinstance(unreadable, dict):
        return "The kernel's source was not recorded."
    for name, why in unreadable.items():
        return f"`{name}`: {str(why)[:200]}."
    problem = _screen_globals(globals_)
    if problem:
        return problem
    for name, text in functions.items():
        if not isinstance(name, str) or not isinstance(text, str) or not name.isidentifier():
            return "The kernel's source was not recorded."
        problem = _screen_function(name, text, functions, globals_)
        if problem:
            return problem
    return None


def _screen_globals(globals_: dict) -> str | None:
    for name, value in globals_.items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
            return "The kernel's globals were not recorded in a form the check reads."
        kind = value.get("kind") if isinstance(value, dict) else None
        if kind == "module" and value.get("value") in KERNEL_MODULES:
            continue
        if kind == "module":
            return (
                f"The kernel uses the module `{value.get('value')}` (as `{name}`), which a Triton kernel cannot call."
            )
        if kind == "member" and value.get("value") in module_members(str(value.get("module"))):
            continue
        if kind in ("constexpr", "number") and type(value.get("value")) in (bool, int, float):
            continue
        if kind == "object":
            continue  # refused where the text names it (a global it does not use is harmless)
        return "The kernel's globals were not recorded in a form the check reads."
    return None


def _screen_function(name: str, text: str, functions: dict, globals_: dict) -> str | None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return f"The source of `{name}` does not parse as Python."
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != name:
        return f"The source of `{name}` is not one function definition."
    # Triton's interpreter reads the text from its last line that starts with `def`, its compiler from the first:
    # one such line, or the two would read two kernels
    if sum(line.strip().startswith("def ") for line in text.splitlines()) != 1:
        return f"`{name}` holds a second line that starts with `def` (in a string?): a kernel is one function."
    fn = tree.body[0]
    if fn.decorator_list:
        return f"`{name}` carries decorators in its recorded source."
    return _Screen(name, fn, functions, globals_).problem()


class _Screen:
    """One function's text against the allow-list; `problem()` is the first thing refused, in words."""

    def __init__(self, name: str, fn: ast.FunctionDef, functions: dict, globals_: dict) -> None:
        self.name, self.fn, self.functions, self.globals = name, fn, functions, globals_
        self.locals = bound_names(fn)
        self.messages: set[int] = set()  # ids of the string constants allowed as messages

    def problem(self) -> str | None:
        fn, name = self.fn, self.name
        args = fn.args
        if args.vararg or args.kwarg or args.posonlyargs or args.kwonlyargs:
            return f"`{name}` takes *args, **kwargs or keyword-only parameters: a kernel's parameters are plain."
        for default in args.defaults:
            if not _number(default):
                return f"A default value of `{name}` is not a number: a kernel's defaults are numbers."
        for arg in args.args:
            if arg.annotation is not None and self._chain(arg.annotation) is None:
                return f"The annotation of `{arg.arg}` in `{name}` is not one a Triton kernel takes (tl.constexpr)."
        if fn.returns is not None:
            return f"`{name}` has a return annotation: a kernel has none."
        for clash in sorted(self.locals & (set(self.globals) | set(self.functions) | BUILTINS)):
            return f"`{name}` assigns `{clash}`, a name the kernel reads from outside it: use another name."
        self._allow_messages()
        body = fn.body[1:] if _docstring(fn) else fn.body
        if _docstring(fn):
            self.messages.add(id(fn.body[0].value))
        for statement in body:
            problem = self._statement(statement)
            if problem:
                return problem
        for arg in args.args:
            if arg.arg.startswith("__"):
                return f"`{name}` names `{arg.arg}`, which a Triton kernel cannot."
        return None

    def _allow_messages(self) -> None:
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Assert) and _string(node.msg):
                self.messages.add(id(node.msg))
            if not isinstance(node, ast.Call):
                continue
            if _float_of_infinity(node):
                self.messages.add(id(node.args[0]))
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if isinstance(node.func, ast.Name) and callee != "print":
                continue
            if isinstance(node.func, ast.Attribute) and self._chain(node.func) is None:
                continue
            if callee in MESSAGE_CALLS:
                at = MESSAGE_CALLS[callee]
                for i, arg in enumerate(node.args):
                    if _string(arg) and (at is None or i == at):
                        self.messages.add(id(arg))
                for keyword in node.keywords:
                    if keyword.arg in ("msg", "prefix") and _string(keyword.value):
                        self.messages.add(id(keyword.value))

    def _statement(self, node: ast.stmt) -> str | None:
        name = self.name
        if isinstance(node, ast.Raise):
            if _not_implemented(node):
                return None
            return f"`{name}` raises an exception, which a Triton kernel cannot."
        if not isinstance(node, STATEMENTS):
            return f"`{name}` holds {_what(node)}, which a Triton kernel cannot."
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                problem = self._statement(child)
            elif isinstance(child, ast.expr):
                problem = self._expression(child)
            else:
                problem = None if isinstance(child, CONTEXTS) else f"`{name}` holds {_what(child)}."
            if problem:
                return problem
        return None

    def _expression(self, node: ast.AST) -> str | None:
        name = self.name
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return None if id(node) in self.messages else f"`{name}` holds a string, which a kernel has no use for."
            if node.value is None or node.value is Ellipsis or type(node.value) in (bool, int, float):
                return None
            return f"`{name}` holds a constant of type {type(node.value).__name__}, which a Triton kernel cannot."
        if not isinstance(node, EXPRESSIONS):
            return f"`{name}` holds {_what(node)}, which a Triton kernel cannot."
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.keyword) and (node.arg is None or node.arg.startswith("_")):
            return f"`{name}` passes **keywords or a private keyword, which a Triton kernel cannot."
        for child in ast.iter_child_nodes(node):
            problem = None if isinstance(child, CONTEXTS) else self._expression(child)
            if problem:
                return problem
        return None

    def _name(self, node: ast.Name) -> str | None:
        name, used = self.name, node.id
        if used.startswith("__"):
            return f"`{name}` names `{used}`, which a Triton kernel cannot."
        if used in self.locals or used in self.functions or used in BUILTINS:
            return None
        recorded = self.globals.get(used)
        if recorded is None:
            return f"`{name}` names `{used}`, which it neither takes nor defines, and which is not Triton's."
        if recorded["kind"] in ("constexpr", "number", "member"):
            return None
        if recorded["kind"] == "module":
            return f"`{name}` uses the module `{used}` as a value: a kernel only names its members (tl.load, ...)."
        return f"`{name}` uses the global `{used}`, {recorded.get('value')}, which a Triton kernel cannot use."

    def _chain(self, node: ast.AST) -> tuple[str, str] | None:
        """(module, member) when node names a public member of a kernel module: an attribute chain from a module
        global (tl.load, triton.language.math.exp, math.pi, triton.cdiv), or a global recorded as such a member
        (`from triton.language import constexpr`). Nothing past the member."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id in self.locals:
            return None
        recorded = self.globals.get(node.id)
        if not isinstance(recorded, dict):
            return None
        if recorded.get("kind") == "member":
            return (recorded["module"], recorded["value"]) if not parts else None
        if recorded.get("kind") != "module":
            return None
        module = recorded["value"]
        while len(parts) > 1 and (module, parts[0]) in (("triton", "language"), ("triton.language", "math")):
            module = {"triton": "triton.language", "triton.language": "triton.language.math"}[module]
            parts.pop(0)
        if len(parts) == 1 and parts[0] in module_members(module):
            return module, parts[0]
        return None

    def _global_kind(self, name: str) -> str | None:
        recorded = self.globals.get(name)
        return recorded.get("kind") if isinstance(recorded, dict) else None

    def _attribute(self, node: ast.Attribute) -> str | None:
        name = self.name
        if node.attr.startswith("_"):
            return f"`{name}` reads the attribute `{node.attr}`, which a Triton kernel cannot."
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if (
            isinstance(root, ast.Name)
            and root.id not in self.locals
            and self._global_kind(root.id) in ("module", "member")
        ):
            if self._chain(node) is not None:
                return None
            return f"`{name}` reads `{ast.unparse(node)}`, which is not a function or type of the Triton language."
        problem = self._expression(node.value)
        if problem is None and node.attr not in value_attributes():
            problem = f"`{name}` reads `.{node.attr}` on a value: a kernel uses only what Triton's tensors offer."
        return problem


def _number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (bool, int, float))


def _string(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _float_of_infinity(node: ast.Call) -> bool:
    """float("-inf"), float("inf"), float("nan"): how kernels write those numbers."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "float"
        and len(node.args) == 1
        and not node.keywords
        and _string(node.args[0])
        and node.args[0].value.strip().lower().lstrip("+-") in ("inf", "infinity", "nan")
    )


def _docstring(fn: ast.FunctionDef) -> bool:
    return bool(fn.body) and isinstance(fn.body[0], ast.Expr) and _string(fn.body[0].value)


def _not_implemented(node: ast.Raise) -> bool:
    """A blank exercise's stub: `raise NotImplementedError` or `raise NotImplementedError()`, nothing else."""
    exc = node.exc
    if isinstance(exc, ast.Call) and not exc.args and not exc.keywords:
        exc = exc.func
    return node.cause is None and isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _what(node: ast.AST) -> str:
    words = {
        "Import": "an import", "ImportFrom": "an import", "Global": "a global statement",
        "Nonlocal": "a nonlocal statement", "Lambda": "a lambda", "ClassDef": "a class",
        "FunctionDef": "a function defined inside it", "AsyncFunctionDef": "a function defined inside it",
        "With": "a with block", "AsyncWith": "a with block", "Try": "a try block", "Delete": "a del statement",
        "ListComp": "a comprehension", "SetComp": "a comprehension", "DictComp": "a comprehension",
        "GeneratorExp": "a generator expression", "JoinedStr": "a formatted string",
        "NamedExpr": "a walrus assignment (:=)", "Starred": "a starred argument (*x)", "Dict": "a dict",
        "Set": "a set", "Await": "await", "Yield": "yield", "YieldFrom": "yield", "AsyncFor": "an async loop",
        "Match": "a match statement", "TryStar": "a try block",
    }  # fmt: skip
    return words.get(type(node).__name__, "a " + type(node).__name__.lower())
