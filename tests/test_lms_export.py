"""The grades for a learning-management system: one row per learner, one column per assignment (Canvas with its
"Points Possible" row, Moodle matched by ID number), from the rows of nbgrader's export."""

from __future__ import annotations

import pytest

from autograder.grading.report import lms_table

pytestmark = pytest.mark.grading


def row(assignment, student, score, max_score=15.0, **more):
    base = {"assignment": assignment, "student_id": student, "score": score, "max_score": max_score}
    return {"last_name": None, "first_name": None, "email": None, **base, **more}


ROWS = [
    row("01-reverse-accumulation", "ada", 15.0, last_name="Lovelace", first_name="Ada", email="ada@example.org"),
    row("01-reverse-accumulation", "ben", 10.0),
    row("02-scalar-engine", "ada", 24.0, 24.0, last_name="Lovelace", first_name="Ada", email="ada@example.org"),
    row("02-scalar-engine", "ben", 18.0, 24.0),
]


def test_canvas_one_row_per_learner_with_the_points_possible():
    header, possible, *body = lms_table(ROWS, "canvas")
    assert header == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "01-reverse-accumulation",
        "02-scalar-engine",
    ]
    assert possible[0].strip() == "Points Possible" and possible[-2:] == [15.0, 24.0]
    assert body == [["Lovelace, Ada", "", "ada", "ada", "", 15.0, 24.0], ["ben", "", "ben", "ben", "", 10.0, 18.0]]


def test_moodle_one_row_per_learner_matched_by_id_number():
    header, *body = lms_table(ROWS, "moodle")
    assert header == ["ID number", "Email address", "01-reverse-accumulation", "02-scalar-engine"]
    assert body == [["ada", "ada@example.org", 15.0, 24.0], ["ben", "", 10.0, 18.0]]


def test_an_unknown_format_is_refused_by_name():
    with pytest.raises(ValueError, match="canvas, moodle"):
        lms_table(ROWS, "blackboard")
