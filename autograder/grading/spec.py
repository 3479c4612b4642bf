"""What the workers know about an assignment, and how an instructor's test cell is read.

:func:`assignment_spec` lists, per notebook, its nbgrader cells in release order with the release's
source and the instructor's (hidden tests included, from the gradebook); it is written once per run
to ``spec.json`` beside the jobs. :func:`parse_check_calls` reads the ``check_x(learner_name,
key=<literal>, ...)`` calls of an instructor's test cell: the calls the grader re-runs as probes.
"""

from __future__ import annotations

import ast
import importlib
import json
import shutil
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from nbformat import NotebookNode

from ..coursedir import nbgrader_api, quiet_nbgrader, require_success
from ..hidden_tests import hidden_line_numbers, hidden_source_lines, visible_source
from .measurements import measurement_sources
from .read import normalized


@dataclass(frozen=True)
class CheckCall:
    """One `check_x(learner_expression, key=<literal>, ...)` statement of an instructor's test cell."""

    check: str  # the registered name
    expr: str  # source of the learner's object, e.g. "primal_trace"
    params: dict  # literals; `draw=N` asks for N generated cases
    first_line: int  # 1-based lines of the statement in the cell
    last_line: int
    hidden: bool  # inside BEGIN/END HIDDEN TESTS

    def to_dict(self) -> dict:
        """JSON-ready, the params as their Python literal: tuples survive the trip between processes."""
        return {**asdict(self), "params": repr(self.params)}

    @classmethod
    def from_dict(cls, data: dict) -> CheckCall:
        return cls(**{**data, "params": ast.literal_eval(data["params"])})


class UntrustedCell(ValueError):
    """A test cell the grader cannot read as trusted; the message says what to change."""


@dataclass(frozen=True)
class CellSpec:
    """One nbgrader cell of the release, as the grader knows it."""

    grade_id: str
    cell_type: str
    grade: bool  # a test cell (or a manually graded one)
    solution: bool  # an answer cell
    locked: bool
    points: float  # the gradebook's: the one place points are written
    release_source: str  # what the learner was given
    source: str  # the instructor's, hidden tests included
    metadata: dict = field(default_factory=dict)  # its nbgrader metadata, without the checksum
    # a code test cell's check calls, read once from `source` (parsed_calls); or why they cannot be trusted
    calls: tuple[CheckCall, ...] = ()
    untrusted: str | None = None
    shown_calls: int | None = None  # how many of the calls the learner's copy shows (None: it cannot be read)

    @property
    def is_test(self) -> bool:
        return self.grade and not self.solution

    @property
    def has_calls(self) -> bool:
        return self.is_test and self.cell_type == "code"

    def to_dict(self) -> dict:
        return {**asdict(self), "calls": [call.to_dict() for call in self.calls]}

    @classmethod
    def from_dict(cls, data: dict) -> CellSpec:
        return cls(**{**data, "calls": tuple(CheckCall.from_dict(c) for c in data["calls"])})

    def parsed(self) -> CellSpec:
        """This cell with its check calls read from the instructor's source (and counted in the learner's), once
        for every stage that needs them: the checks' modules are imported first, so their names are known."""
        if not self.has_calls:
            return self
        from ..registry import CHECKS

        for module in check_modules(self.source):
            importlib.import_module(module)
        known = set(CHECKS)
        try:
            calls = tuple(parse_check_calls(self.source, known))
        except UntrustedCell as exc:
            return replace(self, calls=(), untrusted=str(exc), shown_calls=None)
        try:
            shown: int | None = len(parse_check_calls(self.release_source, {c.check for c in calls}))
        except UntrustedCell:
            shown = None
        return replace(self, calls=calls, untrusted=None, shown_calls=shown)


@dataclass(frozen=True)
class NotebookSpec:
    cells: list[CellSpec]
    plain: list[str] = field(default_factory=list)  # the release's code cells without nbgrader metadata, normalized
    measurements: list[str] = field(default_factory=list)  # the measurement cells' sources, normalized

    @property
    def by_id(self) -> dict[str, CellSpec]:
        return {c.grade_id: c for c in self.cells}

    @classmethod
    def from_dict(cls, data: dict) -> NotebookSpec:
        return cls([CellSpec.from_dict(c) for c in data["cells"]], list(data["plain"]), list(data["measurements"]))

    def to_dict(self) -> dict:
        return {"cells": [c.to_dict() for c in self.cells], "plain": self.plain, "measurements": self.measurements}

    @classmethod
    def from_release(cls, nb: NotebookNode) -> NotebookSpec:
        """The spec of a released notebook read on its own (no gradebook): the release's sources and points."""
        cells = []
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade_id"):
                points = float(meta.get("points", 0)) if meta.get("grade") else 0.0
                clean = {k: v for k, v in meta.items() if k != "checksum"}
                cells.append(
                    CellSpec(
                        grade_id=meta["grade_id"],
                        cell_type=cell.cell_type,
                        grade=bool(meta.get("grade")),
                        solution=bool(meta.get("solution")),
                        locked=bool(meta.get("locked")),
                        points=points,
                        release_source=cell.source,
                        source=cell.source,
                        metadata=clean,
                    ).parsed()
                )
        plain = [
            normalized(c.source)
            for c in nb.cells
            if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("grade_id")
        ]
        return cls(cells, plain, measurement_sources(nb.cells))


@dataclass(frozen=True)
class AssignmentSpec:
    """What every worker needs to know about the assignment, written once per run as spec.json."""

    assignment: str
    notebooks: dict[str, NotebookSpec]
    modules: list[str]  # the checks' modules the test cells import

    def to_json(self) -> str:
        notebooks = {name: nb.to_dict() for name, nb in self.notebooks.items()}
        return json.dumps(
            {"assignment": self.assignment, "notebooks": notebooks, "modules": self.modules}, sort_keys=True
        )

    @classmethod
    def from_json(cls, text: str) -> AssignmentSpec:
        data = json.loads(text)
        notebooks = {name: NotebookSpec.from_dict(nb) for name, nb in data["notebooks"].items()}
        return cls(data["assignment"], notebooks, list(data["modules"]))


def hidden_stripped(source: str) -> str:
    return visible_source(source)


def hidden_lines(source: str) -> list[str]:
    """The hidden tests' lines long enough to be recognised if they turn up in a learner's output."""
    return [line.strip() for line in hidden_source_lines(source) if len(line.strip()) >= 8]


def check_modules(source: str) -> list[str]:
    """autograder.* modules a test cell imports its checks from."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return sorted(
        {
            n.module
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("autograder.")
        }
        | {
            a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import)
            for a in n.names
            if a.name.startswith("autograder.")
        }
    )


def _aliases(tree, known: set[str]) -> dict[str, str]:
    aliases = {name: name for name in known}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autograder"):
            for alias in node.names:
                if alias.name in known:
                    aliases[alias.asname or alias.name] = alias.name
    return aliases


def parse_check_calls(source: str, known: set[str]) -> list[CheckCall]:
    """The check calls of an instructor's test cell, in order. Every call of a known check must be a
    statement of its own at the top level of the cell, `check_x(learner_name, key=<literal>, ...)`:
    anything else (inside a loop, an `if`, a function; computed arguments) raises UntrustedCell,
    as does a graded test cell with no check call at all."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise UntrustedCell(f"the test cell does not parse ({exc.msg}, line {exc.lineno})") from None
    aliases = _aliases(tree, known)
    hidden = hidden_line_numbers(source)
    top = {id(stmt.value) for stmt in tree.body if isinstance(stmt, (ast.Expr, ast.Assign))}
    calls = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in aliases):
            continue
        name = node.func.id
        if id(node) not in top:
            raise UntrustedCell(
                f"line {node.lineno}: {name}(...) must be a statement of its own at the top level of "
                "the test cell, not inside a loop, an `if`, a function or another expression"
            )
        if len(node.args) != 1 or any(k.arg is None for k in node.keywords):
            raise UntrustedCell(
                f"line {node.lineno}: {name}(...) must be called as check_x(learner_name, key=<literal>, ...)"
            )
        try:
            params = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        except ValueError:
            raise UntrustedCell(f"line {node.lineno}: the arguments of {name}(...) must be Python literals") from None
        calls.append(
            CheckCall(
                aliases[name],
                ast.unparse(node.args[0]),
                params,
                node.lineno,
                node.end_lineno or node.lineno,
                node.lineno in hidden,
            )
        )
    if not calls:
        raise UntrustedCell("a graded test cell must call at least one check (`check_x(learner_name, ...)`)")
    return sorted(calls, key=lambda c: c.first_line)


def assignment_spec(course_root: Path, assignment: str, db_url: str, source: str, release: str) -> AssignmentSpec:
    """What the workers need to know about the assignment: per notebook, its nbgrader cells in release
    order, with the release's source and the instructor's (hidden tests included, from the gradebook)."""
    from autograder.gradebook import Gradebook, MissingEntry

    release_dir = Path(course_root) / release / assignment
    with Gradebook(db_url) as gb:
        try:
            gb_assignment = gb.find_assignment(assignment)
        except MissingEntry:
            gb_assignment = None
        if gb_assignment is None or not gb_assignment.notebooks or not release_dir.is_dir():
            gb_assignment = None
    with tempfile.TemporaryDirectory(prefix="revad-spec-") as scratch:
        if gb_assignment is None:
            release_dir = record_in_gradebook(Path(course_root), assignment, db_url, source, Path(scratch))
        return _read_spec(assignment, db_url, release_dir)


def record_in_gradebook(course_root: Path, assignment: str, db_url: str, source: str, scratch: Path) -> Path:
    """Record the assignment's cells in the gradebook the way nbgrader does (generate_assignment), releasing
    into `scratch`: the course's own release folder may be where a learner works, and is never written."""
    shutil.copytree(
        course_root / source / assignment,
        scratch / "source" / assignment,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
    )
    api = nbgrader_api(scratch, source="source", release="release", db_url=db_url)
    with quiet_nbgrader():
        require_success(
            api.generate_assignment(assignment, force=True, create=True), f"generate_assignment {assignment}"
        )
    return scratch / "release" / assignment


def _read_spec(assignment: str, db_url: str, release_dir: Path) -> AssignmentSpec:
    import nbformat

    from autograder.gradebook import Gradebook, MissingEntry

    notebooks: dict[str, NotebookSpec] = {}
    with Gradebook(db_url) as gb:
        for nb_row in gb.find_assignment(assignment).notebooks:
            released = nbformat.read(release_dir / f"{nb_row.name}.ipynb", as_version=4)
            spec = NotebookSpec.from_release(released)
            cells = []
            for cell in spec.cells:  # the instructor's source and the points, from the gradebook
                try:
                    instructor = gb.find_source_cell(cell.grade_id, nb_row.name, assignment).source
                except MissingEntry:
                    instructor = cell.source
                points = cell.points
                if cell.grade:
                    try:
                        points = float(gb.find_graded_cell(cell.grade_id, nb_row.name, assignment).max_score)
                    except MissingEntry:
                        pass
                cells.append(replace(cell, source=instructor, points=points).parsed())
            notebooks[nb_row.name] = replace(spec, cells=cells)
    modules = sorted({m for nb in notebooks.values() for c in nb.cells if c.grade for m in check_modules(c.source)})
    return AssignmentSpec(assignment, dict(sorted(notebooks.items())), modules)
