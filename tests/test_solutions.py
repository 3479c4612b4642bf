"""Every solution notebook runs top to bottom and earns every point, with nothing on stderr."""

from __future__ import annotations

import json

import nbformat
import pytest
from conftest import SOLUTION_NOTEBOOKS
from nbgrader.utils import determine_grade, is_grade


def _id(path):
    return f"{path.parent.name}/{path.name}"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", SOLUTION_NOTEBOOKS, ids=_id)
def test_solution_passes_nbgrader_validator(notebook, validated_solutions):
    results, _, seconds = validated_solutions(notebook)
    print(f"{_id(notebook)} executed in {seconds:.1f} s")
    assert "failed" not in results, "graded cells failed:\n" + "\n\n".join(
        f["source"][:300] + "\n--> " + f["raw_error"][-1500:] for f in results["failed"]
    )
    assert "changed" not in results and "type_changed" not in results, results


@pytest.mark.slow
@pytest.mark.parametrize("notebook", SOLUTION_NOTEBOOKS, ids=_id)
def test_graded_cells_earn_full_marks_without_stderr(notebook, validated_solutions):
    _, executed, _ = validated_solutions(notebook)
    graded = [cell for cell in executed.cells if is_grade(cell) and cell.cell_type == "code"]
    assert graded, "a course notebook should have autograded test cells"
    for cell in graded:
        grade_id = cell.metadata.nbgrader.grade_id
        stderr = [o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
        assert not stderr, f"{grade_id} writes to stderr (nbgrader scores that as a failure): {stderr}"
        score, max_score = determine_grade(cell)
        assert score == max_score, f"{grade_id}: {score} of {max_score}"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", SOLUTION_NOTEBOOKS, ids=_id)
def test_no_code_cell_errors_in_solution(notebook, validated_solutions):
    _, executed, _ = validated_solutions(notebook)
    for i, cell in enumerate(executed.cells):
        if cell.cell_type == "code":
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert not errors, f"cell {i} raised {errors[0].ename}: {errors[0].evalue}\n{cell.source[:300]}"


@pytest.mark.parametrize("notebook", SOLUTION_NOTEBOOKS, ids=_id)
def test_solution_stored_without_outputs(notebook):
    nb = json.loads(notebook.read_text())
    with_outputs = [
        i
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))
    ]
    assert not with_outputs, f"cells {with_outputs} have outputs or execution counts: clear them before committing"


@pytest.mark.parametrize("notebook", SOLUTION_NOTEBOOKS, ids=_id)
def test_solution_follows_the_template(notebook):
    nb = nbformat.read(notebook, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# "), "notebook starts with its title"
    assert "you will be able to" in first.source.lower(), "the title cell lists the learning outcomes"
    assert "time" in first.source.lower(), "the title cell gives an estimated time"
    last = nb.cells[-1].source.lower()
    assert "what we learned" in last and "pitfall" in last and "next" in last, (
        "closing section: learned / pitfall / next"
    )
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells if "nbgrader" in c.metadata]
    assert len(ids) == len(set(ids)), "grade_ids are unique"
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and cell.cell_type == "code":
            assert meta.get("locked") and meta.get("points", 0) > 0, f"{meta.get('grade_id')}: locked, with points"
            assert "### BEGIN HIDDEN TESTS" in cell.source, f"{meta['grade_id']}: has hidden tests"
        if meta.get("solution"):
            assert "### BEGIN SOLUTION" in cell.source, f"{meta['grade_id']}: marks its solution"
