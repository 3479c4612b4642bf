"""One failure style: nbgrader's Validate and the terminal score table show a failed check's whole message
(the part that failed, the input, the entries, the hint), not a bare 'partial credit' or its first line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.coursedir import COURSE, SOLUTIONS
from autograder.grading.report import SubmissionScore, format_table
from autograder.submissions import MISTAKES, fill_answers, solution_sources

pytestmark = pytest.mark.lifecycle

ASSIGNMENT, NOTEBOOK = "03-custom-functions", "custom_functions.ipynb"


def test_score_table_keeps_every_line_of_a_message():
    message = "LinearFunction: 2 of 4 points\n  [FAIL] backward agrees with the reference\n  Hint: sum over the batch"
    row = SubmissionScore("ada", ASSIGNMENT, 2, 4, {"linear_function": (2, 4)}, messages=[message])
    table = format_table([row])
    for line in message.split("\n"):
        assert line.strip() in table
    assert table.index("[FAIL]") < table.index("Hint: sum over the batch")


@pytest.mark.slow
def test_validate_names_the_failed_part_and_its_hint(tmp_path):
    answers = solution_sources(SOLUTIONS / ASSIGNMENT / NOTEBOOK)
    answers["linear_function"] = (MISTAKES / ASSIGNMENT / "linear_function.py").read_text()
    notebook = tmp_path / NOTEBOOK
    nbformat.write(fill_answers(COURSE / ASSIGNMENT / NOTEBOOK, answers), notebook)
    nbgrader = Path(sys.executable).with_name("nbgrader")
    out = subprocess.run(
        [str(nbgrader), "validate", str(notebook)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    text = out.stdout + out.stderr
    assert "VALIDATION FAILED" in text, text[-3000:]
    assert "[FAIL] backward's interface" in text, text[-3000:]
    assert "[ok  ] forward agrees with the reference" in text, "the parts that passed are named too"
    assert "Hint:" in text and "`b`" in text, "the entry that is wrong and the hint"
    assert not [line for line in text.splitlines() if line.endswith("...") and "[" in line], (
        "Validate cuts lines longer than its width: none of the message's lines is cut"
    )
    assert "registry.py" not in text, "the learner sees the check's message, not the grader's frames"
