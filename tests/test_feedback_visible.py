"""Grade on submit's `visible` feedback: each test judged on the cases the learner's notebook shows, nothing of
the hidden tests. An answer written to pass only the shown case (a hard-coded lookup) gets full marks on that
page and loses the points in the instructor's grade; a right answer gets full marks on both."""

from __future__ import annotations

import html
import re
import shutil

import nbformat
import pytest

from autograder.coursedir import SOLUTIONS
from autograder.grading import grade_assignment, record
from autograder.grading.judge import HIDDEN_LABEL
from autograder.grading.write import ALL_HIDDEN, SHOWN_ONLY_NOTE, feedback_page
from autograder.release import generate_in_course
from autograder.submissions import fill_answers, solution_sources

pytestmark = [pytest.mark.lifecycle, pytest.mark.slow]

ASSIGNMENT, NOTEBOOK = "01-reverse-accumulation", "reverse_accumulation"
# right at the case the notebook shows, (2, 3); off by one everywhere else
SHOWN_CASE_ONLY = {
    "primal_trace": "def primal_trace(x1, x2):\n"
    "    good = _primal_trace(x1, x2)\n"
    "    return good if (x1, x2) == (2.0, 3.0) else {k: v + 1.0 for k, v in good.items()}\n"
}


def _answers() -> dict[str, dict[str, str]]:
    right = solution_sources(SOLUTIONS / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    lookup = right["primal_trace"].replace("def primal_trace(", "def _primal_trace(") + "\n\n"
    return {"ada": right, "cy": {**right, "primal_trace": lookup + SHOWN_CASE_ONLY["primal_trace"]}}


def _text(page: str) -> str:
    """The page's text as a reader sees it: tags dropped, entities (`&#x27;`, `&nbsp;`) read, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture(scope="module")
def graded(tmp_path_factory, grading_pool):
    root = tmp_path_factory.mktemp("course")
    shutil.copytree(SOLUTIONS / ASSIGNMENT, root / "source" / ASSIGNMENT)
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    generate_in_course(root, [ASSIGNMENT], db_url)
    for student, answers in _answers().items():
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        path = root / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
        nbformat.write(fill_answers(path, answers), folder / f"{NOTEBOOK}.ipynb")
    results = {}

    def keep(url, result, content_hash, timestamp):
        results[result.student] = result
        return record.record(url, result, content_hash, timestamp)

    grade_assignment(root, ASSIGNMENT, db_url=db_url, workers=2, progress=False, recorder=keep, pool=grading_pool)
    return root, results


def _pages(root, result):
    nb = result.notebooks[NOTEBOOK]
    graded = nbformat.read(root / "autograded" / result.student / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    full = feedback_page(NOTEBOOK, nb, graded, result.messages)
    shown = feedback_page(NOTEBOOK, nb, graded, result.messages, shown_only=True)
    return nb, _text(full), _text(shown)


def test_an_answer_right_only_on_the_shown_case_passes_the_shown_tests_and_not_the_hidden_ones(graded):
    root, results = graded
    nb, full, shown = _pages(root, results["cy"])
    assert nb.grades["test_primal_trace"].score == 0 and nb.shown["test_primal_trace"].score == 2
    # adjoint_trace and tangent_trace build on primal_trace: their hidden cases fail with it
    assert [g for g in nb.grades if nb.grades[g].score < nb.shown[g].score] == [
        "test_primal_trace",
        "test_adjoint_trace",
        "test_tangent_trace",
    ]
    assert all(g.score == g.max for g in nb.shown.values())
    assert "Score: 15.0 / 15.0" in shown and "Score: 8.0 / 15.0" in full
    assert _text(SHOWN_ONLY_NOTE).replace("*", "") in shown.replace("*", "")
    assert HIDDEN_LABEL not in shown and "Passed: 2 / 2 points." in shown
    # what the hidden cases found is on the instructor's page and not on the shown tests' page
    hidden_findings = [_text(m).strip()[:60] for m in nb.grades["test_primal_trace"].messages]
    assert hidden_findings and all(f in full and f not in shown for f in hidden_findings), hidden_findings


def test_a_right_answer_has_full_marks_on_both_pages(graded):
    root, results = graded
    nb, full, shown = _pages(root, results["ada"])
    assert nb.score == nb.max_score == 15
    assert "Score: 15.0 / 15.0" in shown and "Score: 15.0 / 15.0" in full
    assert all(g.score == g.max for g in nb.shown.values())


def test_a_test_cell_with_only_hidden_cases_says_so_and_counts_for_nothing_there(graded):
    from autograder.grading.jobs import CellGrade

    root, results = graded
    nb = results["ada"].notebooks[NOTEBOOK]
    nb.shown["test_primal_trace"] = CellGrade(0.0, 0.0, [ALL_HIDDEN])
    _, _, shown = _pages(root, results["ada"])
    assert ALL_HIDDEN in shown and "Score: 13.0 / 13.0" in shown
