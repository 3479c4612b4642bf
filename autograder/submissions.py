"""Build example submissions from the release: a learner's notebook is the released notebook with
their code typed into the answer cells. Used by `make demo` and by the tests."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from .coursedir import REPO

MISTAKES = REPO / "demo" / "mistakes"
TAMPERED = REPO / "demo" / "tampered"
_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


def solution_sources(solution_notebook: Path) -> dict[str, str]:
    """grade_id -> the answer cell's code as a learner would type it (solution markers removed)."""
    nb = nbformat.read(solution_notebook, as_version=4)
    answers = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            answers[meta["grade_id"]] = "\n".join(line for line in cell.source.splitlines() if not _MARKER.match(line))
    return answers


def fill_answers(
    released_notebook: Path, answers: dict[str, str], locked: dict[str, str] | None = None
) -> nbformat.NotebookNode:
    """The released notebook with the answer cells named in `answers` replaced by their code (and the
    locked cells named in `locked` edited, as a learner who tampers with a test cell does)."""
    nb = nbformat.read(released_notebook, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        if meta.get("solution") and grade_id in answers:
            cell.source = answers[grade_id]
        elif meta.get("locked") and grade_id in (locked or {}):
            cell.source = locked[grade_id]
    return nb


def mistakes_for(assignment: str, kind: Path = MISTAKES) -> dict[str, str]:
    """grade_id -> a wrong answer, from demo/mistakes/<assignment>/<grade_id>.py (or an edited locked
    cell, from demo/tampered/)."""
    folder = kind / assignment
    if not folder.is_dir():
        return {}
    return {p.stem: p.read_text() for p in sorted(folder.glob("*.py"))}


def example_submissions(
    assignment: str, release_dir: Path, solution_dir: Path
) -> dict[str, dict[str, nbformat.NotebookNode]]:
    """student -> {notebook file name -> notebook}: one correct, one partly wrong, one blank (who also
    edited a locked test cell where demo/tampered/ says so: the grader flags it)."""
    students: dict[str, dict[str, nbformat.NotebookNode]] = {"ada": {}, "ben": {}, "cleo": {}}
    wrong, tampered = mistakes_for(assignment), mistakes_for(assignment, TAMPERED)
    for released in sorted((release_dir / assignment).glob("*.ipynb")):
        answers = solution_sources(solution_dir / assignment / released.name)
        students["ada"][released.name] = fill_answers(released, answers)
        students["ben"][released.name] = fill_answers(released, {**answers, **wrong})
        students["cleo"][released.name] = fill_answers(released, {}, tampered)
    return students
