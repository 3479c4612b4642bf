"""`make demo` end to end: the bundled submissions get the scores they deserve, in nbgrader's gradebook."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.coursedir import assignments

REPO = Path(__file__).resolve().parent.parent

# The partly wrong learner (ben) loses exactly the points of the tests his mistakes fail
# (demo/mistakes/<assignment>/): these are the scores he should get.
EXPECTED_PARTIAL = {
    "01-reverse-accumulation": 10.0,  # 15 - adjoint_trace (3) - central_difference (2)
    "02-scalar-engine": 18.0,  # 24 - variable_pow (3, ln|a|) - variable_backward (3, = instead of +=)
    # a check's points are shared equally among its ideas, and a mistake costs its idea's share:
    "03-custom-functions": 20.67,  # 25 - numerical_jacobian (3) - linear_function (4 / 3 ideas: the interface)
    "04-ctx-toolbox": 32.67,  # 35 - inplace_relu (3 / 3: mark_dirty) - functional_linear (4 / 3: parameter shapes)
    "05-gpu-functions": 28.7,  # 30 - fused_silu (3 / 6: saves sigma(x)) - triton_silu (4 / 5: grad_output layout)
    # 35 - online_logsumexp (3 / 3: no rescaling) - fused_cross_entropy (5 / 6: the mean over every row; its six
    # ideas: the layout, forward, the mean, backward, its interface, memory)
    "06-fused-cross-entropy": 33.17,
    # 31 - composed_attention (3 / 3 ideas: the scale) - tiled_attention_forward (4 / 4: the accumulator rescaled)
    "07-flash-attention": 29.0,
}


def points_lost(submission) -> dict[str, float]:
    """Each grade cell that did not get its points, with what it got: what a failed score comparison shows."""
    return {
        f"{nb.name}/{grade.name}": grade.score
        for nb in submission.notebooks
        for grade in nb.grades
        if grade.max_score and grade.score != grade.max_score
    }


@pytest.fixture(scope="module")
def demo(demo_run):
    """`make demo`'s run (one per session, conftest.DemoRun): the graded course and what it printed."""
    return demo_run.graded()


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments())
def test_demo_scores(demo, assignment):
    root, _ = demo
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        full = gb.find_submission(assignment, "ada")
        partly = gb.find_submission(assignment, "ben")
        blank = gb.find_submission(assignment, "cleo")
        assert full.max_score > 0
        assert full.score == full.max_score, "the correct submission gets full marks"
        assert blank.score == 0, "the blank submission gets zero"
        assert partly.score == EXPECTED_PARTIAL[assignment], (
            "the partly wrong submission loses exactly its mistakes",
            points_lost(partly),
        )


@pytest.mark.slow
def test_demo_writes_feedback_csv_and_a_table(demo):
    root, stdout = demo
    for assignment in assignments():
        for student in ("ada", "ben", "cleo"):
            html = list((root / "feedback" / student / assignment).glob("*.html"))
            assert html, f"no feedback for {student}/{assignment}"
    rows = list(csv.DictReader((root / "grades.csv").open()))
    assert {r["student_id"] for r in rows} == {"ada", "ben", "cleo"}
    assert "ada" in stdout and "Feedback HTML" in stdout and "grades.csv" in stdout


@pytest.mark.slow
def test_partial_credit_feedback_explains_itself(demo):
    """A partly right test cell's feedback carries the check's report (which part failed, the hint)."""
    root, _ = demo
    (html,) = (root / "feedback" / "ben" / "03-custom-functions").glob("*.html")
    text = html.read_text()
    assert "Partly right" in text and "sum over the batch" in text.replace("\n", " ")
    assert "Hidden tests (cases your notebook does not show)" in text  # one score line, the hidden report labelled
    assert "BEGIN HIDDEN" not in text


@pytest.mark.slow
def test_demo_flags_the_tampered_test_cell_with_its_reason(demo):
    """cleo edited a locked test cell (demo/tampered/): flagged, with the reason, in the gradebook and the CSV."""
    root, stdout = demo
    from autograder.grading import record

    rows = record.graded_rows(f"sqlite:///{root / 'gradebook.db'}", "01-reverse-accumulation")
    assert [(f.code, f.detail.split(":")[0]) for f in rows[("01-reverse-accumulation", "cleo")].flags] == [
        ("locked_cell_edited", "test_primal_trace")
    ]
    assert rows[("01-reverse-accumulation", "ada")].flags == [] and rows[("01-reverse-accumulation", "ben")].flags == []
    ben = rows[("01-reverse-accumulation", "ben")].messages
    assert any("test_central_difference" in m and "one-sided difference" in m for m in ben), (
        "the grader's messages (each test's report) are recorded for the instructor"
    )
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for student in ("ada", "ben", "cleo"):
            (nb,) = gb.find_submission("01-reverse-accumulation", student).notebooks
            assert not any(g.needs_manual_grade for g in nb.grades), "autograded cells need no person (formgrader)"
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        (nb,) = gb.find_submission("01-reverse-accumulation", "cleo").notebooks
        assert nb.flagged and nb.score == 0
    flagged = {
        r["student_id"]: r["flags"]
        for r in csv.DictReader((root / "grades.csv").open())
        if r["assignment"] == "01-reverse-accumulation"
    }
    assert "locked_cell_edited" in flagged["cleo"] and "test_primal_trace" in flagged["cleo"] and not flagged["ada"]


# The mistakes the demo's partly wrong learner makes (demo/mistakes/), as the class report must name them.
MOST_COMMON_MISTAKES = {
    "01-reverse-accumulation": {
        "test_adjoint_trace": "collects one contribution",
        "test_central_difference": "one-sided",
    },
    # ben's ln|a| passes the visible case (a > 0); which hint the hidden cases draw depends on them: a = 0 makes
    # math.log fail (outside its domain), a < 0 gives a finite number where there is none
    "02-scalar-engine": {
        "test_variable_pow": ("outside its domain", "finite number that is wrong"),
        "test_variable_backward": "from every use",
    },
    "03-custom-functions": {"test_linear_function": "batch dimension", "test_numerical_jacobian": "one-sided"},
    "04-ctx-toolbox": {"test_inplace_relu": "changed in place", "test_functional_linear": "one gradient per sample"},
    "05-gpu-functions": {"test_fused_silu": "save only x", "test_triton_silu": "ignores strides"},
    "06-fused-cross-entropy": {
        "test_online_logsumexp": "raises the maximum",
        "test_fused_cross_entropy": "not in the mean",
    },
    "07-flash-attention": {
        "test_composed_attention": "scaled by 1/√d",
        "test_tiled_attention_forward": "what the accumulator holds",
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("assignment", assignments())
def test_the_class_report_names_the_classs_mistakes_offline_and_anonymously(demo, assignment, tmp_path):
    import re

    from autograder.class_report import write_report

    root, _ = demo
    page = write_report(root, assignment, f"sqlite:///{root / 'gradebook.db'}", tmp_path).read_text()
    for gid, phrases in MOST_COMMON_MISTAKES[assignment].items():
        row = re.search(rf"<tr><td><code>{gid}</code>.*?</tr>", page, re.S)
        named = row and any(p in row.group(0) for p in ([phrases] if isinstance(phrases, str) else phrases))
        assert named and "1 learner(s)" in row.group(0), (gid, row and row.group(0))
    for png in ("scores.png", "mistakes.png"):
        data = (tmp_path / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, png
        assert f'src="{png}"' in page
    assert re.search(r"Grading time per submission: median \d+\.\d s, slowest \d+\.\d s", page), "timed"
    assert "<script" not in page and "http" not in page, "readable offline: no script, no CDN"
    assert not re.search(r"\b(ada|ben|cleo)\b", page), "no learner is named"
    assert "Hidden tests" not in page and "BEGIN HIDDEN" not in page, "the hidden tests' reports stay out"


@pytest.mark.slow
def test_the_grades_export_for_canvas_has_one_row_per_learner(demo, tmp_path):
    from autograder.grading import export_csv

    root, _ = demo
    path = export_csv(f"sqlite:///{root / 'gradebook.db'}", tmp_path / "canvas.csv", "canvas")
    header, possible, *body = list(csv.reader(path.open()))
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert header[5:] == assignments() and possible[0].strip() == "Points Possible"
    scores = {row[3]: dict(zip(header[5:], row[5:])) for row in body}
    assert sorted(scores) == ["ada", "ben", "cleo"]
    assert float(scores["ben"]["01-reverse-accumulation"]) == EXPECTED_PARTIAL["01-reverse-accumulation"]


@pytest.mark.slow
def test_the_report_command_writes_the_page(demo, tmp_path):
    root, _ = demo
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    command = [
        "report",
        "01-reverse-accumulation",
        "--course-dir",
        str(root),
        "--db-url",
        db_url,
        "--out",
        str(tmp_path),
    ]
    out = subprocess.run([sys.executable, "-m", "autograder", *command], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and (tmp_path / "report.html").is_file(), out.stdout + out.stderr
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Similar answers</h2>" in page and (tmp_path / "similarity.html").is_file(), "issue 50's two tools"
    assert "No due date is set for this assignment" in page  # the demo sets none: nothing counts as late
