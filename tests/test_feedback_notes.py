"""The grader's notes cell: every flag with its reason for the instructor, the learner's version in their feedback."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from autograder.grading.feedback_html import notes_cell, notes_markdown, with_notes
from autograder.grading.jobs import Flag

FLAGS = [
    Flag("locked_cell_edited", "test_primal_trace: edited (the instructor's copy was run instead)"),
    Flag("grader_error", "Traceback (most recent call last): internal"),
]


def test_instructor_notes_give_each_flag_its_reason_and_the_messages():
    text = notes_markdown(["reverse_accumulation.ipynb has no code in it"], FLAGS, for_learner=False)
    assert "`locked_cell_edited`: a locked cell was edited; the original ran in its place" in text
    assert ": test_primal_trace: edited" in text and "has no code in it" in text
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


def test_every_flag_the_grader_raises_has_a_sentence_for_each_reader():
    """Each code written anywhere in the grader (Flag("code", ...) or {"code": "code"}) is a FLAG_KINDS entry
    with a learner's and an instructor's sentence; an unknown code is refused where the flag is made."""
    import re
    from pathlib import Path

    import pytest

    from autograder.grading.jobs import FLAG_KINDS, Flag

    source = "\n".join(p.read_text() for p in Path(autograder_dir()).rglob("*.py"))
    raised = set(re.findall(r'Flag\(\s*"([a-z_]+)"', source)) | set(re.findall(r'"code": "([a-z_]+)"', source))
    assert {"patched", "symlink", "reaches_for_grader", "by_hand_with_autograd"} <= raised
    assert raised <= set(FLAG_KINDS), raised - set(FLAG_KINDS)
    for code, kind in FLAG_KINDS.items():
        assert len(kind.learner) > 20 and len(kind.instructor) > 20 and kind.learner != kind.instructor, code
    with pytest.raises(ValueError, match="unknown flag code"):
        Flag("patchd", "a typo")


def test_learner_and_instructor_notes_carry_the_meaning_of_every_flag():
    from autograder.grading.jobs import FLAG_KINDS

    flags = [Flag(code, "where") for code in FLAG_KINDS]
    learner = notes_markdown([], flags, for_learner=True)
    instructor = notes_markdown([], flags, for_learner=False)
    for code, kind in FLAG_KINDS.items():
        assert f"`{code}`: {kind.learner}" in learner and f"`{code}`: {kind.instructor}" in instructor, code


def autograder_dir():
    import autograder

    return Path(autograder.__file__).parent


def test_the_score_table_gives_each_recorded_flag_its_instructor_sentence():
    from autograder.grading.jobs import FLAG_KINDS, NotebookFlag

    line = NotebookFlag("nb", "patched", "the learner's code assigns to torch.allclose").instructor_line
    assert line == f"patched: {FLAG_KINDS['patched'].instructor}: the learner's code assigns to torch.allclose"
    retired = NotebookFlag("nb", "retired_code", "d")
    assert retired.instructor_line == "retired_code: d", "an old record still reads"
    assert retired.csv_text == "retired_code (nb: d)"


def _graded_notebook(with_image: bool) -> nbformat.NotebookNode:
    """The released notebook 01 as the feedback template sees it: scored grade cells, an error and a stream output."""
    from autograder.coursedir import REPO

    nb = nbformat.read(next((REPO / "course" / "01-reverse-accumulation").glob("*.ipynb")), as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["score"], meta["points"] = 1.0, 2.0
        if cell.cell_type == "code":
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text="x < y & z\n"),
                nbformat.v4.new_output("error", ename="E", evalue="v", traceback=["\x1b[31mE\x1b[0m: <v>"]),
            ]
    if with_image:
        png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
        last_code = [c for c in nb.cells if c.cell_type == "code"][-1]
        last_code.outputs.append(nbformat.v4.new_output("display_data", data={"image/png": png}))
    return nb


def test_the_feedback_page_is_nbconverts_page_without_its_accessibility_pass_only_where_that_pass_changes_nothing():
    """The feedback exporter skips nbconvert's BeautifulSoup pass (half a page's cost) on pages with no image and
    no JupyterLab cell: the page is what nbconvert writes, up to that pass's re-serialisation; a page with an
    image is nbconvert's own, alt text included."""
    from bs4 import BeautifulSoup
    from nbconvert import HTMLExporter

    from autograder.grading.feedback_html import feedback_exporter

    exporter = feedback_exporter()
    for with_image in (False, True):
        nb = _graded_notebook(with_image)
        resources = {"nbgrader": {"notebook": "n", "score": 3, "max_score": 6, "late_penalty": 0}}
        ours, _ = exporter.from_notebook_node(nb, resources=copy.deepcopy(resources))
        stock, _ = HTMLExporter.from_notebook_node(exporter, nb, resources=copy.deepcopy(resources))
        assert "Test cell</a> (Score: 1.0 / 2.0)" in stock and "x &lt; y &amp; z" in stock
        if with_image:
            assert ours == stock and 'alt="No description has been provided for this image"' in ours
        else:
            assert "<img" not in stock and ours != stock, "the pass was skipped"
            assert str(BeautifulSoup(ours, features="html.parser")) == stock
