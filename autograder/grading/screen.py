"""Screening the learner's code that the judged run executes: flags for the instructor, never a score.

Three kinds, each naming the exercise (the answer cell's grade_id, or "a cell you added") and the reason:
- ``reaches_for_grader``: code that looks at or changes the machinery around it instead of computing:
  stack or frame inspection, ``gc``, ``ctypes``, code objects and closures, threads, IPython internals,
  ``autograder`` imports (other than ``from autograder.nbNN import name``, as the notebooks themselves
  import checks and helpers), torch function/dispatch modes, dynamic code (exec/eval/compile/importlib), names
  built at run time (getattr and its kin with a computed name or handed on as a value, locals(), vars(),
  globals(), ``__getattribute__``, ``attrgetter``: the screen cannot read the string, so it names the lookup),
  imports of modules that are not installed (one the notebook writes itself is out of the screen's sight; the
  learner's own .py files handed in with the notebook are screened like cells, and importing them is not flagged);
- ``by_hand_with_autograd``: a cell that answers a by-hand exercise (a check registered with
  ``by_hand=True``) and hands it to PyTorch's autograd (torch.autograd.grad/backward/functional/
  gradcheck, forward_ad, torch.func, or ``.backward()`` on tensors that require grad or on nn.Parameters).
- ``memory_out_of_sight``: a cell that answers an exercise whose check measures memory (``measures_memory=True``)
  and uses NumPy, whose allocations the check cannot see.
``getattr(x, "name")`` with a constant name is read as ``x.name``.

Patches of torch, builtins or the checks are the ``patched`` flags of :mod:`autograder.grading.flags`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys

from nbformat import NotebookNode

from .jobs import Flag
from .read import nbgrader_meta, normalized
from .spec import NotebookSpec

REACHING_MODULES = {
    "inspect": "stack/frame inspection (inspect)",
    "gc": "the garbage collector (gc)",
    "ctypes": "ctypes",
    "threading": "threads",
    "_thread": "threads",
    "multiprocessing": "other processes",
    "concurrent": "threads",
    "traceback": "stack inspection (traceback)",
    "autograder": "autograder imports",
    "ipykernel": "IPython internals",
    "importlib": "dynamic imports (importlib)",
    "dis": "code objects",
}
REACHING_ATTRIBUTES = {
    "f_back": "frame inspection",
    "f_locals": "frame inspection",
    "f_globals": "frame inspection",
    "f_code": "frame inspection",
    "tb_frame": "frame inspection",
    "gi_frame": "frame inspection",
    "_getframe": "frame inspection",
    "_current_frames": "frame inspection",
    "settrace": "tracing",
    "setprofile": "tracing",
    "__code__": "code objects",
    "__closure__": "closures",
    "__defaults__": "function defaults",
    "__kwdefaults__": "function defaults",
    "__globals__": "function globals",
    "cell_contents": "closures",
    "co_code": "code objects",
    "__builtins__": "builtins",
    "__subclasses__": "object internals",
    "events": "IPython internals",
    "display_pub": "IPython internals",
    "displayhook": "IPython internals",
    "history_manager": "the kernel's input history",
    "user_ns": "IPython internals",
    "TorchFunctionMode": "a torch function mode",
    "TorchDispatchMode": "a torch dispatch mode",
    "__getattribute__": "a name built at run time (__getattribute__)",
    "attrgetter": "a name built at run time (attrgetter)",
    "__torch_function__": "a torch function override",
    "__torch_dispatch__": "a torch dispatch override",
}
REACHING_NAMES = {
    "get_ipython": "IPython internals",
    "exec": "dynamic code (exec)",
    "eval": "dynamic code (eval)",
    "compile": "dynamic code (compile)",
    "__import__": "dynamic imports (__import__)",
    "globals": "the notebook's globals()",
    "vars": "the notebook's namespace (vars)",
    "locals": "the notebook's namespace (locals)",
    "attrgetter": "a name built at run time (attrgetter)",
    "__revad_probe__": "the grader's probe (__revad_probe__)",
    "In": "the kernel's input history (In)",
    "Out": "the kernel's output history (Out)",
    "_ih": "the kernel's input history (_ih)",
    "_oh": "the kernel's output history (_oh)",
    "_i": "the kernel's input history (_i)",
    "_ii": "the kernel's input history (_ii)",
    "_iii": "the kernel's input history (_iii)",
    "TorchFunctionMode": "a torch function mode",
    "TorchDispatchMode": "a torch dispatch mode",
}
HONEST_AUTOGRAD_NAMES = ("Function", "FunctionCtx", "once_differentiable")  # what a by-hand Function itself imports
AUTOGRAD_CALLS = (
    "torch.autograd.grad",
    "torch.autograd.backward",
    "torch.autograd.functional",
    "torch.autograd.gradcheck",
    "torch.autograd.gradgradcheck",
    "torch.autograd.forward_ad",
    "torch.func",
    "functorch",
    "autograd.grad",
    "autograd.functional",
    "autograd.forward_ad",
)


def _public_names(module: str) -> set[str]:
    try:
        return set(getattr(importlib.import_module(module), "__all__", ()))
    except ImportError:
        return set()


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _constant_name(node) -> str | None:
    """The name a lookup key spells when it is a constant identifier (None: computed, or not a name)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
        return node.value
    return None


def _attribute_table(node) -> ast.expr | None:
    """The object whose attributes `node` is, as a dict: `x.__dict__` or `vars(x)` (None: neither)."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "vars"
        and len(node.args) == 1
    ):
        return node.args[0]
    return None


class _ConstantGetattr(ast.NodeTransformer):
    """Lookups with a constant name read as attributes: `getattr(x, "name")`, `x.__dict__["name"]`,
    `vars(x)["name"]`, `x.__dict__.get("name")`, `x.__getattr__("name")`, `x.__getattribute__("name")` are `x.name`.
    A constant name hides nothing; the same lookups with a computed name are what `reaches` flags."""

    def visit_Call(self, node):
        self.generic_visit(node)
        func, args = node.func, node.args
        if isinstance(func, ast.Name) and func.id == "getattr" and len(args) in (2, 3):
            target, name = args[0], _constant_name(args[1])
        elif isinstance(func, ast.Attribute) and func.attr in ("__getattr__", "__getattribute__") and len(args) == 1:
            target, name = func.value, _constant_name(args[0])
        elif isinstance(func, ast.Attribute) and func.attr == "get" and len(args) in (1, 2):
            target, name = _attribute_table(func.value), _constant_name(args[0])
        else:
            return node
        if target is None or name is None:
            return node
        return ast.copy_location(ast.Attribute(value=target, attr=name, ctx=ast.Load()), node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        target, name = _attribute_table(node.value), _constant_name(node.slice)
        if target is None or name is None:
            return node
        return ast.copy_location(ast.Attribute(value=target, attr=name, ctx=node.ctx), node)


def _parsed(source: str):
    """The code's tree with constant getattrs as attributes; None when it does not parse."""
    try:
        return _ConstantGetattr().visit(ast.parse(source))
    except SyntaxError:
        return None


def _not_installed(name: str) -> bool:
    """A module that is neither in the standard library nor installed: one the notebook wrote itself, most likely."""
    root = name.split(".")[0]
    if not root or root in sys.stdlib_module_names:
        return False
    try:
        return importlib.util.find_spec(root) is None
    except (ImportError, ValueError):
        return True


def reaches(source: str, own_modules: frozenset[str] = frozenset()) -> list[str]:
    """Why this code reaches for the grader (empty: it does not). `own_modules`: the learner's own .py files handed
    in with the notebook (screened themselves, so importing one hides nothing)."""
    tree = _parsed(source)
    if tree is None:
        return []
    found = []
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    tables = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call) and _attribute_table(n) is not None}
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}  # read as their f-string
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in ATTRIBUTE_LOOKUPS and id(node) not in called:
            found.append(f"a name built at run time: {node.id} handed on as a value (what it reaches cannot be read)")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                root = name.split(".")[0]
                if isinstance(node, ast.ImportFrom) and re.fullmatch(r"autograder\.nb\d\d", name):
                    # the notebook's own checks and helpers (example_graph, ...), as its cells import them
                    found += [
                        f"autograder imports: imports {a.name} from {name}, which is not one of its public names"
                        for a in node.names
                        if a.name not in _public_names(name)
                    ]
                    continue
                if root in REACHING_MODULES:
                    found.append(f"{REACHING_MODULES[root]}: imports {name}")
                elif _not_installed(name) and root not in own_modules:
                    found.append(
                        f"code out of the screen's sight: imports {name}, which is not installed "
                        "(a module the notebook writes itself is not screened)"
                    )
                elif root == "IPython" and name != "IPython.display":
                    found.append(f"IPython internals: imports {name}")
                elif name in ("torch.overrides", "torch.utils._python_dispatch"):
                    found.append(f"torch function/dispatch modes: imports {name}")
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if node.module == "sys" and alias.name == "modules":
                        found.append("the module table: imports modules from sys (where the grader's own modules are)")
                    elif alias.name in REACHING_NAMES or alias.name in ("_getframe", "builtins"):
                        found.append(f"{REACHING_NAMES.get(alias.name, 'internals')}: imports {alias.name}")
        elif isinstance(node, ast.Attribute) and _dotted(node) == "sys.modules":
            found.append("the module table: uses sys.modules (where the grader's own modules are)")
        elif isinstance(node, ast.Attribute) and node.attr in REACHING_ATTRIBUTES:
            found.append(f"{REACHING_ATTRIBUTES[node.attr]}: uses .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in REACHING_NAMES and isinstance(node.ctx, ast.Load):
            if id(node) not in tables:  # vars(x): an object's attributes, named below
                found.append(f"{REACHING_NAMES[node.id]}: uses {node.id}")
        elif isinstance(node, ast.Name) and re.fullmatch(r"_i?\d+", node.id) and isinstance(node.ctx, ast.Load):
            found.append(f"the kernel's input/output history: uses {node.id}")
        elif isinstance(node, ast.Name) and node.id in ("__builtins__", "builtins"):
            found.append(f"builtins: uses {node.id}")
        elif isinstance(node, ast.Call) and _dynamic_attribute(node):
            lookup = f"{ast.unparse(node.func)}(..., {ast.unparse(node.args[1])})"
            found.append(f"a name built at run time: {lookup} (what it reaches cannot be read)")
        elif isinstance(node, ast.Constant | ast.JoinedStr) and id(node) not in parts and _process_internals(node):
            found.append(f"a process's descriptors or memory through /proc: uses {ast.unparse(node)[:70]}")
    found += _computed_keys(tree)
    return list(dict.fromkeys(found))


ATTRIBUTE_LOOKUPS = ("getattr", "setattr", "delattr", "hasattr")

# A general key: lookups that reach any attribute, module or closure by a name the screen cannot read, as getattr
# with a computed name does. An honest answer needs none of them; constant names were read as attributes above.
COMPUTED_KEY_ATTRIBUTES = {
    "__getattr__": "an explicit __getattr__ call",
    "__setattr__": "an explicit __setattr__ call",
    "__delattr__": "an explicit __delattr__ call",
    "__reduce__": "an object's state as data",
    "__reduce_ex__": "an object's state as data",
    "__getstate__": "an object's state as data",
    "methodcaller": "a method named by a string",
    "Formatter": "dotted names resolved from a string",
}
COMPUTED_KEY_NAMES = {"methodcaller": "a method named by a string", "Formatter": "dotted names resolved from a string"}
COMPUTED_KEY_MODULES = {
    "pkgutil": "resolves dotted names from a string",
    "pydoc": "resolves dotted names from a string",
    "pickle": "resolves any module's names from a string",
    "_pickle": "resolves any module's names from a string",
    "copyreg": "resolves any module's names from a string",
    "marshal": "code objects",
    "runpy": "dynamic code",
    "code": "dynamic code",
    "codeop": "dynamic code",
}


def _computed_keys(tree) -> list[str]:
    """Lookups by a general key (what `getattr` with a computed name is to attributes): an object's `__dict__` or
    `vars(x)` indexed by a computed key, iterated, copied or handed on (`type(f).__dict__[k]`, `vars(m).items()`,
    `operator.getitem(m.__dict__, k)`, `dict(vars(m))[k]`); an explicit `__getattr__` and its kin; an object's state
    as data; methodcaller, string.Formatter, pkgutil, pydoc, pickle. Lookups with a constant name were read as
    attributes before this runs (`torch.__dict__["autograd"]` is `torch.autograd`)."""
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        parent = parents.get(id(node))
        code: ast.AST
        if _attribute_table(node) is not None:
            if isinstance(parent, ast.Subscript) and parent.value is node:
                code, why = parent, "an object's attributes indexed by a computed key"
            elif isinstance(parent, ast.Attribute) and parent.value is node:
                code, why = parent, "an object's attributes read as a dict"
            else:
                code, why = node, "an object's attributes as a dict, handed on"
        elif isinstance(node, ast.Attribute) and node.attr in COMPUTED_KEY_ATTRIBUTES:
            code = parent if isinstance(parent, ast.Call) and parent.func is node else node
            why = COMPUTED_KEY_ATTRIBUTES[node.attr]
        elif isinstance(node, ast.Name) and node.id in COMPUTED_KEY_NAMES and isinstance(node.ctx, ast.Load):
            code, why = node, COMPUTED_KEY_NAMES[node.id]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            imported = [(m, COMPUTED_KEY_MODULES.get(m.split(".")[0])) for m in modules]
            if isinstance(node, ast.ImportFrom):
                imported += [(a.name, COMPUTED_KEY_NAMES.get(a.name)) for a in node.names]
            found += [
                f"a name built at run time: imports {m} ({why}: what it reaches cannot be read)"
                for m, why in imported
                if why
            ]
            continue
        else:
            continue
        shown = ast.unparse(code)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        found.append(f"a name built at run time: {shown} ({why}: what it reaches cannot be read)")
    return found


PROCESS_INTERNALS = re.compile(r"/proc/[^/\s]*/(fd|fdinfo|mem|maps|map_files|task)(/|\b|$)")


def _process_internals(node: ast.Constant | ast.JoinedStr) -> bool:
    """A path to a process's descriptors or memory (`/proc/self/fd`, `f"/proc/{pid}/mem"`): duplicating, reopening or
    writing through the kernel's descriptors reaches no probe record (grading/records.py), but the kernel's own memory
    is what a probe computes its record in, and another process's is a courier's where it is not protected."""
    values = node.values if isinstance(node, ast.JoinedStr) else [node]
    pieces = [v.value if isinstance(v, ast.Constant) else "*" for v in values]
    text = "".join(
        p.decode(errors="replace") if isinstance(p, bytes) else p for p in pieces if isinstance(p, str | bytes)
    )
    return PROCESS_INTERNALS.search(text) is not None


def _dynamic_attribute(node: ast.Call) -> bool:
    """getattr/setattr/delattr/hasattr with a name that is not a constant (constant ones are read as attributes)."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id in ATTRIBUTE_LOOKUPS
        and len(node.args) >= 2
        and not isinstance(node.args[1], ast.Constant)
    )


def import_aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> the module path it stands for, from the imports of a cell (`import torch.autograd as ag`,
    `from torch import autograd as ag`, `import torch as T`)."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _resolved(dotted: str, aliases: dict[str, str]) -> str:
    root, _, rest = dotted.partition(".")
    return ".".join(p for p in (aliases.get(root, root), rest) if p)


def uses_autograd(source: str) -> list[str]:
    """How this code hands work to PyTorch's autograd (empty: it does not)."""
    tree = _parsed(source)
    if tree is None:
        return []
    aliases = import_aliases(tree)
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}  # not the end of a dotted name
    found, backward, requires_grad = [], False, False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = _resolved(_dotted(node), aliases)
            if any(dotted == c or dotted.startswith(c + ".") for c in AUTOGRAD_CALLS):
                found.append(dotted)
            elif id(node) not in inner and dotted in ("torch.autograd", "torch.func"):
                found.append(f"{dotted} itself (getattr, or a name for it)")
            if node.attr in ("grad_fn", "next_functions"):
                found.append(f"autograd's own graph nodes (.{node.attr})")
            if dotted.startswith("torch.") and node.attr.endswith("_backward"):
                found.append(f"PyTorch's own derivative ({dotted})")
            if node.attr in ("requires_grad", "requires_grad_", "Parameter"):  # a Parameter requires grad
                requires_grad = True
            if node.attr == "backward" and isinstance(getattr(node, "ctx", None), ast.Load):
                backward = True
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            ("torch.func", "functorch", "torch.autograd")
        ):
            found += [f"{node.module}.{a.name}" for a in node.names if a.name not in HONEST_AUTOGRAD_NAMES]
        elif isinstance(node, ast.ImportFrom) and node.module == "torch":
            found += [f"torch.{a.name}" for a in node.names if a.name in ("autograd", "func")]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith(("torch.autograd", "torch.func", "functorch"))]
        elif (
            isinstance(node, ast.keyword)
            and node.arg == "requires_grad"
            or isinstance(node, ast.Name)
            and node.id == "Parameter"
        ):
            requires_grad = True
    if backward and requires_grad:
        found.append(".backward() on tensors that require grad")
    return list(dict.fromkeys(found))


def _defined_names(tree) -> set[str]:
    """Names a cell defines, and the classes whose attributes it sets (Variable.__mul__ = ...)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                while isinstance(target, ast.Attribute):
                    target = target.value
                if isinstance(target, ast.Name):
                    names.add(target.id)
    return names


def by_hand_names(spec_nb: NotebookSpec, checks: dict, attribute: str = "by_hand") -> dict[str, str]:
    """Learner name -> the exercise's test cell, for every check call of the notebook whose check has `attribute`
    (by-hand exercises; exercises whose memory is measured)."""
    out: dict[str, str] = {}
    for cell in spec_nb.cells:
        for call in cell.calls:
            if getattr(checks[call.check], attribute):
                out.setdefault(call.expr.split(".")[0].split("[")[0], cell.grade_id)
    return out


def uses_numpy(source: str) -> list[str]:
    """How a cell reaches NumPy: importing it, or turning a tensor into an array (`.numpy()`, `torch.from_numpy`)."""
    tree = _parsed(source)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "numpy" for a in node.names):
            found.append("import numpy")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy":
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Attribute) and node.attr in ("numpy", "from_numpy", "__array__"):
            found.append(f".{node.attr}")
    return list(dict.fromkeys(found))


def _free_names(tree) -> set[str]:
    """Names a cell uses but does not bind anywhere in it (not its locals, arguments or imports): what it takes
    from other cells."""
    bound = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            bound.add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in n.names}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def by_hand_cells(cells: list[tuple[str, str]], by_hand: dict[str, str]) -> dict[str, set[str]]:
    """(where, source) of the learner's cells -> {where: the by-hand exercises (test grade_ids) the cell takes part in}:
    a cell that defines an exercise's name, and, transitively, a cell that defines a helper such a cell uses
    (backward = staticmethod(my_grad) with my_grad in a cell of its own is still the exercise's backward)."""
    trees = {}
    for where, source in cells:
        try:
            trees[where] = ast.parse(source)
        except SyntaxError:
            continue
    defined = {where: _defined_names(tree) for where, tree in trees.items()}
    used = {where: _free_names(tree) for where, tree in trees.items()}
    names = {name: {gid} for name, gid in by_hand.items()}  # name -> exercises it serves
    changed = True
    while changed:
        changed = False
        for where in trees:
            serves = set().union(*(names.get(n, set()) for n in defined[where]))
            if not serves:
                continue
            for name in used[where]:
                if any(name in defined[other] for other in trees if other != where) and not serves <= names.get(
                    name, set()
                ):
                    names[name] = names.get(name, set()) | serves
                    changed = True
    return {where: set().union(*(names.get(n, set()) for n in defined[where])) for where in trees}


def screen(
    nb: NotebookNode, spec_nb: NotebookSpec, checks: dict, own_modules: dict[str, str] | None = None
) -> list[Flag]:
    """Flags for the learner's code cells (answer cells and cells the learner added) and for the learner's own .py
    files handed in with the notebook (`own_modules`: module name -> source), which the kernel can import."""
    locked = {c.grade_id for c in spec_nb.cells if c.grade_id and not c.solution}
    released = set(spec_nb.plain)
    own = dict(own_modules or {})
    flags, learners = [], []
    code = [(f"your file {name}.py", source) for name, source in sorted(own.items())]
    for index, cell in enumerate(nb.cells):
        gid = nbgrader_meta(cell).get("grade_id")
        if cell.cell_type != "code" or gid in locked or not gid and normalized(cell.source) in released:
            # the instructor's copy of a locked cell runs; an unchanged cell of the release is the instructor's
            continue
        code.append((f"exercise {gid}" if gid else f"a cell you added (cell {index})", cell.source))
    by_hand = by_hand_cells(code, by_hand_names(spec_nb, checks))
    for where, source in code:
        for reason in reaches(source, frozenset(own)):
            if by_hand.get(where) and reason.startswith("a name built at run time"):
                reason += (
                    f"; it answers {', '.join(sorted(by_hand[where]))} (done by hand): autograd may be what it reaches"
                )
            flags.append(Flag("reaches_for_grader", f"{where}: {reason}"))
        learners.append((where, source))
    sources = dict(learners)
    for where, exercises in by_hand.items():
        if exercises:
            for how in uses_autograd(sources[where]):
                flags.append(
                    Flag(
                        "by_hand_with_autograd",
                        f"{where} answers {', '.join(sorted(exercises))} (done by hand) with PyTorch's autograd: {how}",
                    )
                )
    for where, exercises in by_hand_cells(learners, by_hand_names(spec_nb, checks, "measures_memory")).items():
        hows = uses_numpy(sources[where]) if exercises else []
        if hows:
            served = ", ".join(sorted(exercises))
            flags.append(Flag("memory_out_of_sight", f"{where} answers {served} with NumPy: {', '.join(hows)}"))
    return flags
