"""A class on JupyterHub (deploy/jupyterhub_config.py), end to end in Chromium: two learners log in, fetch
notebook 01 from the Assignments panel, answer (ada rightly; ben with a one-sided difference, and an edit to a
locked test cell), submit; the instructor collects, grades with the course's command and releases feedback; each
learner fetches their own feedback; the instructor sees both in formgrader, the hub's service for instructors, with
the flag and the reasons, and the class report beside them. And what a learner must not reach, by HTTP status:
another learner's server, the formgrader service, the instructor's course directory.

The hub, its proxy, the learners' servers and the formgrader service are started and stopped here, on free ports,
in a scratch folder. Screenshots under build/browser/hub-*/.
"""

from __future__ import annotations

import datetime
import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from browser import CHROMIUM, REPO, Shots, require_browser, running_server
from feedback_page import score_line

from autograder.coursedir import SOLUTIONS, assignments
from autograder.submissions import fill_answers, solution_sources

pytestmark = [pytest.mark.hub, pytest.mark.slow]

ASSIGNMENT, NOTEBOOK = "01-reverse-accumulation", "reverse_accumulation.ipynb"
PASSWORD = "a-test-class-password"
BEN_WRONG = {"central_difference": "def central_difference(f, x, h):\n    return (f(x + h) - f(x)) / h"}
TAMPERED = (REPO / "demo" / "tampered" / ASSIGNMENT / "test_primal_trace.py").read_text()
BIN = Path(sys.executable).parent


def free_ports(count: int) -> int:
    """A first port with the next count - 1 free too (the hub, its API, the proxy's API)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        if first + count < 65000 and all(_free(first + k) for k in range(count)):
            return first
    raise RuntimeError("no run of free ports")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def running_hub(tmp: Path):
    port, service = free_ports(3), free_ports(1)
    env = {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "REVAD_HUB_DIR": str(tmp / "hub"),
        "REVAD_HUB_PORT": str(port),
        "REVAD_HUB_SERVICE_PORT": str(service),
        "REVAD_HUB_LEARNERS": "ada,ben",
        "REVAD_HUB_INSTRUCTORS": "grace",
        "REVAD_HUB_PASSWORD": PASSWORD,
    }
    base = f"http://127.0.0.1:{port}"
    command = [str(BIN / "jupyterhub"), "-f", str(REPO / "deploy" / "jupyterhub_config.py")]
    with running_server(command, tmp / "hub.log", f"{base}/hub/health", env, tmp, timeout=180):
        yield base, tmp / "hub"


def log_in(browser, base: str, name: str):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(120_000)
    page = context.new_page()
    page.goto(f"{base}/hub/login")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.locator("input[type=submit], button[type=submit]").first.click()
    return context, page


def assignments_panel(page):
    page.get_by_role("menuitem", name="Nbgrader").click()
    page.locator("#jp-mainmenu-nbgrader").get_by_text("Assignment List").click()
    return page.locator("#nbgrader-assignment-list")


def instructor(course: Path, *command: str) -> str:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(list(command), cwd=course, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{command}: {out.stdout[-3000:]}{out.stderr[-3000:]}"
    return out.stdout


def require_hub() -> None:
    if shutil.which("configurable-http-proxy") is None:
        pytest.skip("JupyterHub's proxy is not installed: make system-deps (npm install -g configurable-http-proxy)")


def test_a_class_on_the_hub_from_login_to_feedback_and_formgrader(tmp_path):
    require_browser()
    require_hub()
    from playwright.sync_api import sync_playwright

    answers = solution_sources(SOLUTIONS / ASSIGNMENT / NOTEBOOK)
    mine = {"ada": answers, "ben": {**answers, **BEN_WRONG}}
    with running_hub(tmp_path) as (base, state), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        course, pages, kept = state / "course", {}, {}
        for learner in ("ada", "ben"):
            context, page = log_in(browser, base, learner)
            page.wait_for_url(f"**/user/{learner}/lab**")
            shot = Shots(page, f"hub-{learner}")
            panel = assignments_panel(page)
            released = panel.locator("#released_assignments_list .list_item").filter(has_text=ASSIGNMENT)
            for every in assignments():  # the whole course is handed out, notebook 07 included
                panel.locator("#released_assignments_list .list_item").filter(has_text=every).first.wait_for()
            released.get_by_role("button", name="Fetch").click()
            fetched = panel.locator("#fetched_assignments_list .list_item").filter(has_text=ASSIGNMENT)
            fetched.wait_for()
            shot("fetched from the class exchange")
            path = state / "home" / learner / "revad" / ASSIGNMENT / NOTEBOOK
            nb = fill_answers(path, mine[learner])  # what the learner wrote, saved in their home
            if learner == "ben":
                (test,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_primal_trace"]
                test.source = TAMPERED
            nbformat.write(nb, path)
            kept[learner] = (path, path.read_bytes())
            fetched.get_by_role("button", name="Submit").click()
            panel.locator("#submitted_assignments_list .list_item").filter(has_text=ASSIGNMENT).first.wait_for()
            shot("submitted")
            pages[learner] = (context, page, shot)
            if learner == "ada":  # the instructor sets the due date as nbgrader's docs say: ben hands in after it
                time.sleep(1.5)  # the due date is to the second: after ada's timestamp, whatever its fraction
                due = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
                instructor(course, str(BIN / "nbgrader"), "db", "assignment", "add", ASSIGNMENT, f"--duedate={due}")
                time.sleep(1.5)

        instructor(course, str(BIN / "nbgrader"), "collect", ASSIGNMENT)
        # one grading slot: two learners do not pay for a second worker's imports (a test of the hub, not of scale)
        grade = ["-m", "autograder", "grade", ASSIGNMENT, "--course-dir", str(course), "--workers", "1"]
        graded = instructor(course, sys.executable, *grade)
        assert "ada" in graded and "ben" in graded, graded
        instructor(course, str(BIN / "nbgrader"), "release_feedback", ASSIGNMENT)
        out = course / "reports" / ASSIGNMENT
        instructor(
            course,
            sys.executable,
            "-m",
            "autograder",
            "report",
            ASSIGNMENT,
            "--course-dir",
            str(course),
            "--out",
            str(out),
        )

        scores = {}
        for learner, (_, page, shot) in pages.items():
            page.reload()
            panel = assignments_panel(page)
            fetch = panel.get_by_role("button", name="Fetch Feedback").first
            fetch.click()
            panel.get_by_text("view feedback").first.wait_for()
            shot("feedback fetched")
            (html,) = (state / "home" / learner / "revad" / ASSIGNMENT / "feedback").glob(f"*/{NOTEBOOK[:-6]}.html")
            where = html.relative_to(state / "home" / learner).as_posix()
            page.goto(f"{base}/user/{learner}/files/{where}")
            page.get_by_text("Score").first.wait_for()
            shot("own feedback")
            scores[learner] = score_line(page.content())
        assert scores == {"ada": "15 / 15", "ben": "13 / 15"}, scores
        for learner, (path, before) in kept.items():  # submit, grading and feedback leave the learner's copy alone
            assert path.read_bytes() == before, f"{learner}'s notebook changed"
        ben_page = pages["ben"][1].content()
        assert "one-sided difference" in ben_page and "BEGIN HIDDEN TESTS" not in ben_page
        assert "after the due date" in ben_page and "the course sets no penalty for it" in ben_page, "late, free"
        assert "after the due date" not in pages["ada"][1].content()

        # what a learner cannot reach (ada's own session): another learner's server, formgrader, the course
        ada = pages["ada"][0].request
        assert ada.get(f"{base}/user/ben/api/contents").status == 403
        assert ada.get(f"{base}/user/ben/files/revad/{ASSIGNMENT}/{NOTEBOOK}").status == 403
        assert ada.get(f"{base}/services/revad/formgrader").status == 403
        assert ada.get(f"{base}/services/revad/api/contents/source/{ASSIGNMENT}/{NOTEBOOK}").status == 403
        assert ada.get(f"{base}/user/ada/api/contents/..%2F..%2Fcourse%2Fsource").status in (403, 404)
        assert ada.get(f"{base}/user/ada/api/contents").status == 200, "ada reaches her own files"

        home = pages["ada"][1]
        home.goto(f"{base}/hub/home")
        home.locator("#start").wait_for()
        assert home.locator("#revad-instructor").count() == 0, "a learner's hub page has no instructor's links"

        context, page = log_in(browser, base, "grace")
        page.wait_for_url("**/user/grace/**")
        shot = Shots(page, "hub-instructor")
        page.goto(f"{base}/hub/home")
        links = page.locator("#revad-instructor a")
        assert links.all_inner_texts() == ["Formgrader", "Class reports"]
        shot("the hub's page links formgrader and the class reports")
        links.filter(has_text="Class reports").click()
        page.locator(".jp-DirListing-item", has_text=ASSIGNMENT).wait_for()
        shot("class reports in the instructor's service")
        page.goto(f"{base}/services/revad/formgrader/gradebook/{ASSIGNMENT}/{NOTEBOOK[:-6]}")
        page.locator("table tbody td.name").first.wait_for()
        page.get_by_role("button", name="Show All Names").click()
        rows = page.locator("table tbody tr")
        ada_row, ben_row = rows.filter(has_text="ada"), rows.filter(has_text="ben")
        shot("formgrader through the hub")
        assert ada_row.locator("td.score").inner_text() == "15 / 15"
        assert ben_row.locator("td.score").inner_text() == "13 / 15"
        assert ada_row.locator(".flagged .glyphicon-flag").count() == 0
        assert ben_row.locator(".flagged .glyphicon-flag").count() == 1, "ben edited a locked cell: flagged"
        ben_row.locator("td.name a.name-shown").click()
        page.get_by_text("locked_cell_edited").first.wait_for()
        shot("ben's submission: the flag and the reasons")
        assert page.get_by_text("one-sided difference").count() >= 1
        report = page.context.request.get(f"{base}/services/revad/files/reports/{ASSIGNMENT}/report.html")
        assert report.status == 200 and "one-sided" in report.text(), "the class report, for instructors"
        assert "<h2>Similar answers</h2>" in report.text() and "1 late submission(s)" in report.text(), "issue 50"
        assert ada.get(f"{base}/services/revad/files/reports/{ASSIGNMENT}/report.html").status == 403
        browser.close()
