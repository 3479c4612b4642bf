"""`python -m autograder grade NN-slug --broker URL`: queue every collected submission, wait, show the table.

The instructor's machine needs no shared file system with the workers: each task carries its submission's
files, the workers write into the gradebook database, and this process brings the autograded notebooks and
feedback pages back from the database into nbgrader's folders (autograded/, feedback/) for formgrader and
release_feedback.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

from ..grading import sandbox
from ..grading.command import submitted_students
from ..grading.pool import Progress
from ..grading.report import SubmissionScore, read_scores
from ..grading.spec import assignment_spec
from . import ledger, service
from .payload import Payload, PayloadRefused, from_submission, submitted_at


def queue_assignment(
    course_root: Path,
    assignment: str,
    students: list[str] | None,
    *,
    broker: str,
    db_url: str,
    source: str,
    release: str,
    limits: sandbox.Limits,
    force: bool = False,
    log=print,
) -> dict[str, ledger.Key]:
    """Queue the submissions (all collected ones by default); student -> the key to wait on."""
    students = students or submitted_students(course_root, assignment)
    time_limits = _prepare(course_root, assignment, db_url, source, release, limits)
    app = service.use_broker(broker)
    keys, known = {}, ledger.states(db_url, assignment)
    with app.connection_for_write(broker) as connection:  # this broker's, not one cached from another
        for student in students:
            try:
                payload = from_submission(course_root / "submitted", student, assignment)
            except PayloadRefused as refused:
                payload = Payload(assignment, student, submitted_at(None), [])
                keys[student] = _refuse_here(payload, course_root, db_url, source, release, str(refused))
                continue
            keys[student] = ledger.Key(assignment, student, payload.sha256)
            if force or (student, payload.sha256) not in known:  # else graded, or queued by an earlier run
                _send(app, connection, payload, db_url, limits, time_limits)
    skipped = 0 if force else sum(1 for s in students if (s, keys[s].sha256) in known)
    if skipped:
        log(f"{skipped} submission(s) already queued or graded and unchanged: not queued again (--force queues them).")
    log(f"Queued {len(students) - skipped} submission(s) of {assignment} on {_safe(broker)}.")
    return keys


def queue_payload(
    broker: str,
    course_root: Path,
    payload: Payload,
    db_url: str,
    source: str,
    release: str,
    limits: sandbox.Limits,
    feedback: str = "full",
) -> ledger.Key:
    """Queue one submission (grade on submit); `feedback="visible"` has the worker also write the pages of the
    shown tests alone."""
    time_limits = _prepare(course_root, payload.assignment, db_url, source, release, limits)
    app = service.use_broker(broker)
    with app.connection_for_write(broker) as connection:
        return _send(app, connection, payload, db_url, limits, time_limits, feedback)


def _prepare(
    course_root: Path, assignment: str, db_url: str, source: str, release: str, limits: sandbox.Limits
) -> tuple[int, int]:
    """The assignment in the gradebook before any worker needs it; the task's (soft, hard) time limits."""
    spec = assignment_spec(course_root, assignment, db_url, source, release)
    soft, hard = service.time_limits(limits, len(spec.notebooks))
    if hard >= service.VISIBILITY_TIMEOUT_S:
        raise SystemExit(
            f"A submission of {assignment} may take {hard} s, longer than the broker's visibility "
            f"timeout ({service.VISIBILITY_TIMEOUT_S} s): a task still running would be handed to a "
            "second worker. Raise REVAD_VISIBILITY_TIMEOUT (on workers and here) or lower --timeout."
        )
    return soft, hard


def _send(
    app,
    connection,
    payload: Payload,
    db_url: str,
    limits: sandbox.Limits,
    time_limits: tuple[int, int],
    feedback: str = "full",
) -> ledger.Key:
    key = ledger.Key(payload.assignment, payload.student, payload.sha256)
    ledger.queued(db_url, key, payload.submitted_at)
    soft, hard = time_limits
    app.send_task(
        "revad.grade_submission",
        args=[{**payload.to_dict(), "sha256": key.sha256}, asdict(limits), feedback],
        queue=service.QUEUE,
        soft_time_limit=soft,
        time_limit=hard,
        connection=connection,
    )
    return key


def _refuse_here(payload: Payload, course_root: Path, db_url: str, source: str, release: str, reason: str):
    settings = service.WorkerSettings(course_root, db_url, source, release)
    key = ledger.Key(payload.assignment, payload.student, "refused-" + payload.student)
    service.fail(payload, settings, reason, key)
    return key


def _safe(url: str) -> str:
    """The broker URL without its password."""
    from kombu.utils.url import maybe_sanitize_url

    return maybe_sanitize_url(url)


def wait(
    course_root: Path,
    assignment: str,
    keys: dict[str, ledger.Key],
    db_url: str,
    *,
    progress: bool = True,
    poll_s: float = 1.0,
    timeout_s: float | None = None,
) -> list[SubmissionScore]:
    """Until every queued submission is graded, superseded or failed; then its files into nbgrader's folders."""
    bar = Progress(len(keys), progress)
    pending, start = dict(keys), time.monotonic()
    while pending:
        for student, key in list(pending.items()):
            row = ledger.state(db_url, key)
            if row and row["state"] in ledger.DONE:
                del pending[student]
                bar.update(student, row["state"] + (f": {row['reason']}" if row["reason"] else ""))
        if pending:
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                raise TimeoutError(f"still waiting for {len(pending)} submission(s): {', '.join(sorted(pending))}")
            time.sleep(poll_s)
    for student in keys:
        install_outputs(course_root, assignment, student, db_url)
    return read_scores(db_url, assignment, list(keys))


def install_outputs(course_root: Path, assignment: str, student: str, db_url: str) -> None:
    """autograded/<student>/<assignment>/ and feedback/<student>/<assignment>/ as the worker wrote them."""
    import shutil

    files = ledger.outputs(db_url, assignment, student)
    for kind in ("autograded", "feedback"):
        target = course_root / kind / student / assignment
        if target.exists():
            shutil.rmtree(target)
        for (k, name), data in files.items():
            if k == kind and ".." not in Path(name).parts and not Path(name).is_absolute():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                (target / name).write_bytes(data)
