"""The grader's notes cell: every flag with its reason for the instructor, the learner's version in their feedback."""

from __future__ import annotations

import nbformat

from autograder.grading.feedback_html import notes_cell, notes_markdown, with_notes

FLAGS = [
    {"code": "locked_cell_edited", "detail": "test_primal_trace: edited (the instructor's copy was run instead)"},
    {"code": "grader_error", "detail": "Traceback (most recent call last): internal"},
]


def test_instructor_notes_give_each_flag_its_reason_and_the_messages():
    text = notes_markdown(["reverse_accumulation.ipynb has no code in it"], FLAGS, for_learner=False)
    assert "`locked_cell_edited`: test_primal_trace: edited" in text and "has no code in it" in text
    assert "Traceback" not in text, "the grader's own traceback stays in the score table and the CSV"


def test_learner_notes_say_what_the_flag_means_without_the_graders_internals():
    text = notes_markdown([], FLAGS, for_learner=True)
    assert "you edited a locked cell" in text and "test_primal_trace" in text
    assert "Traceback" not in text and "grader itself failed" in text


def test_nothing_to_say_adds_no_cell_and_notes_are_added_once():
    assert notes_cell([], [], for_learner=True) is None
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title")])
    for _ in range(2):
        with_notes(nb, notes_cell(["m"], FLAGS, for_learner=False))
    assert len(nb.cells) == 2 and "Flagged by the grader" in nb.cells[0].source
    with_notes(nb, notes_cell(["m"], FLAGS, for_learner=True))
    assert len(nb.cells) == 2 and "Flagged for your instructor" in nb.cells[0].source
