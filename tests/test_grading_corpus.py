"""The hardened grading command on a corpus of honest, hostile and broken submissions (tests/hostile/).

One grading run (2 parallel workers, short time limits) over a tiny assignment that uses notebook
01's checks; then each submission's score, flags and messages are compared with its spec's EXPECT.
"""

from __future__ import annotations

import html
import os
import socket
import sqlite3
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.coursedir import REPO
from autograder.grading import export_csv, format_table, grade_assignment, record, sandbox

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile  # noqa: E402  (tests/hostile/: the tiny assignment and the corpus)
from hostile.pages import active_parts  # noqa: E402

pytestmark = pytest.mark.slow  # one grading run of the whole corpus (module fixture)

LIMITS = sandbox.Limits(cell_timeout_s=8, timeout_s=45, memory_mb=3072, output_kb=256)
SPECS = hostile.specs()
SECRET_NAME, SECRET_VALUE = "REVAD_GRADER_SECRET", "REVAD_GRADER_SECRET_TOKEN_93"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    hostile.make_course(root, db_url)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    context = {"COURSE": root, "REPO": REPO, "PORT": listener.getsockname()[1]}
    hostile.write_submissions(root, context)
    gradebook_bytes = (root / "gradebook.db").stat().st_size
    logs = []
    os.environ[SECRET_NAME] = SECRET_VALUE  # the grader's own secret: no kernel may see it (x_env_*, x_link_environ)
    try:
        rows = grade_assignment(
            root, hostile.ASSIGNMENT, db_url=db_url, workers=2, limits=LIMITS, progress=False, log=logs.append
        )
    finally:
        del os.environ[SECRET_NAME]
    listener.close()
    return root, db_url, {r.student: r for r in rows}, logs, gradebook_bytes


def test_the_corpus_is_big_enough():
    hostile_specs = [k for k in SPECS if k.startswith("x_")]
    honest = [k for k in SPECS if k.startswith("h_")]
    assert len(hostile_specs) + len(honest) >= 60 and len(honest) >= 6


@pytest.mark.parametrize("name", sorted(SPECS))
def test_submission_gets_its_expected_outcome(graded, name):
    root, db_url, rows, logs, _ = graded
    expect = SPECS[name].EXPECT
    if getattr(SPECS[name], "NEEDS_SANDBOX", False) and sandbox.detect().protections_off():
        pytest.skip("needs the bubblewrap sandbox, which is not usable here: " + sandbox.detect().describe())
    assert name in rows, f"{name} has no recorded score"
    row = rows[name]
    assert row.max_score == hostile.MAX_SCORE, "max points never change"
    assert row.score == expect["score"], f"{name}: {row.score} != {expect['score']}\n{row.flags}\n{row.messages}"
    codes = {f.split(":")[0] for f in row.flags}
    assert codes == expect["flags"], f"{name}: flags {codes}, expected exactly {expect['flags']}\n{row.flags}"
    if "message" in expect:
        assert any(expect["message"] in m for m in row.messages + [row.message]) or any(
            expect["message"] in html.unescape(page.read_text())
            for page in (root / "feedback" / name / hostile.ASSIGNMENT).glob("*.html")
        ), f"{name}: no message with {expect['message']!r}: {row.messages}"


def test_the_sandbox_was_on(graded):
    _, _, _, logs, _ = graded
    if sandbox.detect().protections_off():
        pytest.skip("bubblewrap is not usable here: " + sandbox.detect().describe())
    assert any("sandbox: bubblewrap" in line for line in logs)


def test_gradebook_is_intact_and_nbgrader_reads_it(graded, tmp_path):
    root, db_url, rows, _, _ = graded
    with sqlite3.connect(root / "gradebook.db") as conn:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
    with Gradebook(db_url) as gb:
        assert len(gb.find_assignment(hostile.ASSIGNMENT).submissions) == len(SPECS)
        flagged = {nb.student.id for nb in gb.notebook_submissions(hostile.NOTEBOOK, hostile.ASSIGNMENT) if nb.flagged}
    assert "x_patch_gradcheck_allclose_abs" in flagged and "h_correct" not in flagged
    csv_text = export_csv(db_url, tmp_path / "grades.csv").read_text()
    assert "flags" in csv_text.splitlines()[0] and "reaches_for_grader" in csv_text
    table = format_table(list(rows.values()))
    assert "FLAG patched" in table and "x_malformed_json" in table
    assert not (REPO / "autograder" / "nb01" / "__init__.py").read_text().startswith("owned")


def test_feedback_never_shows_hidden_tests_or_solutions(graded):
    root, *_ = graded
    hidden = ["BEGIN HIDDEN TESTS", "draw=2", "draw=3", "BEGIN SOLUTION"]
    pages = list((root / "feedback").rglob("*.html"))
    assert len(pages) >= len(SPECS) - 2
    for page in pages:
        text = html.unescape(page.read_text())
        for secret in hidden:
            assert secret not in text, f"{page} shows {secret!r}"
    autograded = list((root / "autograded").rglob("*.ipynb"))
    for nb in autograded:
        assert "BEGIN HIDDEN TESTS" not in nb.read_text()


def test_a_trusted_failure_says_why(graded):
    root, _, rows, _, _ = graded
    page = html.unescape(next((root / "feedback" / "h_partly_wrong" / hostile.ASSIGNMENT).glob("*.html")).read_text())
    assert "one-sided difference" in page and "Score: 2" in page


def test_nothing_is_graded_twice_when_run_again(graded):
    root, db_url, rows, _, _ = graded
    before = record.dump(db_url, hostile.ASSIGNMENT)
    logs = []
    again = grade_assignment(
        root, hostile.ASSIGNMENT, db_url=db_url, workers=2, limits=LIMITS, progress=False, log=logs.append
    )
    assert any(f"{len(SPECS)} submission(s) already graded" in line for line in logs)
    assert record.dump(db_url, hostile.ASSIGNMENT) == before
    assert {r.student: r.score for r in again} == {r.student: r.score for r in rows.values()}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_what_is_shown_has_nothing_live_and_nothing_secret(graded, name):
    """Feedback HTML and the autograded notebook as formgrader renders it (nbconvert, unsanitized): no
    script, handler or script URL from the learner; none of the spec's `absent` texts (secrets, prints)."""
    from nbconvert import HTMLExporter

    if getattr(SPECS[name], "NEEDS_SANDBOX", False) and sandbox.detect().protections_off():
        pytest.skip("needs the bubblewrap sandbox, which is not usable here: " + sandbox.detect().describe())
    root, *_ = graded
    pages = [p.read_text() for p in (root / "feedback" / name / hostile.ASSIGNMENT).glob("*.html")]
    notebooks = [p for p in (root / "autograded" / name / hostile.ASSIGNMENT).glob("*.ipynb")]
    pages += [HTMLExporter(template_name="classic").from_filename(str(p))[0] for p in notebooks]
    for page in pages:
        assert active_parts(page) == [], f"{name}: live learner HTML shown"
    for text in [html.unescape(page) for page in pages] + [p.read_text() for p in notebooks]:  # as a reader sees it
        for secret in SPECS[name].EXPECT.get("absent", []) + [SECRET_VALUE]:
            assert secret not in text, f"{name}: {secret!r} is shown"
