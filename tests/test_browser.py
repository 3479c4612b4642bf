"""The course in the tools people use, driven in Chromium: a learner in JupyterLab, an instructor in formgrader.

Each test works on its own copy (of course/, of an exchange, of a graded demo course) and its own
server, so they do not depend on each other's state. Screenshots of every step are kept under
build/browser/<test>/ to look at when one fails.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from browser import TOKEN, Shots, chromium_page, free_port, jupyter_server, require_browser, server_args

from autograder.coursedir import COURSE, SOLUTIONS
from autograder.submissions import fill_answers, solution_sources

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ASSIGNMENT = "01-reverse-accumulation"
NOTEBOOK = "reverse_accumulation.ipynb"
EXERCISE = "central_difference"  # typed through the browser: blank, wrong, right
WRONG = "def central_difference(f, x, h):\n    return (f(x + h) - f(x)) / h"
RIGHT = "def central_difference(f, x, h):\n    return (f(x + h) - f(x - h)) / (2 * h)"


def learner_copy(tmp: Path) -> Path:
    """A copy of course/ whose notebook has every answer written except the one typed in the browser."""
    course = tmp / "course"
    shutil.copytree(COURSE, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    answers = solution_sources(SOLUTIONS / ASSIGNMENT / NOTEBOOK)
    answers.pop(EXERCISE)
    nbformat.write(fill_answers(course / ASSIGNMENT / NOTEBOOK, answers), course / ASSIGNMENT / NOTEBOOK)
    return course


def cell_with(page, text: str):
    return page.locator(".jp-Notebook .jp-Cell").filter(has=page.locator(".jp-InputArea-editor", has_text=text)).first


def set_source(page, cell, source: str) -> None:
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputArea-editor .cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(source)  # inserted as typed text, without the editor's auto-indent


def run(page, cell) -> None:
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputArea-editor .cm-content").click()
    page.keyboard.press("Shift+Enter")
    # the prompt shows [*] while the cell runs, then its execution count
    cell.locator(".jp-InputPrompt").filter(has_text="[*]").wait_for(state="detached")
    page.wait_for_function(
        "(el) => /\\[\\d+\\]/.test(el.textContent)", arg=cell.locator(".jp-InputPrompt").element_handle()
    )


def test_learner_runs_an_exercise_validates_and_submits(tmp_path):
    require_browser()
    course, exchange = learner_copy(tmp_path), tmp_path / "exchange"
    port = free_port()
    work = tmp_path / "work"
    args = (
        f"--course-dir {course} --work-dir {work} --exchange {exchange} --config-dir {tmp_path / 'config'} "
        + server_args(tmp_path, port)
    )
    with jupyter_server(["make", "-s", "lab", f"LAB_ARGS={args}"], tmp_path, port) as base, chromium_page() as page:
        shot = Shots(page, "learner")
        page.goto(f"{base}/lab/tree/{ASSIGNMENT}/{NOTEBOOK}?token={TOKEN}")
        page.locator(".jp-Notebook").wait_for()
        page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for()  # the kernel is up
        shot("notebook open")

        # the learner's tools only: Validate, no Create Assignment sidebar, no Formgrader in the menus
        assert page.get_by_role("button", name="Validate").is_visible()
        assert page.locator("text=Create Assignment").count() == 0
        page.get_by_role("menuitem", name="Nbgrader").click()
        menu = page.locator("#jp-mainmenu-nbgrader")
        assert menu.get_by_text("Assignment List").is_visible()
        assert menu.get_by_text("Formgrader").count() == 0 and menu.get_by_text("Course List").count() == 0
        shot("nbgrader menu without instructor tools")
        page.keyboard.press("Escape")

        answer, test = cell_with(page, f"def {EXERCISE}("), cell_with(page, f"check_{EXERCISE}({EXERCISE}")
        assert "raise NotImplementedError()" in answer.locator(".jp-InputArea-editor").text_content()
        run(page, answer)
        run(page, test)
        output = test.locator(".jp-OutputArea")
        assert "is not written yet" in " ".join(output.inner_text().split())
        test.scroll_into_view_if_needed()
        shot("blank exercise says what to do")

        set_source(page, answer, WRONG)
        run(page, answer)
        run(page, test)
        assert "one-sided difference" in " ".join(output.inner_text().split())
        assert "registry.py" not in output.inner_text() and "autograder/" not in output.inner_text(), (
            "the traceback shows the check's message and the learner's cell, none of the grader's frames"
        )
        shot("wrong answer gets a hint")

        set_source(page, answer, RIGHT)
        run(page, answer)
        run(page, test)
        assert f"{EXERCISE} passes the visible tests." in output.inner_text()
        shot("right answer passes")

        page.get_by_role("button", name="Validate").click()
        dialog = page.locator(".jp-Dialog")
        dialog.get_by_text("Success! Your notebook passes all the tests.").wait_for(timeout=120_000)
        shot("validate succeeds")
        dialog.get_by_role("button", name="OK").click()

        page.get_by_role("menuitem", name="Nbgrader").click()
        page.locator("#jp-mainmenu-nbgrader").get_by_text("Assignment List").click()
        panel = page.locator("#nbgrader-assignment-list")
        row = panel.locator("#fetched_assignments_list .list_item").filter(has_text=ASSIGNMENT)
        row.wait_for()
        shot("assignments panel on the local exchange")
        row.get_by_role("button", name="Submit").click()
        submitted_row = panel.locator("#submitted_assignments_list .list_item").filter(has_text=ASSIGNMENT).first
        submitted_row.wait_for()
        shot("submitted")

        # the instructor collects, grades with the course's command and releases the feedback (stock nbgrader)
        grade_and_release_feedback(tmp_path / "instructor", exchange)
        page.reload()
        page.get_by_role("menuitem", name="Nbgrader").click()
        page.locator("#jp-mainmenu-nbgrader").get_by_text("Assignment List").click()
        panel = page.locator("#nbgrader-assignment-list")
        fetch = panel.get_by_role("button", name="Fetch Feedback").first
        fetch.wait_for(timeout=60_000)
        shot("feedback released: Fetch Feedback")
        fetch.click()
        panel.get_by_text("view feedback").first.wait_for(timeout=60_000)
        shot("feedback fetched")

    (page_file,) = (work / ASSIGNMENT / "feedback").glob("*/reverse_accumulation.html")
    with chromium_page(width=1000, height=900) as page:
        shot = Shots(page, "learner-feedback")
        outside = []
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        shot("fetched feedback")
        assert outside == [], f"the fetched feedback requested {outside}: it must work offline"
        assert (
            "Score: 15" in page.locator("body").inner_text().replace("\n", " ")
            or "15.0 / 15.0" in page.locator("body").inner_text()
        )
        assert page.locator("math").count() > 20

    inbound = list((exchange / "revad" / "inbound").glob(f"*+{ASSIGNMENT}+*"))
    assert len(inbound) == 1, "the submission is in the exchange, where `nbgrader collect` finds it"
    submitted = nbformat.read(inbound[0] / NOTEBOOK, as_version=4)
    assert any(RIGHT in c.source for c in submitted.cells), "the submission holds what the learner typed"


INSTRUCTOR_CONFIG = """\
import os
from autograder.offline_math import offline_html_config
from autograder.coursedir import put_interpreter_scripts_on_path
c = get_config()  # noqa: F821
put_interpreter_scripts_on_path()   # as the course's nbgrader_config.py does
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "revad"
c.Exchange.root = {exchange!r}
offline_html_config(c)
"""


def grade_and_release_feedback(instructor: Path, exchange: Path) -> None:
    """An instructor's side of the cycle, each step one command: collect, grade, release feedback."""
    shutil.copytree(SOLUTIONS / ASSIGNMENT, instructor / "source" / ASSIGNMENT)
    (instructor / "nbgrader_config.py").write_text(INSTRUCTOR_CONFIG.format(exchange=str(exchange)))
    nbgrader = str(Path(sys.executable).parent / "nbgrader")
    for command in (
        [nbgrader, "collect", ASSIGNMENT],
        [sys.executable, "-m", "autograder", "grade", ASSIGNMENT, "--course-dir", str(instructor), "--quiet"],
        [nbgrader, "release_feedback", ASSIGNMENT],
    ):
        out = subprocess.run(command, cwd=instructor, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, f"{command}: {out.stdout[-2000:]}{out.stderr[-2000:]}"


@pytest.fixture(scope="module", autouse=True)
def demo_grading(demo_run):
    """The demo's grading (the session's one run of `make demo`'s code, conftest.DemoRun) starts with the module's
    first test and runs beside it: the learner's test mostly waits on the browser, so the suite takes less time."""
    return demo_run


@pytest.fixture(scope="module")
def graded_demo(demo_grading, tmp_path_factory):
    """A copy of the graded demo course for the instructor's tests: formgrader may write into its course."""
    require_browser()
    root, _ = demo_grading.graded()
    copy = tmp_path_factory.mktemp("graded-demo") / "course"
    shutil.copytree(root, copy, symlinks=True)
    return copy


def test_instructor_sees_graded_submissions_flags_and_reasons_in_formgrader(graded_demo, tmp_path):
    port = free_port()
    args = f"--course-dir {graded_demo} --config-dir {tmp_path / 'config'} " + server_args(tmp_path, port)
    with (
        jupyter_server(["make", "-s", "formgrader", f"FORMGRADER_ARGS={args}"], tmp_path, port) as base,
        chromium_page() as page,
    ):
        shot = Shots(page, "instructor")
        page.goto(f"{base}/formgrader/gradebook/{ASSIGNMENT}/{NOTEBOOK.removesuffix('.ipynb')}?token={TOKEN}")
        page.locator("table tbody td.name").first.wait_for()  # the rows come from formgrader's API
        page.get_by_role("button", name="Show All Names").click()
        rows = page.locator("table tbody tr")
        ada, cleo = rows.filter(has_text="ada"), rows.filter(has_text="cleo")
        shot("manual grading list")
        assert ada.locator("td.score").inner_text() == "15 / 15"
        assert ada.locator(".needs-manual-grade span").count() == 0, "ada's autograded cells are graded"
        assert ada.locator(".flagged span").count() == 0
        assert rows.locator(".needs-manual-grade span").count() == 0, (
            "no submission needs a person: every cell is autograded"
        )
        assert cleo.locator(".flagged .glyphicon-flag").count() == 1, "the tampering learner is flagged"

        outside = []
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((base, "data:", "blob:")) else None)
        cleo.locator("td.name a.name-shown").click()
        page.get_by_text("locked_cell_edited").first.wait_for()
        notes = page.locator(".cell, .nbgrader_cell").filter(has_text="locked_cell_edited").first
        notes.scroll_into_view_if_needed()
        shot("flagged submission with its reason")
        assert "test_primal_trace" in notes.inner_text() and "edited" in notes.inner_text()
        assert page.locator("math").count() > 20, "the submission's maths is rendered (MathML)"
        assert outside == [], f"formgrader's submission page requested {outside}: it must work offline"


def test_feedback_renders_maths_offline_and_wraps_long_lines(graded_demo):
    (feedback,) = (graded_demo / "feedback" / "ben" / ASSIGNMENT).glob("*.html")
    with chromium_page(width=1000, height=900) as page:
        shot = Shots(page, "feedback")
        outside = []
        page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
        page.goto(feedback.as_uri())
        page.wait_for_load_state("load")
        shot("feedback top")
        assert outside == [], f"the feedback fetched {outside}: it must work offline"
        maths = page.locator("math")
        assert maths.count() > 20, "the notebook's maths is rendered (MathML)"
        box = maths.first.bounding_box()
        assert box and box["width"] > 0 and box["height"] > 0
        text = page.locator("body").inner_text()
        assert "$$" not in text and "\\frac" not in text, "no raw LaTeX left on the page"
        hint = page.get_by_text("one-sided difference").first
        hint.scroll_into_view_if_needed()
        shot("hint wraps")
        overflowing = page.evaluate("""() => [...document.querySelectorAll('pre')]
            .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 80))""")
        assert overflowing == [], f"lines cut off behind a scroll bar: {overflowing}"
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), (
            "the page scrolls sideways"
        )


def test_feedback_tells_the_learner_why_they_were_flagged(graded_demo):
    (feedback,) = (graded_demo / "feedback" / "cleo" / ASSIGNMENT).glob("*.html")
    with chromium_page(width=1000, height=900) as page:
        shot = Shots(page, "feedback-flagged")
        page.goto(feedback.as_uri())
        notes = page.locator(".text_cell_render").filter(has_text="Flagged for your instructor").first
        notes.scroll_into_view_if_needed()
        shot("flag reason in the learner's feedback")
        text = notes.inner_text()
        assert "locked_cell_edited" in text and "you edited a locked cell" in text and "test_primal_trace" in text
