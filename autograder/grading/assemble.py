"""Assembling the notebook the sandbox runs: the in-kernel setup first (autograder.probes.kernel), then
the learner's answer and own cells and the instructor's copy of every locked cell. In each graded test
cell every check call becomes a probe call (`__revad_probe__(grade_id, k, check, expr, params)`, with
hidden cases already drawn) and the rest of the hidden-test section is left out: no judge runs in the
kernel, and no hidden test code enters it."""

from __future__ import annotations

import copy

import nbformat

from ..probes.kernel import WATCHED
from .read import nbgrader_meta, normalized
from .spec import HIDDEN_BEGIN, HIDDEN_END, CheckCall, hidden_line_numbers, hidden_stripped


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
    hidden = hidden_line_numbers(source)
    out, number = [], 1
    while number <= len(lines):
        if number in starts:
            k, call = starts[number]
            out.append(f"__revad_probe__({gid!r}, {k}, {call.check!r}, {call.expr!r}, {call.params!r})")
            number = call.last_line + 1
            continue
        line = lines[number - 1]
        if number not in hidden and HIDDEN_BEGIN not in line and HIDDEN_END not in line:
            out.append(line)
        number += 1
    return "\n".join(out)


def fresh_ids(nb) -> None:
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"


def build_execution(
    nb, spec_nb: dict, state: dict[str, str], calls: dict[str, list[CheckCall] | None], modules: list[str], channel: str
):
    """(notebook to run, index of each graded test cell in it). `calls`: grade_id -> the concrete check
    calls of that test cell, or None when it could not be read as trusted (it then runs without its
    hidden tests, and scores 0)."""
    spec_by_id = {c["grade_id"]: c for c in spec_nb["cells"] if c.get("grade_id")}
    order = [c["grade_id"] for c in spec_nb["cells"] if c.get("grade_id")]
    measurements = set(spec_nb.get("measurements", []))
    cells = []
    placed = set()
    stripped = {
        normalized(c["release_source"]): c["grade_id"]
        for c in spec_nb["cells"]
        if c.get("grade_id") and state.get(c["grade_id"]) == "stripped" and not c["solution"]
    }

    def instructor_cell(spec_cell):
        if spec_cell["cell_type"] == "code":
            cell = nbformat.v4.new_code_cell(spec_cell["source"])
        else:
            cell = nbformat.v4.new_markdown_cell(spec_cell["source"])
        cell.metadata["nbgrader"] = copy.deepcopy(spec_cell["metadata"])
        return cell

    def insert_missing_before(gid):
        # deleted locked/test cells that come before `gid` in the release go back in, in order
        for other in order[: order.index(gid)] if gid in order else order:
            if other not in placed and state.get(other) in ("deleted",):
                cells.append(instructor_cell(spec_by_id[other]))
                placed.add(other)

    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        # the grader's own marks come from the instructor's copy only: a learner's "revad" metadata is dropped
        # (a cell marked as the grader's setup would get the setup's time limit and vanish from the autograded copy)
        cell = copy.copy(cell)
        cell.metadata = nbformat.from_dict({k: v for k, v in cell.metadata.items() if k != "revad"})
        if gid in spec_by_id and gid not in placed:
            insert_missing_before(gid)
            spec_cell = spec_by_id[gid]
            if spec_cell["solution"]:
                new = copy.deepcopy(cell)
                new.cell_type = spec_cell["cell_type"]
                if new.cell_type == "code":
                    new.setdefault("outputs", [])
                    new.setdefault("execution_count", None)
                else:
                    new.pop("outputs", None)
                    new.pop("execution_count", None)
                new.metadata["nbgrader"] = copy.deepcopy(spec_cell["metadata"])
            else:
                new = instructor_cell(spec_cell)
            cells.append(new)
            placed.add(gid)
        elif gid in spec_by_id:
            continue  # a duplicate of a graded cell: the first one counts
        elif not gid and normalized(cell.source) in stripped:
            other = stripped.pop(
                normalized(cell.source)
            )  # a locked cell without its metadata: the instructor's copy runs
            insert_missing_before(other)
            cells.append(instructor_cell(spec_by_id[other]))
            placed.add(other)
        else:
            new = copy.deepcopy(cell)
            if nbgrader_meta(new):
                new.metadata.pop("nbgrader", None)  # unknown grade_id: an ordinary cell
            if new.cell_type == "code" and normalized(new.source) in measurements:
                new.metadata["revad"] = {"skip": "measurement"}
            cells.append(new)
    for gid in order:
        if gid not in placed and state.get(gid) == "deleted":
            cells.append(instructor_cell(spec_by_id[gid]))
            placed.add(gid)

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
        if (
            isinstance(gid, str)
            and gid in spec_by_id
            and spec_by_id[gid]["grade"]
            and not spec_by_id[gid]["solution"]
            and cell.cell_type == "code"
        ):
            test_index[gid] = len(run.cells) - 1
            source = spec_by_id[gid]["source"]
            cell_calls = calls.get(gid)
            cell.source = probed_source(source, gid, cell_calls) if cell_calls else hidden_stripped(source)
    fresh_ids(run)
    return run, test_index
