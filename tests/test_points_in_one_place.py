"""Points live in one place, the nbgrader cell metadata: a check scores a fraction of its own points and the cell
earns that fraction of the metadata's; release refuses a test cell whose `points=` says otherwise."""

from __future__ import annotations

import json
import shutil

import nbformat
import pytest

from autograder.coursedir import SOLUTIONS
from autograder.grading import grade_assignment
from autograder.grading.judge import cell_score
from autograder.judges.verdict import Verdict
from autograder.release import generate_release, untrusted_test_cells
from autograder.submissions import fill_answers, solution_sources

ASSIGNMENT, NOTEBOOK, CELL = "03-custom-functions", "custom_functions.ipynb", "test_linear_function"


def test_a_verdict_scores_its_fraction_of_the_cells_points():
    right_out_of_default = Verdict(1.0, points=1.0, parts=[], title="t")
    assert cell_score(right_out_of_default, 4.0) == 4.0
    assert cell_score(Verdict(2.4, points=3.0, parts=[], title="t"), 6.0) == pytest.approx(4.8)
    assert cell_score(Verdict(0.0, points=3.0, parts=[], title="t"), 6.0) == 0.0


def _source_with(tmp_path, edit) -> tuple:
    source = tmp_path / "course" / "source" / ASSIGNMENT
    shutil.copytree(SOLUTIONS / ASSIGNMENT, source)
    nb = nbformat.read(source / NOTEBOOK, as_version=4)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == CELL]
    assert "points=4" in cell.source and cell.metadata.nbgrader.points == 4
    cell.source = edit(cell.source)
    nbformat.write(nb, source / NOTEBOOK)
    return tmp_path / "course", source


def test_release_refuses_a_test_cell_whose_points_disagree_with_its_metadata(tmp_path):
    _, source = _source_with(tmp_path, lambda s: s.replace("points=4", "points=3"))
    problems = untrusted_test_cells(source)
    assert problems and all(CELL in p and "points=3" in p and "are 4" in p for p in problems), problems
    with pytest.raises(SystemExit, match=CELL):
        generate_release(tmp_path / "out", solutions=source.parent)


@pytest.mark.slow
def test_a_cell_without_points_gives_a_right_answer_full_marks(tmp_path, grading_pool):
    root, source = _source_with(tmp_path, lambda s: s.replace("points=4, ", "").replace(", points=4", ""))
    assert not untrusted_test_cells(source)
    from autograder.release import generate_in_course

    db_url = f"sqlite:///{root / 'gradebook.db'}"
    generate_in_course(root, [ASSIGNMENT], db_url)
    folder = root / "submitted" / "ada" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(
        fill_answers(root / "release" / ASSIGNMENT / NOTEBOOK, solution_sources(SOLUTIONS / ASSIGNMENT / NOTEBOOK)),
        folder / NOTEBOOK,
    )
    (row,) = grade_assignment(
        root, ASSIGNMENT, db_url=db_url, workers=1, progress=False, log=lambda *_: None, pool=grading_pool[:1]
    )
    assert row.by_cell[CELL] == (4.0, 4.0), json.dumps(row.messages)[:2000]
    assert row.score == row.max_score
