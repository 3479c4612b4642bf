"""A failed check in a learner's notebook shows the check's message and the learner's code, never the grader's."""

from __future__ import annotations

import re

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.coursedir import COURSE, assignments

ANSI = re.compile(r"\x1b\[[0-9;]*m")
NOTEBOOKS = [p for a in assignments() for p in sorted((COURSE / a).glob("*.ipynb"))]


def run(cells: list[str], cwd) -> list[nbformat.NotebookNode]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(
        nb, kernel_name="python3", allow_errors=True, timeout=300, resources={"metadata": {"path": str(cwd)}}
    ).execute()
    return nb.cells


def traceback_text(cell) -> str:
    (error,) = [o for o in cell.outputs if o.output_type == "error"]
    assert error.ename == "CheckFailed"
    return ANSI.sub("", "\n".join(error.traceback))


def words(text: str) -> str:
    """The text with its line folds undone (a failure's message is folded at 70 columns for Validate)."""
    return " ".join(text.split())


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_first_exercise_left_blank_shows_the_message_and_no_grader_frames(notebook, validated_releases):
    """Released notebook, run top to bottom as it is (the session's one run of it, conftest.validated_releases), its
    exercises blank: its first test cell shows the same kind of traceback in every notebook."""
    _, executed, _ = validated_releases(notebook)
    first_test = next(c for c in executed.cells if c.metadata.get("nbgrader", {}).get("grade"))
    text = traceback_text(first_test)
    assert "is not written yet" in words(text)
    assert "autograder" + "/" not in text and "registry.py" not in text and "function_checks" not in text, text
    assert "Cell In[" in text, "the learner's own test cell is the frame shown"


@pytest.mark.slow
def test_a_crash_in_the_learners_function_shows_their_frame():
    text = traceback_text(
        run(
            [
                "def central_difference(f, x, h):\n    steps = [x - h, x + h]\n    return steps[2]",
                "from autograder.nb01 import check_central_difference\n"
                "check_central_difference(central_difference, cases=[('sin', 1.0, 1e-3)])",
            ],
            COURSE,
        )[-1]
    )
    assert "IndexError" in text and "return steps[2]" in text, "the learner sees the line of theirs that failed"
    assert "autograder" + "/" not in text and "registry.py" not in text, text
