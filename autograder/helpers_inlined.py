"""An answer with its own helper functions written into their calls: the form the similarity check compares besides
the answer as written (issue 50). A copier who inlines the original's helpers, or pulls its code out into helpers,
changes how the code is split, not what it does; written into their calls, the helpers of both answers are gone and
the two read alike again.

Only what a person would inline by hand is: a function defined in the answer (at its top or inside another function),
not recursive, not decorated, whose only `return` is its last statement (or `if c: return a` then `return b`, which
becomes `a if c else b`). A call that is a statement becomes the helper's body; a call inside an expression becomes the
helper's returned expression, its other statements written before the statement holding the call. Parameters become
the call's arguments. The result is for comparison only, never run: a call inside a loop's condition or a
comprehension is written before it, which is what a copier's text looks like, not what Python would do.
"""

from __future__ import annotations

import ast
import copy

ROUNDS = 4  # a helper calling a helper: written in round after round, as deep as this


def helpers_inlined(code: str) -> str | None:
    """The answer with its helpers written into their calls (ast.unparse's layout), or None when it has none (or
    does not parse)."""
    try:
        return _inlined(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python, or nested past what the parser takes
        return None


def _inlined(code: str) -> str | None:
    tree = ast.parse(code)
    changed = False
    for _ in range(ROUNDS):
        helpers = _helpers(tree)
        if not helpers:
            break
        inliner = _Inliner(helpers)
        tree.body = inliner.block(tree.body)
        if not inliner.inlined:
            break
        changed = True
        _drop_unused(tree, set(helpers))
    return ast.unparse(_Tidy().visit(tree)) if changed else None


def _helpers(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """name -> definition, for each function of the answer that can be written into its calls."""
    found: dict[str, list[ast.FunctionDef]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            found.setdefault(node.name, []).append(node)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    out = {}
    for name, defs in found.items():
        if len(defs) != 1 or name not in called:
            continue
        (fn,) = defs
        body = _without_docstring(fn.body)
        if fn.decorator_list or not body or _plain_args(fn) is None or _calls(fn, name):
            continue
        body = _early_return_joined(body)
        if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Nonlocal, ast.Global)) for n in ast.walk(fn)):
            continue
        if any(isinstance(n, ast.Return) for s in body[:-1] for n in ast.walk(s)):
            continue  # a return in the middle: not a thing to inline by hand
        helper = copy.copy(fn)  # the definition as it will be written in: docstring gone, early return joined
        helper.body = body
        out[name] = helper
    return out


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return body[1:]
    return body


def _early_return_joined(body: list[ast.stmt]) -> list[ast.stmt]:
    """`if c: return a` then `return b` (or `if c: return a else: return b`) at the end: `return a if c else b`."""
    if len(body) >= 2 and isinstance(body[-1], ast.Return) and _returns_only(body[-2]):
        test: ast.If = body[-2]  # type: ignore[assignment]
        if not test.orelse:
            joined = ast.IfExp(test.test, test.body[0].value, body[-1].value)  # type: ignore[attr-defined]
            return [*body[:-2], ast.Return(joined)]
    if body and _returns_only(body[-1]) and body[-1].orelse:  # type: ignore[attr-defined]
        test = body[-1]  # type: ignore[assignment]
        if len(test.orelse) == 1 and isinstance(test.orelse[0], ast.Return):
            joined = ast.IfExp(test.test, test.body[0].value, test.orelse[0].value)  # type: ignore[attr-defined]
            return [*body[:-1], ast.Return(joined)]
    return body


def _returns_only(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.If)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], ast.Return)
        and stmt.body[0].value is not None
        and (not stmt.orelse or (len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.Return)))
        and all(r.value is not None for r in stmt.orelse if isinstance(r, ast.Return))
    )


def _plain_args(fn: ast.FunctionDef) -> list[str] | None:
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        return None
    return [arg.arg for arg in a.args]


def _calls(fn: ast.FunctionDef, name: str) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name for n in ast.walk(fn))


class _Inliner:
    """Writes helpers into their calls, block by block (a hoisted statement goes into the block of the statement
    that held the call)."""

    def __init__(self, helpers: dict[str, ast.FunctionDef]):
        self.helpers = helpers
        self.inlined = 0

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            if isinstance(stmt, ast.FunctionDef) and stmt.name in self.helpers:
                out.append(stmt)  # dropped later if no call is left
                continue
            if isinstance(stmt, ast.Expr) and self._is_helper_call(stmt.value):
                body = self._body_for(stmt.value)  # type: ignore[arg-type]
                if body is not None:
                    *before, last = body
                    out.extend(self.block(before))
                    if not (isinstance(last, ast.Return) and last.value is None):
                        out.extend(self.block([ast.Expr(last.value) if isinstance(last, ast.Return) else last]))
                    continue
            hoisted: list[ast.stmt] = []
            for field, value in ast.iter_fields(stmt):
                if isinstance(value, list) and value and all(isinstance(v, ast.stmt) for v in value):
                    setattr(stmt, field, self.block(value))
                elif isinstance(value, list):
                    setattr(stmt, field, [self._expression(v, hoisted) for v in value])
                elif isinstance(value, ast.AST):
                    setattr(stmt, field, self._expression(value, hoisted))
            out.extend(self.block(hoisted))
            out.append(stmt)
        return out

    def _is_helper_call(self, node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.helpers

    def _body_for(self, call: ast.Call) -> list[ast.stmt] | None:
        """The helper's body with its parameters replaced by the call's arguments, or None if they do not match."""
        fn = self.helpers[call.func.id]  # type: ignore[attr-defined]
        params = _plain_args(fn) or []
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        defaults = dict(zip(params[len(params) - len(fn.args.defaults) :], fn.args.defaults))
        given = dict(zip(params, call.args)) | {str(k.arg): k.value for k in call.keywords}
        if len(call.args) > len(params) or any(p not in given and p not in defaults for p in params):
            return None
        bound = {p: given.get(p, defaults.get(p)) for p in params}
        self.inlined += 1
        return [_Substitute(bound).visit(copy.deepcopy(s)) for s in fn.body]

    def _expression(self, node: ast.AST, hoisted: list[ast.stmt]) -> ast.AST:
        inliner = self

        class Calls(ast.NodeTransformer):
            def visit_Call(self, call: ast.Call) -> ast.AST:
                self.generic_visit(call)
                if not inliner._is_helper_call(call):
                    return call
                body = inliner._body_for(call)
                if body is None:
                    return call
                *before, last = body
                hoisted.extend(before)
                if isinstance(last, ast.Return) and last.value is not None:
                    return last.value
                hoisted.append(last)
                return ast.Constant(None)

            def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
                return node  # its own scope: left as written

        return Calls().visit(node)


class _Substitute(ast.NodeTransformer):
    def __init__(self, bound: dict[str, ast.expr | None]):
        self.bound = bound

    def visit_Name(self, node: ast.Name) -> ast.AST:
        value = self.bound.get(node.id)
        if isinstance(node.ctx, ast.Load) and value is not None:
            return copy.deepcopy(value)
        return node


class _Tidy(ast.NodeTransformer):
    """What writing a call out leaves that no person would write: `x + -y` (a step of -h) and `x = x`."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Add) and isinstance(node.right, ast.UnaryOp) and isinstance(node.right.op, ast.USub):
            return ast.BinOp(node.left, ast.Sub(), node.right.operand)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST | None:
        self.generic_visit(node)
        (target, *more), value = node.targets, node.value
        same = isinstance(target, ast.Name) and isinstance(value, ast.Name) and target.id == value.id
        return None if same and not more else node


def _drop_unused(tree: ast.Module, names: set[str]) -> None:
    """Remove each helper definition whose name nothing reads any more."""
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    gone = names - read

    class Drop(ast.NodeTransformer):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST | None:
            self.generic_visit(node)
            return None if node.name in gone else node

    Drop().visit(tree)
    for node in ast.walk(tree):  # a block left empty by a dropped definition holds `pass`, so that it unparses
        if isinstance(getattr(node, "body", None), list) and not node.body:  # type: ignore[attr-defined]
            node.body = [ast.Pass()]  # type: ignore[attr-defined]
