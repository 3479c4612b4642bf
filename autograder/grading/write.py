"""Writing what the learner and the instructor see: the autograded notebook (release test code, trusted
outcomes as the test cells' outputs, no setup or probe cells, hidden test lines redacted) and the
feedback HTML (nbgrader's feedback template)."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from .assemble import fresh_ids
from .feedback_html import feedback_exporter, notes_cell, with_notes
from .jobs import NotebookResult
from .measurements import NOT_RUN_NOTE
from .read import nbgrader_meta
from .sanitize import sanitize_notebook
from .spec import CellSpec


def _redact(text: str, secrets: list[str]) -> str:
    if not secrets or not isinstance(text, str):
        return text
    lines = text.splitlines(keepends=True)
    return "".join("[hidden test code removed]\n" if any(s in line for s in secrets) else line for line in lines)


def _redact_outputs(cell, secrets: list[str]) -> None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            out["text"] = _redact("".join(out["text"]) if isinstance(out["text"], list) else out["text"], secrets)
        elif out.get("output_type") == "error":
            out["evalue"] = _redact(out.get("evalue", ""), secrets)
            out["traceback"] = [_redact(t, secrets) for t in out.get("traceback", [])]
        elif "data" in out:
            for mime, value in list(out["data"].items()):
                if isinstance(value, str) and mime.startswith("text/"):
                    out["data"][mime] = _redact(value, secrets)


def write_autograded(
    run_nb: NotebookNode,
    nb: NotebookNode,
    result: NotebookResult,
    by_id: dict[str, CellSpec],
    test_index: dict,
    report: dict,
    secrets: list[str],
    cell_timeout_s: int,
    out_dir: Path,
) -> NotebookNode:
    """autograded/<name>.ipynb: the run's cells without the grader's own, each graded test cell showing
    the release's test code and the trusted outcome. Returns it (the feedback page is made from it)."""
    graded = nbformat.v4.new_notebook()
    graded.metadata = nbformat.from_dict(copy.deepcopy(dict(nb.metadata)) if isinstance(nb.metadata, dict) else {})
    status = report["status"]
    for index, cell in enumerate(run_nb.cells):
        if cell.metadata.get("revad", {}).get("role"):
            continue
        cell = copy.deepcopy(cell)
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in result.grades and gid in test_index:
            g = result.grades[gid]
            cell.source = by_id[gid].release_source
            cell.outputs = [_outcome_output(g)]
        elif cell.cell_type == "code":
            _redact_outputs(cell, secrets)
            if status.get(index) == "skipped":
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=NOT_RUN_NOTE)]
            if status.get(index) == "timeout":
                cell.outputs.append(
                    nbformat.v4.new_output(
                        "stream", name="stderr", text=f"[stopped by the grader after {cell_timeout_s} s]\n"
                    )
                )
            if index in report["truncated"]:
                cell.outputs.append(
                    nbformat.v4.new_output("stream", name="stdout", text="[more output was dropped by the grader]\n")
                )
        graded.cells.append(cell)
    # formgrader shows this notebook: the grader's messages and each flag's reason come first
    with_notes(graded, notes_cell(result.messages, result.flags, for_learner=False))
    fresh_ids(graded)
    sanitize_notebook(graded)  # formgrader shows this notebook as HTML without sanitizing it
    (out_dir / "autograded").mkdir(parents=True, exist_ok=True)
    nbformat.write(graded, out_dir / "autograded" / f"{result.notebook}.ipynb")
    return graded


def _outcome_output(g):
    if g.score >= g.max:
        return nbformat.v4.new_output("stream", name="stdout", text=f"Passed: {g.score:g} / {g.max:g} points.\n")
    if g.messages and g.score > 0:
        return nbformat.v4.new_output(
            "stream",
            name="stdout",
            text=f"Partly right: {g.score:g} / {g.max:g} points.\n" + "\n".join(g.messages) + "\n",
        )
    text = "\n".join(g.messages) or "This test did not pass."
    return nbformat.v4.new_output("error", ename="CheckFailed", evalue=text, traceback=[f"CheckFailed: {text}"])


ALL_HIDDEN = "All of this test's cases are hidden: its score comes with the feedback your instructor releases."
SHOWN_ONLY_NOTE = (
    "**Your results on the tests your notebook shows.** Your instructor's hidden tests were run too; their "
    "result, and your score for the assignment, come with the feedback your instructor releases."
)


def write_feedback(
    name: str, result: NotebookResult, graded: NotebookNode | None, out_dir: Path, messages: Sequence[str] = ()
) -> None:
    """Feedback HTML with nbgrader's feedback template: scores, trusted messages, the flags that concern
    the learner, no hidden tests; maths rendered without a network, long lines wrapped."""
    html = feedback_page(name, result, graded, messages)
    (out_dir / "feedback").mkdir(parents=True, exist_ok=True)
    (out_dir / "feedback" / f"{name}.html").write_text(html)


def feedback_page(
    name: str,
    result: NotebookResult,
    graded: NotebookNode | None,
    messages: Sequence[str] = (),
    shown_only: bool = False,
) -> str:
    """The feedback page of one notebook. `shown_only`: each test judged on the cases the learner's copy shows
    (result.shown), nothing of the hidden tests, not even their score: what grade on submit hands back at once
    when the course keeps the hidden tests' result for the instructor's release."""
    nb = copy.deepcopy(graded) if graded is not None else nbformat.v4.new_notebook()
    grades = result.shown if shown_only else result.grades
    notes = notes_cell([*messages, *result.messages], result.flags, for_learner=True)
    with_notes(nb, notes)
    if shown_only:
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(SHOWN_ONLY_NOTE))
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if gid in grades:
            meta["score"] = grades[gid].score
            meta["points"] = grades[gid].max
            if shown_only and meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
                g = grades[gid]
                hidden = g.messages == [ALL_HIDDEN]
                cell.outputs = (
                    [nbformat.v4.new_output("stream", name="stdout", text=ALL_HIDDEN + "\n")]
                    if hidden
                    else [_outcome_output(g)]
                )
        if gid in result.comments:
            meta["comment"] = result.comments[gid]
    sanitize_notebook(nb)  # the grader's notes name files the learner named
    score, max_score = sum(g.score for g in grades.values()), sum(g.max for g in grades.values())
    # as nbgrader's GetGrades: the score less the late penalty, which its template lists (the notes say why)
    penalty = 0.0 if shown_only else result.late_penalty or 0.0
    exporter = feedback_exporter()
    resources = {
        "nbgrader": {"notebook": name, "score": score - penalty, "max_score": max_score, "late_penalty": penalty}
    }
    html, _ = exporter.from_notebook_node(nb, resources=resources)
    return html
