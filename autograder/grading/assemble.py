"""Assembling the notebook the sandbox runs: the in-kernel setup first (autograder.probes.kernel), then
the learner's answer and own cells and the instructor's copy of every locked cell. In each graded test
cell every check call becomes a probe call (`__revad_probe__(grade_id, k, check, expr, params)`, with
hidden cases already drawn) and the rest of the hidden-test section is left out: no judge runs in the kernel,
and no hidden test code enters it."""

from __future__ import annotations

import copy

import nbformat
from nbformat import NotebookNode

from ..hidden_tests import VISIBLE, line_kinds
from ..probes.kernel import WATCHED
from .read import nbgrader_meta, normalized
from .spec import CheckCall, NotebookSpec, hidden_stripped


def setup_source(modules: list[str], channel: str) -> str:
    return (
        f"from autograder.probes.kernel import install as _revad_install\n"
        f"__revad_probe__ = _revad_install({modules!r}, {WATCHED!r}, {channel!r})\n"
        f"del _revad_install"
    )


def probed_source(source: str, gid: str, calls: list[CheckCall]) -> str:
    """The instructor's test cell as the sandbox runs it: check calls replaced by probe calls, the
    hidden section's other lines and its markers left out."""
    lines = source.splitlines()
    starts = {c.first_line: (k, c) for k, c in enumerate(calls)}
    kinds = line_kinds(source)
    out, number = [], 1
    while number <= len(lines):
        if number in starts:
            k, call = starts[number]
            out.append(f"__revad_probe__({gid!r}, {k}, {call.check!r}, {call.expr!r}, {call.params!r})")
            number = call.last_line + 1
            continue
        if kinds[number - 1] == VISIBLE:
            out.append(lines[number - 1])
        number += 1
    return "\n".join(out)


def fresh_ids(nb: NotebookNode) -> None:
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"


def build_execution(
    nb: NotebookNode,
    spec_nb: NotebookSpec,
    state: dict[str, str],
    calls: dict[str, list[CheckCall] | None],
    modules: list[str],
    channel: str,
) -> tuple[NotebookNode, dict[str, int]]:
    """(notebook to run, index of each graded test cell in it). `calls`: grade_id -> the concrete check
    calls of that test cell, or None when it could not be read as trusted (it then runs without its
    hidden tests, and scores 0)."""
    cells = _Restorer(spec_nb, state).cells_of(nb)
    return _probed_notebook(cells, spec_nb, calls, modules, channel)


class _Restorer:
    """The learner's cells, with the instructor's copy of every locked and test cell, the learner's answer in
    every answer cell, deleted cells put back where they were, duplicates and unknown grade_ids made harmless."""

    def __init__(self, spec_nb: NotebookSpec, state: dict[str, str]):
        self.spec_by_id = {c.grade_id: c for c in spec_nb.cells if c.grade_id}
        self.order = [c.grade_id for c in spec_nb.cells if c.grade_id]
        self.measurements = set(spec_nb.measurements)
        self.state = state
        self.stripped = {
            normalized(c.release_source): c.grade_id
            for c in spec_nb.cells
            if c.grade_id and state.get(c.grade_id) == "stripped" and not c.solution
        }
        self.cells: list = []
        self.placed: set[str] = set()

    def instructor_cell(self, gid: str):
        spec_cell = self.spec_by_id[gid]
        if spec_cell.cell_type == "code":
            cell = nbformat.v4.new_code_cell(spec_cell.source)
        else:
            cell = nbformat.v4.new_markdown_cell(spec_cell.source)
        cell.metadata["nbgrader"] = copy.deepcopy(spec_cell.metadata)
        return cell

    def place(self, gid: str, cell) -> None:
        self.cells.append(cell)
        self.placed.add(gid)

    def insert_missing_before(self, gid: str) -> None:
        """Deleted locked/test cells that come before `gid` in the release go back in, in order."""
        for other in self.order[: self.order.index(gid)] if gid in self.order else self.order:
            if other not in self.placed and self.state.get(other) == "deleted":
                self.place(other, self.instructor_cell(other))

    def answer_cell(self, cell, spec_cell):
        """The learner's answer, in the cell type and with the metadata of the release."""
        new = copy.deepcopy(cell)
        new.cell_type = spec_cell.cell_type
        if new.cell_type == "code":
            new.setdefault("outputs", [])
            new.setdefault("execution_count", None)
        else:
            new.pop("outputs", None)
            new.pop("execution_count", None)
        new.metadata["nbgrader"] = copy.deepcopy(spec_cell.metadata)
        return new

    def ordinary_cell(self, cell):
        new = copy.deepcopy(cell)
        if nbgrader_meta(new):
            new.metadata.pop("nbgrader", None)  # unknown grade_id: an ordinary cell
        if new.cell_type == "code" and normalized(new.source) in self.measurements:
            new.metadata["revad"] = {"skip": "measurement"}
        return new

    def cells_of(self, nb) -> list:
        for cell in nb.cells:
            gid = nbgrader_meta(cell).get("grade_id")
            # the grader's own marks come from the instructor's copy only: a learner's "revad" metadata is dropped
            # (a cell marked as the grader's setup would get the setup's time limit and vanish from the autograded
            # copy)
            cell = copy.copy(cell)
            cell.metadata = nbformat.from_dict({k: v for k, v in cell.metadata.items() if k != "revad"})
            if isinstance(gid, str) and gid in self.spec_by_id and gid not in self.placed:
                self.insert_missing_before(gid)
                spec_cell = self.spec_by_id[gid]
                self.place(gid, self.answer_cell(cell, spec_cell) if spec_cell.solution else self.instructor_cell(gid))
            elif isinstance(gid, str) and gid in self.spec_by_id:
                continue  # a duplicate of a graded cell: the first one counts
            elif not gid and normalized(cell.source) in self.stripped:
                # a locked cell without its metadata: the instructor's copy runs
                other = self.stripped.pop(normalized(cell.source))
                self.insert_missing_before(other)
                self.place(other, self.instructor_cell(other))
            else:
                self.cells.append(self.ordinary_cell(cell))
        for gid in self.order:
            if gid not in self.placed and self.state.get(gid) == "deleted":
                self.place(gid, self.instructor_cell(gid))
        return self.cells


def _probed_notebook(cells: list, spec_nb: NotebookSpec, calls: dict, modules: list[str], channel: str):
    """The notebook to run: the grader's setup cell, then the cells, each test cell's check calls replaced by
    probe calls (or its hidden tests stripped, when it could not be read as trusted)."""
    spec_by_id = {c.grade_id: c for c in spec_nb.cells if c.grade_id}
    run = nbformat.v4.new_notebook()
    setup = nbformat.v4.new_code_cell(setup_source(modules, channel))
    setup.metadata["revad"] = {"role": "setup"}
    run.cells.append(setup)
    test_index = {}
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        run.cells.append(cell)
        gid = nbgrader_meta(cell).get("grade_id")
        spec_cell = spec_by_id.get(gid) if isinstance(gid, str) else None
        is_test = spec_cell is not None and spec_cell.grade and not spec_cell.solution
        if isinstance(gid, str) and spec_cell and is_test and cell.cell_type == "code":
            test_index[gid] = len(run.cells) - 1
            cell_calls = calls.get(gid)
            source = spec_cell.source
            cell.source = probed_source(source, gid, cell_calls) if cell_calls else hidden_stripped(source)
    fresh_ids(run)
    return run, test_index
