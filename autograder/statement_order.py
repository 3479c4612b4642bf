"""An answer's independent statements put in one order, and `if not c: A else: B` written `if c: B else: A`: the
other half of the normal form the similarity check compares (issue 50, with autograder/helpers_inlined.py). A copier
who swaps two statements that do not touch each other's names, moves a constant below the function, or turns an
`if` around changes the text, not the program; in this order two such answers read alike again.

Two statements of a block may change places when neither writes a name the other reads or writes (a subscript,
attribute or method call on a name writes it; a call of a plain function is taken to change nothing, as `len`, `abs`
and `Variable` do: the order is for comparing, and a wrong guess only moves a statement in both answers alike).
A compound statement (`if`, `for`, `while`, `with`, `try`) is a wall nothing moves across, except
at the top of a cell, where definitions, imports and constants are ordered like the rest. Among the statements free to
go next, the one whose text (every name written `_`) comes first in the alphabet goes first: the order depends on
what the statements do, not on their names. For comparison only, never run.
"""

from __future__ import annotations

import ast
import copy

EVERYTHING = "*"  # the write of something that is not a plain name (a call's result changed in place)


def in_canonical_order(tree: ast.Module) -> ast.Module:
    """The tree, each block's independent statements ordered, each `if not` with an else turned around."""
    _Flip().visit(tree)
    tree.body = _ordered(tree.body, top=True)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if node is not tree and isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, _ordered(block, top=False))
    return tree


class _Flip(ast.NodeTransformer):
    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        if node.orelse and isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not):
            return ast.If(node.test.operand, node.orelse, node.body)
        return node


COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith, ast.Match)
ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def _ordered(block: list[ast.stmt], top: bool) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    run: list[ast.stmt] = []
    for stmt in block:
        if isinstance(stmt, ENDS) or (isinstance(stmt, COMPOUND) and not top):
            out += _sorted_run(run) + [stmt]
            run = []
        else:
            run.append(stmt)
    return out + _sorted_run(run)


def _sorted_run(run: list[ast.stmt]) -> list[ast.stmt]:
    """The run's statements, each after every earlier one it depends on, the smallest text first among the free."""
    if len(run) < 2:
        return run
    effects = [_reads_writes(s) for s in run]
    after = [
        {i for i in range(j) if _conflict(effects[i], effects[j])}  # what statement j must follow
        for j in range(len(run))
    ]
    keys = [_text(s) for s in run]
    placed: list[int] = []
    while len(placed) < len(run):
        free = [j for j in range(len(run)) if j not in placed and after[j] <= set(placed)]
        placed.append(min(free, key=lambda j: (keys[j], j)))
    return [run[j] for j in placed]


def _conflict(first: tuple[set[str], set[str]], second: tuple[set[str], set[str]]) -> bool:
    (reads1, writes1), (reads2, writes2) = first, second
    if EVERYTHING in writes1 | writes2:
        return True
    return bool(writes1 & (reads2 | writes2) or writes2 & reads1)


def _reads_writes(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    reads: set[str] = set()
    writes: set[str] = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return reads, {stmt.name}  # its body runs later
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else writes).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            writes |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            writes.add(_base(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            writes.add(_base(node.func))  # x.append(...): x changes
        elif isinstance(node, ast.AugAssign):
            writes.add(_base(node.target))
    return reads, writes


def _base(node: ast.expr) -> str:
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else EVERYTHING


class _Nameless(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Name("_", node.ctx)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.arg("_")


def _text(stmt: ast.stmt) -> str:
    return ast.unparse(_Nameless().visit(copy.deepcopy(stmt)))
