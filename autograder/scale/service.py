"""The Celery side: the app, its settings, and the task a worker runs for one submission.

Settings that make a dying worker lose nothing: a task is acknowledged only when it has finished
(``task_acks_late``), put back on the queue when the worker running it dies
(``task_reject_on_worker_lost``), and a worker takes one task at a time (prefetch 1). A task whose worker
died is delivered again; after :data:`MAX_ATTEMPTS` deliveries it is written as a failed submission with
its reason instead (a submission that kills its worker every time must not loop for ever). Redis hands a
task that was taken but not acknowledged to another worker after the visibility timeout, which must
exceed the longest a task may take (checked when a task is queued).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded

from ..grading.sandbox import Limits
from . import ledger
from .payload import Payload, PayloadRefused

QUEUE = "revad-grading"
MAX_ATTEMPTS = 3
VISIBILITY_TIMEOUT_S = int(os.environ.get("REVAD_VISIBILITY_TIMEOUT", 7200))
# What a submission may take beyond its notebooks' own deadlines: intake, the feedback page, the gradebook.
TASK_SLACK_S = int(os.environ.get("REVAD_TASK_SLACK", 120))
log = logging.getLogger("revad.worker")
# How often each worker looks for tasks whose worker died and whose visibility timeout has passed.
RESTORE_SWEEP_S = 5


def broker_options(visibility_s: int) -> dict[str, int]:
    """Redis's transport settings. Each worker sweeps for tasks whose worker died every RESTORE_SWEEP_S seconds
    (kombu's default sweeps every 10th tick of 10 s: a dead worker's task came back up to 100 s after its visibility
    timeout). A sweep is one indexed Redis query."""
    return {
        "visibility_timeout": visibility_s,
        "unacked_restore_interval": RESTORE_SWEEP_S,
        "unacked_restore_throttle": 1,
    }


app = Celery("revad")
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_serializer="json",
    accept_content=["json"],
    result_serializer="json",
    task_ignore_result=True,  # results go to the gradebook, not to a result backend
    task_default_queue=QUEUE,
    broker_connection_retry_on_startup=True,
    broker_transport_options=broker_options(VISIBILITY_TIMEOUT_S),
    worker_cancel_long_running_tasks_on_connection_loss=False,
)


def use_broker(url: str) -> Celery:
    app.conf.broker_url = url
    return app


def time_limits(limits: Limits, notebooks: int) -> tuple[int, int]:
    """(soft, hard) seconds for one submission: each notebook's own deadline, plus TASK_SLACK_S for the rest."""
    soft = limits.timeout_s * max(1, notebooks) + TASK_SLACK_S
    return soft, soft + 30


@dataclass(frozen=True)
class WorkerSettings:
    course_dir: Path
    db_url: str
    source: str
    release: str

    @classmethod
    def from_env(cls) -> WorkerSettings:
        return cls(
            Path(os.environ["REVAD_COURSE_DIR"]),
            os.environ["REVAD_DB_URL"],
            os.environ.get("REVAD_SOURCE", "source"),
            os.environ.get("REVAD_RELEASE", "release"),
        )


@app.task(name="revad.grade_submission", bind=True)
def grade_submission(self, payload: dict, limits: dict, feedback: str = "full") -> str:
    settings = WorkerSettings.from_env()
    return grade(payload, settings, Limits(**limits), feedback)


FEEDBACK_KINDS = ("full", "visible")  # "visible": also the page of the shown tests alone (grade on submit)


def grade(data: dict, settings: WorkerSettings, limits: Limits, feedback: str = "full") -> str:
    """Grade one submission into the gradebook; what happened, in a word or two (for the worker's log)."""
    try:
        payload = Payload.from_dict(data)
        if data.get("sha256") not in (None, payload.sha256):
            raise PayloadRefused(
                "the submission's files do not match the sha256 it was queued with (damaged on the way)"
            )
    except (PayloadRefused, KeyError, TypeError, ValueError) as refused:
        return _refused(data, settings, f"The grading service could not read this submission: {refused}")
    key = ledger.Key(payload.assignment, payload.student, payload.sha256)
    attempt = ledger.start_attempt(settings.db_url, key, payload.submitted_at)
    if (ledger.state(settings.db_url, key) or {}).get("written"):
        return "already graded"  # delivered again after it was written: nothing to do
    if attempt > MAX_ATTEMPTS:
        return fail(
            payload,
            settings,
            f"The grading worker stopped {attempt - 1} times while it graded this "
            "submission (killed, or out of memory), so it was not tried again. It scores 0 for now; your "
            "instructor has been told and will look at it.",
        )
    try:
        return _grade(payload, key, settings, limits, shown_feedback=feedback == "visible")
    except SoftTimeLimitExceeded:
        return fail(
            payload,
            settings,
            "The grader took longer than the service allows for one submission, so it "
            "was stopped. It scores 0 for now; your instructor has been told and will look at it.",
        )


def _scratch_course(scratch: Path, settings: WorkerSettings, payload: Payload) -> Path:
    """A course directory of its own for this task: the worker's source and release, the submission's files."""
    root = scratch / "course"
    for name in (settings.source, settings.release):
        (root / name).mkdir(parents=True)
        shutil.copytree(
            settings.course_dir / name / payload.assignment,
            root / name / payload.assignment,
            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
        )
    payload.write_into(root / "submitted" / payload.student / payload.assignment)
    return root


def _outputs(root: Path, payload: Payload) -> dict[tuple[str, str], bytes]:
    out = {}
    for kind in ("autograded", "feedback", SHOWN_FEEDBACK):
        folder = root / kind / payload.student / payload.assignment
        for path in sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []:
            out[(kind, path.relative_to(folder).as_posix())] = path.read_bytes()
    return out


_POOL: list = []


def warm_pool() -> list:
    """This process's grading process, started once and kept between tasks (it has imported torch already)."""
    from ..grading.pool import Worker

    if not _POOL:
        # in the Celery worker's own temporary folder (autograder/scale/worker.py), removed as that worker ends
        _POOL.append(Worker(0, Path(tempfile.mkdtemp(prefix="revad-grading-"))))
    return _POOL


SHOWN_FEEDBACK = "feedback_visible"  # the outputs' kind of the shown-tests-only pages


def _write_shown_feedback(root: Path, payload: Payload, result) -> None:
    import nbformat

    from ..grading.write import feedback_page

    folder = root / SHOWN_FEEDBACK / payload.student / payload.assignment
    folder.mkdir(parents=True, exist_ok=True)
    autograded = root / "autograded" / payload.student / payload.assignment
    for name, nb_result in result.notebooks.items():
        path = autograded / f"{name}.ipynb"
        graded = nbformat.read(path, as_version=4) if path.is_file() else None
        page = feedback_page(name, nb_result, graded, result.messages, shown_only=True)
        (folder / f"{name}.html").write_text(page)


def _grade(
    payload: Payload, key: ledger.Key, settings: WorkerSettings, limits: Limits, shown_feedback: bool = False
) -> str:
    from ..grading.command import grade_assignment
    from ..grading.spec import assignment_spec

    with tempfile.TemporaryDirectory(prefix="revad-task-") as scratch:
        root = _scratch_course(Path(scratch), settings, payload)
        with ledger.learner_lock(settings.db_url, payload.assignment, "(the assignment's cells)"):
            assignment_spec(root, payload.assignment, settings.db_url, settings.source, settings.release)
        outcome = []

        def write_once(db_url, result, content_hash, timestamp):
            if shown_feedback:
                _write_shown_feedback(root, payload, result)
            outcome.append(
                ledger.record_once(settings.db_url, key, payload.submitted_at, result, _outputs(root, payload))
            )
            return 0.0, 0.0

        grade_assignment(
            root,
            payload.assignment,
            [payload.student],
            db_url=settings.db_url,
            source=settings.source,
            release=settings.release,
            workers=1,
            force=True,
            limits=limits,
            progress=False,
            log=log.info,
            recorder=write_once,
            pool=warm_pool(),
            left_out={payload.student: payload.left_out},
            config_dir=settings.course_dir,  # its nbgrader_config.py: the late penalty
            timestamps={payload.student: payload.submitted_at},
        )
    return outcome[0] if outcome else "not graded"


def fail(payload: Payload, settings: WorkerSettings, reason: str, key: ledger.Key | None = None) -> str:
    """A zero with its reason, written like a graded submission (the newest still wins)."""
    from ..grading.command import zero_result
    from ..grading.jobs import Flag
    from ..grading.spec import assignment_spec

    ledger.engine(settings.db_url)  # the gradebook's tables made first, once, under a lock
    with tempfile.TemporaryDirectory(prefix="revad-task-") as scratch:
        root = Path(scratch) / "course"
        for name in (settings.source, settings.release):
            (root / name).mkdir(parents=True)
            shutil.copytree(settings.course_dir / name / payload.assignment, root / name / payload.assignment)
        spec = assignment_spec(root, payload.assignment, settings.db_url, settings.source, settings.release)
    result = zero_result(spec, payload.student, reason, Flag("grader_error", reason))
    key = key or ledger.Key(payload.assignment, payload.student, payload.sha256)
    ledger.queued(settings.db_url, key, payload.submitted_at)
    return ledger.record_once(
        settings.db_url, key, payload.submitted_at, result, {}, state_if_written="failed", reason=reason
    )


def _refused(data: dict, settings: WorkerSettings, reason: str) -> str:
    """A payload that cannot be read: written as failed when it still says whose it is, else only logged."""
    try:
        bare = Payload(str(data["assignment"]), str(data["student"]), str(data["submitted_at"]), [])
        bare.check()
    except (PayloadRefused, KeyError, TypeError, ValueError):
        log.error("unreadable task payload dropped: %s", reason)
        return "dropped"
    key = ledger.Key(bare.assignment, bare.student, str(data.get("sha256") or bare.sha256))
    return fail(bare, settings, reason, key)
