"""The learners' course/ is exactly a fresh nbgrader release of solutions/, and gives nothing away."""

from __future__ import annotations

import json
import re

import nbformat
import pytest
from conftest import RELEASED_NOTEBOOKS, notebooks_of

from autograder.coursedir import COURSE, SOLUTIONS, assignments
from autograder.release import generate_release

MIN_EXERCISES = {"01": 5, "02": 8, "03": 8, "04": 10, "05": 9}


def _id(path):
    return f"{path.parent.name}/{path.name}"


def _files(folder):
    return sorted(
        str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts
    )


def test_course_equals_a_fresh_generation(tmp_path):
    generate_release(tmp_path)
    assert sorted(p.name for p in COURSE.iterdir() if p.is_dir()) == assignments(), (
        "course/ and solutions/ hold different assignments: run `make release`"
    )
    stale = []
    for assignment in assignments():
        fresh, committed = tmp_path / assignment, COURSE / assignment
        assert _files(fresh) == _files(committed), f"{assignment}: different files; run `make release`"
        for name in _files(fresh):
            a, b = (fresh / name).read_bytes(), (committed / name).read_bytes()
            if name.endswith(".ipynb"):
                a, b = json.loads(a), json.loads(b)
            if a != b:
                stale.append(f"{assignment}/{name}")
    assert not stale, f"course/ is out of date for {stale}: run `make release` and commit course/"


def _solution_regions(notebook):
    """Source lines between the solution markers, and hidden-test lines, of a solution notebook."""
    nb = nbformat.read(notebook, as_version=4)
    regions = []
    for cell in nb.cells:
        for begin, end in (
            ("### BEGIN SOLUTION", "### END SOLUTION"),
            ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
        ):
            for block in re.findall(re.escape(begin) + r"(.*?)" + re.escape(end), cell.source, flags=re.S):
                regions.append(block)
    return regions


@pytest.mark.parametrize("assignment", assignments())
def test_release_contains_no_solution_or_hidden_test(assignment):
    for released in notebooks_of(COURSE / assignment):
        text = released.read_text()
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            assert marker not in text, f"{released.name} contains '{marker}'"
        released_lines = {
            line.strip() for cell in nbformat.read(released, as_version=4).cells for line in cell.source.splitlines()
        }
        for region in _solution_regions(SOLUTIONS / assignment / released.name):
            # A worked example may share a line or two with a solution (a loop header, say); a region
            # most of whose specific lines show up in the release has been given away.
            specific = [s.strip() for s in region.splitlines() if len(s.strip()) > 20 and not s.strip().startswith("#")]
            leaked = [line for line in specific if line in released_lines]
            assert not specific or len(leaked) * 2 <= len(specific), (
                f"{released.name} shows solution/hidden-test lines: {leaked[:3]}"
            )


@pytest.mark.parametrize("assignment", assignments())
def test_enough_exercises(assignment):
    (solution,) = notebooks_of(SOLUTIONS / assignment)
    nb = nbformat.read(solution, as_version=4)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    assert len(graded) >= MIN_EXERCISES.get(assignment[:2], 1)


@pytest.mark.slow
@pytest.mark.parametrize("notebook", RELEASED_NOTEBOOKS, ids=_id)
def test_every_graded_cell_fails_on_the_release_with_a_message(notebook, validated_releases):
    results, executed, _ = validated_releases(notebook)
    graded = [c for c in executed.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    failed_sources = {f["source"] for f in results.get("failed", [])}
    passing = [c.metadata.nbgrader.grade_id for c in graded if c.source.strip() not in failed_sources]
    assert not passing, f"test cells that pass on a blank notebook: {passing}"
    for cell in graded:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"{cell.metadata.nbgrader.grade_id} has no error output"
        # The learner sees our message ('... is not written yet ...'), not a bare NameError or NotImplementedError.
        assert errors[0].ename == "CheckFailed", (
            f"{cell.metadata.nbgrader.grade_id}: {errors[0].ename}: {errors[0].evalue}"
        )
        assert "not written yet" in " ".join(errors[0].evalue.split()), (
            f"{cell.metadata.nbgrader.grade_id}: {errors[0].evalue}"
        )
