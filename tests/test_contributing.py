"""CONTRIBUTING.md's walk-throughs, run as written: an exercise added to notebook 01 and a notebook 09 added to the
course, each in a scratch copy of the course packages, released and graded with the real command. The blocks are
read from CONTRIBUTING.md itself, so the guide cannot drift from what works."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.coursedir import REPO
from autograder.grading.probe_view import build
from autograder.submissions import fill_answers, solution_sources

pytestmark = [pytest.mark.grading, pytest.mark.slow]
ASSIGNMENT, NOTEBOOK = "01-reverse-accumulation", "reverse_accumulation.ipynb"
WRONG_SLOPE = "def square_slope(x):\n    return x\n"


def guide_blocks() -> list[tuple[str, str, str, str]]:
    """(kind, target, attributes, code) of each ```python cell=... / file=...``` block of CONTRIBUTING.md (a file
    block's attributes say where it goes: where=end)."""
    text = (REPO / "CONTRIBUTING.md").read_text()
    return re.findall(r"```python (cell|file)=(\S+)([^\n]*)\n(.*?)```", text, re.S)


def scratch_course(root: Path, assignments: list[str]) -> Path:
    """The course packages, the nbgrader config and some source notebooks (with notebook 01's tests), copied."""
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints")
    for package in ("autograder", "coursetools"):
        shutil.copytree(REPO / package, root / package, ignore=ignore)
    shutil.copy(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    for assignment in assignments:
        shutil.copytree(REPO / "solutions" / assignment, root / "solutions" / assignment, ignore=ignore)
    (root / "tests").mkdir()
    shutil.copy(REPO / "tests" / "test_nb01_checks.py", root / "tests" / "test_nb01_checks.py")
    return root


def snapshot(root: Path) -> dict[str, str]:
    """Every authored file's hash (the release, the gradebook and caches are made, not written by hand)."""
    made = ("course", ".grading", "submitted", "autograded", "feedback", "release", ".hypothesis")
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] not in made and "__pycache__" not in p.parts
    }


def add_cells(notebook: Path, blocks: list[tuple[str, str, str, str]]) -> None:
    nb = nbformat.read(notebook, as_version=4)
    for _, grade_id, attributes, code in blocks:
        points = re.search(r"points=(\d+)", attributes)
        meta = {"grade": bool(points), "solution": not points, "locked": bool(points), "grade_id": grade_id}
        if points:
            meta["points"] = int(points.group(1))
        nb.cells.append(
            nbformat.v4.new_code_cell(code.rstrip("\n"), metadata={"nbgrader": {**meta, "schema_version": 3}})
        )
    nbformat.write(nb, notebook)


def add_code(path: Path, attributes: str, code: str) -> None:
    """Put a guide's block where it says: at the end of the file."""
    assert "where=end" in attributes, attributes
    path.write_text(path.read_text() + "\n\n" + code)


def run(root: Path, *command: str) -> subprocess.CompletedProcess:
    """A command of the scratch course, importing its own copy of the packages (the grader's kernels too)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, *command], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def hand_in(root: Path, assignment: str, notebook: str, student: str, answers: dict[str, str]) -> None:
    released = root / "course" / assignment / notebook
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True)
    nbformat.write(fill_answers(released, answers), folder / notebook)
    (folder / "timestamp.txt").write_text("2026-11-25 12:00:00.000000 UTC")


def grades(root: Path, assignment: str) -> dict:
    from autograder.grading import record

    rows = record.graded_rows(f"sqlite:///{root / '.grading' / 'gradebook.db'}", assignment)
    return {student: row for (_, student), row in rows.items()}


def test_adding_an_exercise_as_contributing_says_touches_three_files_and_grades_it(tmp_path):
    root = scratch_course(tmp_path / "course", [ASSIGNMENT])
    before = snapshot(root)
    blocks = guide_blocks()
    cells = [b for b in blocks if b[0] == "cell"]
    files = [b for b in blocks if b[0] == "file"]
    assert [b[1] for b in cells] == ["square_slope", "test_square_slope"], "the guide's two cells"
    add_cells(root / "solutions" / ASSIGNMENT / NOTEBOOK, cells)
    for _, target, attributes, code in files:
        add_code(root / target, attributes, code)
    view = build(root / "autograder", tmp_path / "view" / "autograder")  # what the grading sandbox gets
    seen = "".join(p.read_text() for p in (view / "nb01").glob("*.py"))
    assert "def probe_square_slope" in seen and "check_square_slope = " in seen
    assert "judge_square_slope" not in seen and "draw_square_points" not in seen

    run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_nb01_checks.py", "-k", "square_slope")
    run(root, "-m", "autograder.release")
    answers = solution_sources(root / "solutions" / ASSIGNMENT / NOTEBOOK)
    hand_in(root, ASSIGNMENT, NOTEBOOK, "right", answers)
    hand_in(root, ASSIGNMENT, NOTEBOOK, "wrong", {**answers, "square_slope": WRONG_SLOPE})
    run(root, "-m", "autograder", "grade", ASSIGNMENT)

    rows = grades(root, ASSIGNMENT)
    assert rows["right"].score == rows["right"].max_score == 17.0, rows["right"]
    assert rows["wrong"].score == 15.0 and rows["wrong"].flags == [], rows["wrong"]
    changed = {path for path, digest in snapshot(root).items() if before.get(path) != digest}
    assert changed == {
        f"solutions/{ASSIGNMENT}/{NOTEBOOK}",
        "autograder/nb01/__init__.py",
        "autograder/nb01/probes.py",
        "autograder/nb01/judges.py",
        "tests/test_nb01_checks.py",
    }


TOY_CHECKS = '''"""Checks of notebook 09 (a toy): the names its test cells import, registered."""

from __future__ import annotations

from ..registry import NotebookChecks
from . import probes

checks = NotebookChecks(__name__)
__all__ = checks.names
'''
TOY_PROBES = '''"""Notebook 09's probes."""

from __future__ import annotations

from ..feedback import as_float
from ..probes.call import call_learner
'''
TOY_JUDGES = '''"""Notebook 09's judges."""

import torch

from ..feedback import close, mismatch
from ..judges import answers
from ..nb01.judges import _fail, _value
from ..registry import decides
'''
TOY_TESTS = '''import pytest

from autograder import nb09 as nb01  # the guide's test, about notebook 09's check
from autograder.feedback import CheckFailed

pytestmark = pytest.mark.nb09
'''


def test_adding_a_notebook_as_contributing_says_touches_three_files_and_grades_it(tmp_path):
    root = scratch_course(tmp_path / "course", [])
    before = snapshot(root)
    blocks = guide_blocks()
    source = root / "solutions" / "09-toy" / "toy.ipynb"
    source.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), source)
    add_cells(
        source,
        [(k, t, a, code.replace("autograder.nb01", "autograder.nb09")) for k, t, a, code in blocks if k == "cell"],
    )
    code = {target: code for kind, target, _, code in blocks if kind == "file"}
    folder = root / "autograder" / "nb09"
    folder.mkdir()
    for name, head in (("__init__", TOY_CHECKS), ("probes", TOY_PROBES), ("judges", TOY_JUDGES)):
        (folder / f"{name}.py").write_text(head + "\n\n" + code[f"autograder/nb01/{name}.py"])
    (root / "tests" / "test_nb09_checks.py").write_text(TOY_TESTS + "\n\n" + code["tests/test_nb01_checks.py"])

    run(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_nb09_checks.py")
    run(root, "-m", "autograder.release")
    answers = solution_sources(source)
    hand_in(root, "09-toy", "toy.ipynb", "right", answers)
    hand_in(root, "09-toy", "toy.ipynb", "wrong", {**answers, "square_slope": WRONG_SLOPE})
    run(root, "-m", "autograder", "grade", "09-toy")

    rows = grades(root, "09-toy")
    assert rows["right"].score == rows["right"].max_score == 2.0, rows["right"]
    assert rows["wrong"].score == 0.0, rows["wrong"]
    changed = {path for path, digest in snapshot(root).items() if before.get(path) != digest}
    assert changed == {  # + its README line
        "solutions/09-toy/toy.ipynb",
        "autograder/nb09/__init__.py",
        "autograder/nb09/probes.py",
        "autograder/nb09/judges.py",
        "tests/test_nb09_checks.py",
    }
