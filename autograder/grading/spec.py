"""What the workers know about an assignment, and how an instructor's test cell is read.

:func:`assignment_spec` lists, per notebook, its nbgrader cells in release order with the release's
source and the instructor's (hidden tests included, from the gradebook); it is written once per run
to ``spec.json`` beside the jobs. :func:`parse_check_calls` reads the ``check_x(learner_name,
key=<literal>, ...)`` calls of an instructor's test cell: the calls the grader re-runs as probes.
"""
from __future__ import annotations

import ast
from pathlib import Path

from ..coursedir import nbgrader_api, quiet_nbgrader, require_success

HIDDEN_BEGIN, HIDDEN_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


def _split_hidden(source: str) -> tuple[list[str], list[str]]:
    """(visible lines, hidden-test lines) of a test cell; the marker lines belong to neither."""
    visible, hidden_part, hidden = [], [], False
    for line in source.splitlines():
        if HIDDEN_BEGIN in line:
            hidden = True
        elif HIDDEN_END in line:
            hidden = False
        else:
            (hidden_part if hidden else visible).append(line)
    return visible, hidden_part


def hidden_stripped(source: str) -> str:
    return "\n".join(_split_hidden(source)[0])


def hidden_lines(source: str) -> list[str]:
    return [line.strip() for line in _split_hidden(source)[1] if len(line.strip()) >= 8]


def check_modules(source: str) -> list[str]:
    """autograder.* modules a test cell imports its checks from."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return sorted({n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                   and n.module.startswith("autograder.")}
                  | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                     if a.name.startswith("autograder.")})


def parse_check_calls(source: str, known: set[str]) -> list[tuple[str, str, dict]] | None:
    """The `check_x(learner_name, key=<literal>, ...)` calls of an instructor's test cell, in order:
    (check name, source of the learner expression, params). None when the cell has none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    aliases = {name: name for name in known}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder"):
            for alias in node.names:
                if alias.name in known:
                    aliases[alias.asname or alias.name] = alias.name
    calls = []
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in aliases):
            continue
        if len(value.args) != 1 or any(k.arg is None for k in value.keywords):
            raise ValueError(f"{value.func.id}(...) must be called as check_x(learner_name, key=<literal>, ...)")
        params = {k.arg: ast.literal_eval(k.value) for k in value.keywords}
        calls.append((aliases[value.func.id], ast.unparse(value.args[0]), params))
    return calls or None


def assignment_spec(course_root: Path, assignment: str, db_url: str, source: str, release: str) -> dict:
    """What the workers need to know about the assignment: per notebook, its nbgrader cells in release
    order, with the release's source and the instructor's (hidden tests included, from the gradebook)."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    release_dir = Path(course_root) / release / assignment
    with Gradebook(db_url) as gb:
        try:
            gb_assignment = gb.find_assignment(assignment)
        except MissingEntry:
            gb_assignment = None
        if gb_assignment is None or not gb_assignment.notebooks or not release_dir.is_dir():
            gb_assignment = None
    if gb_assignment is None:  # record the assignment's cells the way nbgrader does: generate_assignment
        api = nbgrader_api(Path(course_root), source=source, release=release, db_url=db_url)
        with quiet_nbgrader():
            require_success(api.generate_assignment(assignment, force=True, create=True),
                            f"generate_assignment {assignment}")
    notebooks = {}
    with Gradebook(db_url) as gb:
        for nb_row in gb.find_assignment(assignment).notebooks:
            path = release_dir / f"{nb_row.name}.ipynb"
            released = nbformat.read(path, as_version=4)
            cells = []
            for cell in released.cells:
                meta = cell.metadata.get("nbgrader", {})
                gid = meta.get("grade_id")
                if not gid:
                    continue
                try:
                    instructor = gb.find_source_cell(gid, nb_row.name, assignment).source
                except MissingEntry:
                    instructor = cell.source
                points = 0.0
                if meta.get("grade"):
                    try:
                        points = float(gb.find_graded_cell(gid, nb_row.name, assignment).max_score)
                    except MissingEntry:
                        points = float(meta.get("points", 0))
                clean_meta = {k: v for k, v in meta.items() if k != "checksum"}
                cells.append({"grade_id": gid, "cell_type": cell.cell_type, "grade": bool(meta.get("grade")),
                              "solution": bool(meta.get("solution")), "locked": bool(meta.get("locked")),
                              "points": points, "release_source": cell.source, "source": instructor,
                              "metadata": clean_meta})
            notebooks[nb_row.name] = {"cells": cells}
    modules = sorted({m for nb in notebooks.values() for c in nb["cells"] if c["grade"] for m in check_modules(c["source"])})
    return {"assignment": assignment, "notebooks": dict(sorted(notebooks.items())), "modules": modules}
