"""Grade on submit: learners submit with stock nbgrader; the course's on-submit service queues each submission
as it arrives, a Celery worker grades it, and the feedback comes back through the exchange: each learner's
stock `nbgrader fetch_feedback` brings their own page, with no instructor step in between."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import nbformat
import pytest

from autograder.coursedir import REPO, SOLUTIONS
from autograder.scale import ledger
from autograder.scale.on_submit import from_course, inbound_record
from autograder.submissions import fill_answers, solution_sources
from tests.celery_service import Redis, Worker
from tests.test_lifecycle_exchange import ASSIGNMENT, BEN_WRONG, INSTRUCTOR_CONFIG, LEARNER_CONFIG, NOTEBOOK, nbgrader

pytestmark = [pytest.mark.celery, pytest.mark.slow]

if shutil.which("redis-server") is None:
    pytest.skip("redis-server is not installed (make system-deps)", allow_module_level=True)


def test_inbound_folder_names_are_read_as_nbgrader_collect_reads_them():
    assert inbound_record(type("P", (), {"name": "ada+01-x+2026-11-24 10:00:00.000000 UTC+Xa9_k2Lm0pQr"})()) == (
        "ada",
        "01-x",
        "2026-11-24 10:00:00.000000 UTC",
    )
    assert inbound_record(type("P", (), {"name": "a+b+01-x+2026-11-24 10:00:00.000000 UTC"})()) == (
        "a+b",
        "01-x",
        "2026-11-24 10:00:00.000000 UTC",
    )
    assert inbound_record(type("P", (), {"name": "stray"})()) is None


def _submit_and_fetch(tmp_path, feedback: str, learners: dict[str, dict[str, str]]):
    """Release, each learner fetches, answers and submits; the on-submit service and one worker run until each
    learner's stock fetch_feedback brings a page. (pages by learner, gradebook url, instructor folder)"""
    exchange, instructor = tmp_path / "exchange", tmp_path / "instructor"
    exchange.mkdir(mode=0o777)
    shutil.copytree(SOLUTIONS / ASSIGNMENT, instructor / "source" / ASSIGNMENT)
    redis = Redis(tmp_path / "redis").start()
    db_url = f"sqlite:///{instructor / 'gradebook.db'}"
    (instructor / "nbgrader_config.py").write_text(
        INSTRUCTOR_CONFIG.format(exchange=str(exchange))
        + f"c.GradeOnSubmit.broker_url = {redis.url!r}\nc.GradeOnSubmit.feedback = {feedback!r}\n"
        + "c.GradeOnSubmit.poll_seconds = 0.5\n"
    )
    nbgrader(instructor, "generate_assignment", ASSIGNMENT, "--force")
    nbgrader(instructor, "release_assignment", ASSIGNMENT)
    worker = Worker(redis.url, db_url, instructor, tmp_path / "worker.log", "w0")
    watcher = subprocess.Popen(
        [sys.executable, "-m", "autograder", "on-submit", "--course-dir", str(instructor)],
        cwd=REPO,
        stdout=open(tmp_path / "on-submit.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        homes = {}
        for learner, mine in learners.items():
            home = homes[learner] = tmp_path / "home" / learner
            home.mkdir(parents=True)
            (home / "nbgrader_config.py").write_text(LEARNER_CONFIG.format(exchange=str(exchange), learner=learner))
            nbgrader(home, "fetch_assignment", ASSIGNMENT, home=home, user=learner)
            path = home / ASSIGNMENT / NOTEBOOK
            nbformat.write(fill_answers(path, mine), path)
            nbgrader(home, "submit", ASSIGNMENT, home=home, user=learner)
        deadline = time.monotonic() + 600
        pages = {}
        for learner, home in homes.items():
            while True:
                out = nbgrader(home, "fetch_feedback", ASSIGNMENT, home=home, user=learner, ok=None)
                found = list((home / ASSIGNMENT / "feedback").glob("*/*.html"))
                if found:
                    pages[learner] = found[0].read_text()
                    break
                assert "no feedback" in out.lower(), out[-2000:]
                log = (tmp_path / "on-submit.log").read_text()[-3000:]
                assert time.monotonic() < deadline and watcher.poll() is None, log
                time.sleep(2)
    finally:
        watcher.terminate()
        worker.stop()
        redis.stop()
    return pages, db_url, instructor


def test_submit_is_graded_and_its_feedback_fetched_with_no_instructor_step(tmp_path):
    answers = solution_sources(SOLUTIONS / ASSIGNMENT / NOTEBOOK)
    pages, db_url, instructor = _submit_and_fetch(tmp_path, "full", {"ada": answers, "ben": {**answers, **BEN_WRONG}})
    assert "15" in pages["ada"] and "one-sided difference" not in pages["ada"]
    assert "one-sided difference" in pages["ben"] and "13" in pages["ben"]
    rows = ledger.states(db_url, ASSIGNMENT)
    assert sorted((s, r["written"], r["state"]) for (s, _), r in rows.items()) == [
        ("ada", 1, "graded"),
        ("ben", 1, "graded"),
    ]
    again = from_course(instructor)
    assert again.queue_new() == 0 and again.deliver() == 0, "each submission queued once, its feedback handed once"


def test_visible_feedback_hands_back_the_shown_tests_alone_and_the_gradebook_keeps_the_whole_grade(tmp_path):
    """feedback = "visible": an answer right only on the case the notebook shows fetches a page with full marks on
    the shown tests and the note that the hidden tests' result comes later; the gradebook holds its real score."""
    from nbgrader.api import Gradebook

    from autograder.grading.write import SHOWN_ONLY_NOTE
    from tests.test_feedback_visible import _answers, _text

    pages, db_url, _ = _submit_and_fetch(tmp_path, "visible", {"cy": _answers()["cy"]})
    page = _text(pages["cy"])
    assert "Score: 15.0 / 15.0" in page and _text(SHOWN_ONLY_NOTE).replace("*", "") in page.replace("*", "")
    with Gradebook(db_url) as gb:
        assert gb.find_submission(ASSIGNMENT, "cy").score == 8
