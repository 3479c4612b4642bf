"""The lesson's measurement cells: timings and plots that teach but grade nothing. The course author marks one
with cell metadata ``{"revad": {"measurement": true}}``; grading does not run it while the learner's copy of it
is unchanged (it runs as any cell once edited). Release refuses a mark on a cell whose names a later cell
uses, so that leaving it out can change no test's outcome."""

from __future__ import annotations

import ast
import symtable

from nbformat import NotebookNode

from .read import normalized

NOT_RUN_NOTE = "[not run by the grader: an unchanged measurement cell of the lesson; no test depends on it]\n"


def is_measurement(cell: NotebookNode) -> bool:
    revad = cell.get("metadata", {}).get("revad", {})
    return cell.get("cell_type") == "code" and isinstance(revad, dict) and revad.get("measurement") is True


def measurement_sources(cells: list[NotebookNode]) -> list[str]:
    """The normalised sources of the marked cells of the instructor's release: what a learner's cell must equal
    to be left out."""
    return sorted({normalized(c["source"]) for c in cells if is_measurement(c)})


def _bound(tree: ast.AST | str) -> set[str]:
    """Names a statement (or cell) binds at the top level of the notebook: assignments, defs, imports, loop
    and with targets, deletions (a function's own locals are not the notebook's)."""
    names = set()
    source = tree if isinstance(tree, str) else ast.unparse(tree)
    for sym in symtable.symtable(source, "<cell>", "exec").get_symbols():
        if sym.is_assigned() or sym.is_imported() or sym.is_namespace():
            names.add(sym.get_name())
    return names


def _reads(tree: ast.AST | str) -> set[str]:
    """Names a statement reads from the notebook's top level: at the top level itself, or as globals inside
    the functions, lambdas and comprehensions it defines (read when they are called)."""
    names = set()

    def walk(table: symtable.SymbolTable, top: bool) -> None:
        for sym in table.get_symbols():
            if sym.is_referenced() and (top or sym.is_global()):
                names.add(sym.get_name())
        for child in table.get_children():
            walk(child, False)

    walk(symtable.symtable(tree if isinstance(tree, str) else ast.unparse(tree), "<cell>", "exec"), True)
    return names


def _steps(tree: ast.Module) -> list[tuple[set[str], set[str]]]:
    """(names read, names bound) in the order a cell runs them. A for loop or a with block binds its target
    before its body reads it; any other statement counts as reading before it binds."""
    steps: list[tuple[set[str], set[str]]] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            steps.append((_reads(ast.unparse(stmt.iter)), set()))
            steps.append((set(), _bound(f"{ast.unparse(stmt.target)} = None")))
            body = "\n".join(ast.unparse(s) for s in stmt.body + stmt.orelse)
            steps.append((_reads(body), _bound(body)))
        else:
            steps.append((_reads(stmt), _bound(stmt)))
    return steps


def _parse(source: str) -> ast.Module | None:
    # IPython magics and shell escapes are not Python: such a cell can be neither a measurement nor read for names
    try:
        tree = ast.parse(source)
        symtable.symtable(source, "<cell>", "exec")
    except SyntaxError:
        return None
    return tree


def measurement_problems(cells: list[NotebookNode]) -> list[str]:
    """Why each marked cell of a notebook may not be left out: it does not parse, or a later cell that is not
    itself a measurement reads a name it binds (the rebinding of a name in between is not tracked: a name
    reused later is refused even when rebound first, which errs on the side of running the cell)."""
    problems = []
    code = [(i, c) for i, c in enumerate(cells) if c.get("cell_type") == "code"]
    for i, cell in code:
        if not is_measurement(cell):
            continue
        if cell.get("metadata", {}).get("nbgrader"):
            problems.append(f"cell {i}: an nbgrader cell (an answer or a test) cannot be a measurement")
            continue
        tree = _parse(cell["source"])
        if tree is None:
            problems.append(f"cell {i}: a measurement cell must be plain Python")
            continue
        live = _bound(tree)  # what the cell binds and no later cell has bound again yet
        for j, later in code:
            if j <= i or is_measurement(later) or not live:
                continue
            later_tree = _parse(later["source"])
            if later_tree is None:
                problems.append(f"cell {i}: marked as a measurement, and cell {j}, after it, is not plain Python")
                break
            used = set()
            for reads, binds in _steps(later_tree):
                used |= reads & live
                live -= binds
            if used:
                problems.append(
                    f"cell {i}: marked as a measurement, but cell {j} uses {', '.join(sorted(used))} from it: "
                    f"leaving it out would change what cell {j} does"
                )
    return problems
