"""A grading run killed part-way and started again finishes the rest, grades nothing twice, and leaves
the gradebook as an uninterrupted run would."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostile  # noqa: E402

from autograder.coursedir import REPO  # noqa: E402
from autograder.grading import grade_assignment, record  # noqa: E402
from autograder.grading.sandbox import Limits  # noqa: E402

KINDS = ["h_correct", "h_partly_wrong", "h_blank", "x_change_points"]
N = 8


def _course(root: Path) -> None:
    hostile.make_course(root, f"sqlite:///{root / 'gradebook.db'}")
    hostile.write_submissions(root, {"COURSE": root, "REPO": REPO, "PORT": 1}, only=KINDS)
    for i in range(N):  # N learners, named so that the order of grading is the order of the names
        kind = KINDS[i % len(KINDS)]
        src = root / "submitted" / kind / hostile.ASSIGNMENT
        shutil.copytree(src, root / "submitted" / f"s{i:02d}" / hostile.ASSIGNMENT)
    for kind in KINDS:
        shutil.rmtree(root / "submitted" / kind)


def _grade(root: Path, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            hostile.ASSIGNMENT,
            "--course-dir",
            str(root),
            "--workers",
            "2",
            "--quiet",
            "--cell-timeout",
            "20",
            "--timeout",
            "60",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


def _completed(root: Path) -> int:
    try:
        with sqlite3.connect(root / "gradebook.db", timeout=1) as conn:
            return conn.execute("select count(*) from revad_graded").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_killed_run_resumes_without_grading_twice(tmp_path, grading_pool):
    interrupted, reference = tmp_path / "interrupted", tmp_path / "reference"
    _course(interrupted)
    _course(reference)
    db = lambda root: f"sqlite:///{root / 'gradebook.db'}"  # noqa: E731
    # one course secret for both, so that both draw the same hidden cases (their messages name them)
    with record.engine(db(reference)).begin() as conn:
        conn.execute(record.SECRET.insert().values(name="hidden_cases", value=record.course_secret(db(interrupted))))

    run = _grade(interrupted, start_new_session=True)
    deadline = time.monotonic() + 240
    while _completed(interrupted) < 2 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.1)
    os.killpg(run.pid, signal.SIGKILL)  # the whole run: command and workers, mid-submission
    run.wait()
    done_before = _completed(interrupted)
    assert 2 <= done_before < N, "the run should have been killed part-way"

    out, _ = _grade(interrupted).communicate(timeout=600)
    assert f"{done_before} submission(s) already graded" in out, out
    assert re.search(rf"Grading {N - done_before} submission\(s\)", out), out
    assert _completed(interrupted) == N

    # the uninterrupted run: the command's own grading, on this test process's warm pool (no slot started for it)
    said: list[str] = []
    limits = Limits(cell_timeout_s=20, timeout_s=60)
    grade_assignment(
        reference, hostile.ASSIGNMENT, workers=2, limits=limits, progress=False, log=said.append, pool=grading_pool
    )
    assert f"Grading {N} submission(s) of {hostile.ASSIGNMENT} with 2 worker(s) ..." in said, said
    assert record.dump(db(interrupted), hostile.ASSIGNMENT) == record.dump(db(reference), hostile.ASSIGNMENT)
    for student in (f"s{i:02d}" for i in range(N)):
        assert list((interrupted / "feedback" / student / hostile.ASSIGNMENT).glob("*.html"))
