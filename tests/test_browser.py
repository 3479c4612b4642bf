"""The course in the tools people use, driven in Chromium: a learner in JupyterLab, an instructor in formgrader.

Each test works on its own copy (of course/, of an exchange, of a graded demo course) and its own
server, so they do not depend on each other's state. Screenshots of every step are kept under
build/browser/<test>/ to look at when one fails.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.coursedir import COURSE, SOLUTIONS
from autograder.submissions import fill_answers, solution_sources
from browser import Shots, chromium_page, free_port, jupyter_server, require_browser, server_args, TOKEN

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ASSIGNMENT = "01-reverse-accumulation"
NOTEBOOK = "reverse_accumulation.ipynb"
EXERCISE = "central_difference"   # typed through the browser: blank, wrong, right
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
    page.wait_for_function("(el) => /\\[\\d+\\]/.test(el.textContent)", arg=cell.locator(".jp-InputPrompt").element_handle())


def test_learner_runs_an_exercise_validates_and_submits(tmp_path):
    require_browser()
    course, exchange = learner_copy(tmp_path), tmp_path / "exchange"
    port = free_port()
    args = f"--course-dir {course} --exchange {exchange} --config-dir {tmp_path / 'config'} " + server_args(tmp_path, port)
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
        assert "is not written yet" in output.inner_text()
        test.scroll_into_view_if_needed()
        shot("blank exercise says what to do")

        set_source(page, answer, WRONG)
        run(page, answer)
        run(page, test)
        assert "one-sided difference" in output.inner_text()
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
        panel.locator("#submitted_assignments_list .list_item").filter(has_text=ASSIGNMENT).first.wait_for()
        shot("submitted")

    inbound = list((exchange / "revad" / "inbound").glob(f"*+{ASSIGNMENT}+*"))
    assert len(inbound) == 1, "the submission is in the exchange, where `nbgrader collect` finds it"
    submitted = nbformat.read(inbound[0] / NOTEBOOK, as_version=4)
    assert any(RIGHT in c.source for c in submitted.cells), "the submission holds what the learner typed"
