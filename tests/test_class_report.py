"""The class report on a class with nothing graded yet, and on an assignment the gradebook does not have (the
demo's graded class is in test_demo.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.class_report import visible_report, write_report

pytestmark = pytest.mark.grading


@pytest.fixture(autouse=True)
def alembic_on_path(monkeypatch):
    """nbgrader's Gradebook runs `alembic`, which lives beside this Python (the report command adds it too)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")


def test_an_assignment_with_no_submissions_gets_a_page_and_plots(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db_url) as gb:
        gb.add_assignment("01-reverse-accumulation")
    page = write_report(tmp_path, "01-reverse-accumulation", db_url, tmp_path / "out").read_text()
    assert "0 graded submission(s)" in page
    assert (tmp_path / "out" / "scores.png").stat().st_size > 1000


def test_an_unknown_assignment_is_named_with_the_ones_there_are(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db_url) as gb:
        gb.add_assignment("01-reverse-accumulation")
    with pytest.raises(SystemExit, match="No assignment '09-nothing'.*01-reverse-accumulation"):
        write_report(tmp_path, "09-nothing", db_url, tmp_path / "out")


def test_only_the_visible_part_of_a_report_is_read():
    text = "\n".join(
        [
            "Exp: 1 of 2 points",
            "  [FAIL] forward",
            "Hint: save the output",
            "Hidden tests (cases your notebook does not show): Exp fails",
            "Hint: a hidden hint",
        ]
    )
    assert visible_report(text) == ["Exp: 1 of 2 points", "  [FAIL] forward", "Hint: save the output"]


def test_a_gradebook_from_before_grading_times_gets_the_column_and_says_so(tmp_path):
    """A gradebook written by an earlier grader has no seconds column: it is added, and the report says the times
    were not recorded rather than failing or inventing them."""
    import sqlite3

    from autograder.class_report import grading_times
    from autograder.grading import record

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE revad_graded (assignment VARCHAR(128), student VARCHAR(128), content_hash VARCHAR(64), "
            "score FLOAT, max_score FLOAT, flags TEXT, messages TEXT, sandbox TEXT, PRIMARY KEY (assignment, student))"
        )
        db.execute("INSERT INTO revad_graded VALUES ('01-x', 'ada', 'h', 1.0, 2.0, '[]', '[]', 'none')")
    url = f"sqlite:///{path}"
    (row,) = record.graded_rows(url, "01-x").values()
    assert row.seconds is None and row.score == 1.0
    assert grading_times(url, "01-x") == "Grading time per submission: not recorded (graded before the grader kept it)."
    assert grading_times(url, "02-y") == "Grading time per submission: no submission graded yet."
