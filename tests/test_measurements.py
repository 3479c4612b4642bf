"""The lesson's measurement cells (timings, plots, training demos: grading/measurements.py) are left out of
grading while the learner's copy of them is unchanged, and only where leaving them out can change no later cell;
the grader's own cell marks come from the instructor's copy alone."""

from __future__ import annotations

import shutil

import nbformat
import pytest

from autograder.coursedir import SOLUTIONS
from autograder.grading import grade_assignment
from autograder.grading.measurements import NOT_RUN_NOTE, is_measurement, measurement_problems
from autograder.release import generate_in_course, untrusted_test_cells
from autograder.submissions import fill_answers, solution_sources

MARK = {"revad": {"measurement": True}}


def _cells(*sources, marked=()):
    return [
        {"cell_type": "code", "source": s, "metadata": dict(MARK) if i in marked else {}} for i, s in enumerate(sources)
    ]


@pytest.mark.parametrize(
    "sources, why",
    [
        (("timings = [1, 2]", "print(timings)"), "cell 1 uses timings"),
        (("fig, ax = plt.subplots()", "def later():\n    return ax"), "cell 1 uses ax"),  # read when called
        (("import time", "time.sleep(0)"), "cell 1 uses time"),
        (("def loss(v):\n    return v", "x = loss(1)"), "cell 1 uses loss"),
        (("x = 1", "x = x + 1"), "cell 1 uses x"),  # read before it is bound again
        (("x = 1", "print([x for _ in range(2)])"), "cell 1 uses x"),
        (("n = 3", "for i in range(n):\n    pass"), "cell 1 uses n"),
        (("%time y = 1", "z = 2"), "must be plain Python"),
    ],
)
def test_a_mark_is_refused_where_a_later_cell_needs_the_cell(sources, why):
    problems = measurement_problems(_cells(*sources, marked={0}))
    assert problems and why in problems[0], problems


@pytest.mark.parametrize(
    "sources",
    [
        ("timings = [1, 2]", "timings = []\nprint(timings)"),  # bound again before it is read
        ("fig, ax = plt.subplots()", "fig, ax = plt.subplots()\nax.plot([1])"),
        ("for x in range(3):\n    pass", "for x in range(2):\n    print(x)"),  # a loop binds its target first
        ("def loss(v):\n    return v", "def loss(v):\n    return 2 * v\nprint(loss(1))"),
        ("t = 1", "print([t for t in range(3)])"),  # a comprehension's own variable
        ("s = 1", "f = lambda s: s + 1"),  # a parameter
    ],
)
def test_a_mark_is_accepted_where_no_later_cell_reads_what_it_binds(sources):
    assert measurement_problems(_cells(*sources, marked={0})) == []


def test_a_later_measurement_may_use_an_earlier_one_and_an_nbgrader_cell_cannot_be_one():
    assert measurement_problems(_cells("def loss(v):\n    return v", "print(loss(1))", marked={0, 1})) == []
    cells = _cells("x = 1", marked={0})
    cells[0]["metadata"]["nbgrader"] = {"grade": True, "grade_id": "t", "points": 1}
    assert "cannot be a measurement" in measurement_problems(cells)[0]


def test_release_refuses_a_mark_a_later_cell_contradicts(tmp_path):
    source = tmp_path / "01-reverse-accumulation"
    shutil.copytree(SOLUTIONS / "01-reverse-accumulation", source)
    path = source / "reverse_accumulation.ipynb"
    nb = nbformat.read(path, as_version=4)
    # mark the cell that defines the exercise's helpers' imports: every later cell needs it
    (first_code,) = [c for c in nb.cells if c.cell_type == "code"][:1]
    first_code.metadata.update(MARK)
    nbformat.write(nb, path)
    problems = untrusted_test_cells(source)
    assert any("marked as a measurement" in p for p in problems), problems


def test_the_solutions_marks_are_sound():
    marked = 0
    for path in sorted(SOLUTIONS.glob("*/*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        assert measurement_problems(cells) == [], path.name
        marked += sum(is_measurement(c) for c in cells)
    assert marked >= 10


@pytest.mark.slow
def test_grading_leaves_out_unchanged_measurements_only_and_ignores_a_learners_marks(tmp_path, grading_pool):
    assignment, name = "01-reverse-accumulation", "reverse_accumulation.ipynb"
    root = tmp_path / "course"
    shutil.copytree(SOLUTIONS / assignment, root / "source" / assignment)
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    generate_in_course(root, [assignment], db_url)
    nb = fill_answers(root / "release" / assignment / name, solution_sources(SOLUTIONS / assignment / name))
    measured = [c for c in nb.cells if is_measurement(c)]
    assert len(measured) == 3
    measured[1].source += "\nprint('edited by the learner: runs')"
    own = [
        nbformat.v4.new_code_cell("print('a cell marked as the setup: runs and is shown')"),
        nbformat.v4.new_code_cell("print('a cell marked as a measurement: runs and is shown')"),
    ]
    own[0].metadata["revad"] = {"role": "setup"}
    own[1].metadata["revad"] = {"measurement": True, "skip": "measurement"}
    nb.cells[3:3] = own
    folder = root / "submitted" / "ada" / assignment
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / name)
    (score,) = grade_assignment(root, assignment, db_url=db_url, workers=1, progress=False, pool=grading_pool[:1])
    assert score.score == score.max_score == 15, score
    graded = nbformat.read(root / "autograded" / "ada" / assignment / name, as_version=4)
    text = ["".join(o.get("text", "") for o in c.get("outputs", [])) for c in graded.cells if c.cell_type == "code"]
    assert sum(NOT_RUN_NOTE in t for t in text) == 2, "the two unchanged measurement cells are left out"
    for printed in (
        "edited by the learner: runs",
        "a cell marked as the setup: runs and is shown",
        "a cell marked as a measurement: runs and is shown",
    ):
        assert sum(printed in t for t in text) == 1, printed
