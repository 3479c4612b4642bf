"""The whole class cycle with stock nbgrader commands and the course's grading command, two learners in
separate home directories: release_assignment -> fetch_assignment -> (answers) -> submit -> collect ->
`python -m autograder grade` -> release_feedback -> fetch_feedback. Each learner's fetched feedback holds
their own score and messages and nobody else's; feedback asked for before grading says there is none."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from feedback_page import score_line

from autograder.coursedir import SOLUTIONS
from autograder.submissions import fill_answers, solution_sources

pytestmark = [pytest.mark.lifecycle, pytest.mark.slow]

ASSIGNMENT = "01-reverse-accumulation"
NOTEBOOK = "reverse_accumulation.ipynb"
BIN = Path(sys.executable).parent
# ben's one mistake: a one-sided difference (its test cell is worth 2 of the notebook's 15 points)
BEN_WRONG = {"central_difference": "def central_difference(f, x, h):\n    return (f(x + h) - f(x)) / h"}

INSTRUCTOR_CONFIG = """\
import os
from autograder.offline_math import offline_html_config
c = get_config()  # noqa: F821
offline_html_config(c)   # as the course's nbgrader_config.py does
here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = here
c.CourseDirectory.course_id = "revad"
c.Exchange.root = {exchange!r}
"""
LEARNER_CONFIG = """\
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "revad"
c.Exchange.root = {exchange!r}
c.ExchangeFactory.fetch_feedback = "autograder.exchange.FetchFeedback"   # says plainly when there is none yet
c.CourseDirectory.student_id = {learner!r}   # one Unix user runs the test; on a hub each learner is their own user
"""


def nbgrader(cwd: Path, *args: str, home: Path | None = None, user: str | None = None, ok: bool | None = True) -> str:
    """A stock nbgrader command, as a user whose home is `home` would run it from a plain shell."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("JUPYTER_DATA_DIR", None)
    if home is not None:
        env.update(HOME=str(home), USER=user, LOGNAME=user)
    out = subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert ok is None or (out.returncode == 0) == ok, (
        f"nbgrader {' '.join(args)} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    )
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def cycle(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cycle")
    exchange, instructor = tmp / "exchange", tmp / "instructor"
    (exchange).mkdir(mode=0o777)
    shutil.copytree(SOLUTIONS / ASSIGNMENT, instructor / "source" / ASSIGNMENT)
    (instructor / "nbgrader_config.py").write_text(INSTRUCTOR_CONFIG.format(exchange=str(exchange)))
    nbgrader(instructor, "generate_assignment", ASSIGNMENT, "--force")
    nbgrader(instructor, "release_assignment", ASSIGNMENT)

    homes, before = {}, {}
    answers = solution_sources(SOLUTIONS / ASSIGNMENT / NOTEBOOK)
    for learner, mine in (("ada", answers), ("ben", {**answers, **BEN_WRONG})):
        home = homes[learner] = tmp / "home" / learner
        home.mkdir(parents=True)
        (home / "nbgrader_config.py").write_text(LEARNER_CONFIG.format(exchange=str(exchange), learner=learner))
        nbgrader(home, "fetch_assignment", ASSIGNMENT, home=home, user=learner)
        path = home / ASSIGNMENT / NOTEBOOK
        nbformat.write(fill_answers(path, mine), path)
        nbgrader(home, "submit", ASSIGNMENT, home=home, user=learner)
        before[learner] = nbgrader(home, "fetch_feedback", ASSIGNMENT, home=home, user=learner, ok=False)

    nbgrader(instructor, "collect", ASSIGNMENT)
    graded = subprocess.run(
        # one grading slot: two learners do not pay for a second worker's imports (the exchange is tested here)
        [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--course-dir", str(instructor), "--workers", "1"],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    released = nbgrader(instructor, "release_feedback", ASSIGNMENT)
    pages = {}
    for learner, home in homes.items():
        nbgrader(home, "fetch_feedback", ASSIGNMENT, home=home, user=learner)
        found = list((home / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK.replace('.ipynb', '.html')}"))
        assert len(found) == 1, f"{learner} fetched {found}"
        pages[learner] = found[0].read_text()
    nbgrader(instructor, "generate_feedback", ASSIGNMENT, "--force")  # nbgrader's own feedback, from autograded/
    return {"before": before, "pages": pages, "graded": graded.stdout, "released": released, "instructor": instructor}


def test_feedback_asked_for_before_grading_says_there_is_none(cycle):
    for learner, said in cycle["before"].items():
        assert "There is no feedback for 01-reverse-accumulation yet" in said, f"{learner}: {said[-800:]}"


def test_release_feedback_accepts_what_the_grading_command_wrote(cycle):
    for learner in ("ada", "ben"):
        assert f"Releasing feedback for student '{learner}'" in cycle["released"]


def test_each_learner_fetches_their_own_feedback_and_nobody_elses(cycle):
    ada, ben = cycle["pages"]["ada"], cycle["pages"]["ben"]
    assert score_line(ada) == "15 / 15"
    assert score_line(ben) == "13 / 15", "ben loses the 2 points of his one-sided difference"
    hint = re.compile(r"That is a one-sided difference")
    assert hint.search(ben), "ben's page carries the message about his mistake"
    assert not hint.search(ada), "ada's page carries nothing of ben's"
    for page in (ada, ben):
        assert "BEGIN HIDDEN TESTS" not in page and "### BEGIN SOLUTION" not in page


def test_nbgraders_own_generate_feedback_renders_maths_offline_and_wraps(cycle):
    (page,) = (cycle["instructor"] / "feedback" / "ben" / ASSIGNMENT).glob("*.html")
    html = page.read_text()
    assert html.count("<math") > 20, "maths as MathML"
    assert not re.search(r"<(script|link)[^>]+(src|href)=[\"']https?://", html), "nothing loaded from another host"
    assert "mathjax" not in html.lower().replace("loading mathjax macro", ""), "no MathJax at all"
    assert "pre-wrap" in html, "long lines wrap"
