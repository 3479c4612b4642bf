"""`make check`: a learner alone grades their own copy with the hidden tests, through the grading command."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.coursedir import COURSE, REPO, SOLUTIONS
from autograder.selfcheck import pick
from autograder.submissions import fill_answers, solution_sources

pytestmark = [pytest.mark.lifecycle, pytest.mark.slow]

ASSIGNMENT, NOTEBOOK = "01-reverse-accumulation", "reverse_accumulation.ipynb"


def test_nb_picks_one_notebook_by_number_or_name():
    ids = ["01-reverse-accumulation", "02-scalar-engine", "03-custom-functions"]
    assert pick(ids, "03") == ["03-custom-functions"] == pick(ids, "3") == pick(ids, "custom")
    assert pick(ids, None) == ids
    with pytest.raises(SystemExit, match="NB=07"):
        pick(ids, "07")


def test_make_check_grades_the_learners_copy_with_hidden_tests_and_says_where_the_solution_is(tmp_path):
    work = tmp_path / "work"
    (work / ASSIGNMENT).mkdir(parents=True)
    answers = solution_sources(SOLUTIONS / ASSIGNMENT / NOTEBOOK)
    answers["central_difference"] = "def central_difference(f, x, h):\n    return (f(x + h) - f(x)) / h"
    del answers["numerical_gradient"]  # not tried: still the stub
    path = work / ASSIGNMENT / NOTEBOOK
    nbformat.write(fill_answers(COURSE / ASSIGNMENT / NOTEBOOK, answers), path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder.selfcheck",
            "--notebook",
            "01",
            "--work-dir",
            str(work),
            "--scratch",
            str(tmp_path / "scratch"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == "total: 10 / 15", out.stdout[-3000:]  # 15 - central_difference (2) - numerical_gradient (3)
    assert "That is a one-sided difference" in out.stdout, "the whole message, hint included"
    assert "Hidden tests" in out.stdout or "central_difference(" in out.stdout
    pointers = [line for line in lines if "reference solution" in line]
    assert (
        len(pointers) == 1
        and "central_difference" in pointers[0]
        and str(Path("solutions") / ASSIGNMENT) in pointers[0]
    )
    assert "is not written yet" in out.stdout, "the untried exercise says what to do, with no pointer to the solution"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before, "the learner's file is untouched"
