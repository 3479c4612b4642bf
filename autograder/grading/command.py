"""The course's grading command: grade submissions into nbgrader's gradebook, in parallel, resumably.

    python -m autograder grade NN-slug [--student S ...] [--workers N] [--require-sandbox] ...

For each submission a worker (autograder.grading.worker) runs the learner's notebook in a sandbox
(autograder.grading.sandbox) and decides the scores itself from the data the learner's code produced;
this process records the results in nbgrader's gradebook (autograder.grading.record), moves the
autograded notebooks and feedback HTML into nbgrader's folders, and shows progress. The gradebook,
``autograded/``, ``feedback/`` and the CSV export are nbgrader's own: whatever an instructor already
knows about nbgrader still holds.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..coursedir import put_interpreter_scripts_on_path
from . import intake, late, reach, record, sandbox
from .jobs import CellGrade, Flag, Job, NotebookResult, SandboxSettings, SubmissionResult
from .pool import Progress, Worker, run_jobs
from .report import SubmissionScore, read_scores
from .safe_text import terminal_text
from .spec import AssignmentSpec, assignment_spec

RUNNER_VERSION = "2"  # bump when grading changes, so that every submission is graded again


def submitted_students(course_root: Path, assignment: str) -> list[str]:
    submitted = course_root / "submitted"
    if not submitted.is_dir():
        return []
    return sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())


def submission_hash(folder: Path, spec_text: str) -> str:
    """What decides whether a submission is graded again: its names, bytes and link texts (no link followed)."""
    return intake.tree_hash(folder.parent.parent, folder.parent.name, folder.name, RUNNER_VERSION + spec_text)


def zero_result(spec: AssignmentSpec, student: str, message: str, flag: Flag | None = None) -> SubmissionResult:
    notebooks = {}
    for name, nb in spec.notebooks.items():
        notebooks[name] = NotebookResult(
            name,
            status="error",
            flags=[flag] if flag else [],
            grades={c.grade_id: CellGrade(0.0, c.points) for c in nb.cells if c.grade},
            comments={c.grade_id: None for c in nb.cells if c.solution},
        )
    return SubmissionResult(student, spec.assignment, notebooks, messages=[message])


def _read_timestamp(folder: Path) -> str | None:
    return intake.read_timestamp(folder.parent.parent, folder.parent.name, folder.name)


def _exchange_receipts(folder: Path, kind: str) -> dict[str, str]:
    """timestamp.txt and submission_secret.txt, as nbgrader keeps them beside a submission that came through
    its exchange. The feedback folder always gets both (release_feedback stops at the first folder without
    them): a submission handed in without the exchange gets the grading time and a secret nobody holds, so its
    feedback is released to no one and stays in feedback/ for the instructor to hand over."""
    receipts = {}
    timestamp = _read_timestamp(folder)
    if timestamp or kind == "feedback":
        receipts["timestamp.txt"] = timestamp or time.strftime("%Y-%m-%d %H:%M:%S.000000 UTC", time.gmtime())
    raw = intake.read_small_file(
        folder.parent.parent, folder.parent.name, folder.name, "submission_secret.txt", limit=1024
    )
    secret = raw.decode("ascii", errors="replace").strip() if raw else ""
    if secret and all(c in "0123456789abcdef" for c in secret):  # nbgrader writes secrets.token_hex(64)
        receipts["submission_secret.txt"] = secret
    elif kind == "feedback":
        receipts["submission_secret.txt"] = secrets.token_hex(64)
    return receipts


def _install_outputs(course_root: Path, assignment: str, student: str, out: Path, folder: Path) -> None:
    """autograded/<student>/<assignment>/ and feedback/<student>/<assignment>/, as nbgrader lays them out."""
    for kind in ("autograded", "feedback"):
        target = course_root / kind / student / assignment
        staged = out / kind
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        if staged.is_dir():
            for item in staged.iterdir():
                shutil.copy2(item, target / item.name)
        # written, not copied (the submitted ones may be links): nbgrader's release_feedback reads both
        # beside the feedback HTML, and names the released file after the submission's secret
        for name, text in _exchange_receipts(folder, kind).items():
            (target / name).write_text(text)


def refuse_unreachable_python(info: sandbox.SandboxInfo) -> None:
    """Without bubblewrap nothing is mounted for the kernel's uid: if it cannot reach Python (a virtual
    environment inside a private folder, like a home directory), every kernel would fail to start and every
    submission score 0. Say so before grading anything."""
    if info.active or not info.drop_uid:
        return
    blocked = reach.blocked(sandbox.kernel_paths(), sandbox.BASE_UID, sandbox.BASE_UID)
    if blocked:
        raise SystemExit(
            "Refusing to grade: without bubblewrap, learners' code runs as an unprivileged user "
            f"(uid {sandbox.BASE_UID}+) that cannot reach the Python it needs: "
            + "; ".join(f"{path}: {why}" for path, why in blocked.items())
            + ". Every submission would score 0. Install bubblewrap (`make sandbox`), or keep the "
            "repository and its virtual environment where others may pass (chmod o+x on the folder named)."
        )


@dataclass
class GradingRun:
    """What every job of one grading run shares: where things are, the spec, the sandbox, the secrets."""

    course_root: Path
    assignment: str
    db_url: str
    spec: AssignmentSpec
    spec_path: Path
    state_dir: Path
    info: sandbox.SandboxInfo
    limits: sandbox.Limits
    threads: int
    hashes: dict[str, str]
    secret: str
    left_out: dict[str, dict]
    recorder: Callable
    scratch_base: Path
    seq: int  # the last sandbox uid sequence number handed out
    config_dir: Path = Path(".")  # the folder of the course's nbgrader_config.py (its late penalty plugin)
    timestamps: dict[str, str] = field(default_factory=dict)  # student -> when submitted, where not timestamp.txt

    @property
    def per_submission_s(self) -> float:
        return self.limits.timeout_s * max(1, len(self.spec.notebooks)) + 300


def grade_assignment(
    course_root: Path,
    assignment: str,
    students: list[str] | None = None,
    *,
    db_url: str | None = None,
    source: str = "source",
    release: str = "release",
    workers: int | None = None,
    require_sandbox: bool = False,
    force: bool = False,
    limits: sandbox.Limits | None = None,
    progress: bool = True,
    log: Callable[..., Any] = print,
    recorder: Callable[..., tuple[float, float]] = record.record,
    pool: list[Worker] | None = None,
    left_out: dict[str, dict] | None = None,
    config_dir: Path | None = None,
    timestamps: dict[str, str] | None = None,
) -> list[SubmissionScore]:
    """Grade `students` (default: all who submitted), write feedback; return their scores.
    `recorder(db_url, result, content_hash, timestamp) -> (score, max)` writes a graded submission (a Celery
    worker passes one that writes each submission exactly once: autograder.scale.ledger). `pool`: grading
    processes kept warm by the caller across calls (a Celery worker's), left running at the end. `left_out`:
    student -> what an earlier reading of their submission left out (links, special files: a Celery payload's).
    `config_dir`: where the course's nbgrader_config.py is (default the course root): its late penalty applies.
    `timestamps`: student -> when they submitted, in place of timestamp.txt (a Celery payload's)."""
    put_interpreter_scripts_on_path()  # nbgrader's gradebook runs `alembic`: found without an activated venv
    course_root = Path(course_root).resolve()
    db_url = db_url or f"sqlite:///{course_root / 'gradebook.db'}"
    workers = max(1, workers or os.cpu_count() or 1)
    info = _sandbox_for(course_root, require_sandbox, log)
    students = _known_students(course_root, assignment, students, log)
    own_pool = pool is None
    if pool is None:  # started now: they import torch and the checks while the run is prepared
        state_dir = _state_dir(course_root, assignment)
        pool = [Worker(slot, state_dir).started() for slot in range(min(workers, max(len(students), 1)))]
    run = None
    try:
        run = _prepare(course_root, assignment, db_url, source, release, info, limits, workers, students)
        run.left_out, run.recorder = left_out or {}, recorder
        run.config_dir, run.timestamps = Path(config_dir or course_root), timestamps or {}
        todo = _todo(run, students, force, log)
        size = min(workers, max(len(todo), 1))
        log(f"Grading {len(todo)} submission(s) of {assignment} with {size} worker(s) ...")
        pool = _without_spares(pool, size) if own_pool else pool
        _grade_all(run, pool, todo, progress)
    finally:
        for worker in pool:
            if own_pool or worker.job is not None:  # one still grading is stopped, kept ones are left warm
                worker.stop()
                worker.job = None
            sandbox.kill_uid(worker.uid)
        if run is not None:
            shutil.rmtree(run.scratch_base, ignore_errors=True)
    return read_scores(db_url, assignment, students)


def _grade_all(run: GradingRun, pool: list[Worker], todo: list[str], progress: bool) -> None:
    bar = Progress(len(todo), progress)
    run_jobs(
        pool,
        todo,
        start=lambda worker, student: _start(run, worker, student),
        finish=lambda worker, state: bar.update(*_end(run, worker, state)),
    )


def _without_spares(pool: list[Worker], size: int) -> list[Worker]:
    """The first `size` workers; those after them, started before the run knew how many it needed, stopped."""
    for spare in pool[size:]:
        spare.stop()
    return pool[:size]


def _todo(run: GradingRun, students: list[str], force: bool, log: Callable) -> list[str]:
    """The students whose submission is new or changed since it was last graded (all of them with `force`)."""
    done = record.completed(run.db_url, run.assignment)
    todo = [s for s in students if force or done.get(s) != run.hashes[s]]
    if len(students) > len(todo):
        log(
            f"{len(students) - len(todo)} submission(s) already graded and unchanged: skipped (use --force to grade "
            "them again)."
        )
    return todo


def _sandbox_for(course_root: Path, require_sandbox: bool, log: Callable) -> sandbox.SandboxInfo:
    """The sandbox this machine gives, said; refused when a protection asked for is off, or when learners' code
    could not even start Python."""
    info = sandbox.detect(course_root)
    log(info.describe())
    if require_sandbox and info.protections_off():
        raise SystemExit(
            "Refusing to grade: --require-sandbox was given and these protections are off: "
            + "; ".join(info.protections_off())
        )
    refuse_unreachable_python(info)
    return info


def _known_students(course_root: Path, assignment: str, asked: list[str] | None, log: Callable) -> list[str]:
    """The students asked for (default: all who submitted), without those who did not submit (said so)."""
    submitted = submitted_students(course_root, assignment)
    students = list(dict.fromkeys(asked)) if asked else submitted
    unknown = [s for s in students if s not in submitted]
    if unknown:
        log(
            f"No submission of {assignment} from: {terminal_text(', '.join(unknown))} (looked in "
            f"{course_root / 'submitted'})."
        )
    return [s for s in students if s in submitted]


def _state_dir(course_root: Path, assignment: str) -> Path:
    """Where a run keeps its spec and its workers' logs."""
    state_dir = course_root / ".grading" / "work" / assignment
    state_dir.mkdir(parents=True, exist_ok=True)
    return state_dir


def _prepare(course_root, assignment, db_url, source, release, info, limits, workers, students) -> GradingRun:
    """The run's spec (written where the workers read it), the submissions' hashes, a scratch folder."""
    spec = assignment_spec(course_root, assignment, db_url, source, release)
    spec_text = spec.to_json()
    state_dir = _state_dir(course_root, assignment)
    spec_path = state_dir / "spec.json"
    spec_path.write_text(spec_text)
    scratch_base = Path(tempfile.mkdtemp(prefix="rg-", dir="/tmp" if Path("/tmp").is_dir() else None))
    os.chmod(scratch_base, 0o711)
    return GradingRun(
        course_root=course_root,
        assignment=assignment,
        db_url=db_url,
        spec=spec,
        spec_path=spec_path,
        state_dir=state_dir,
        info=info,
        limits=limits or sandbox.Limits(),
        threads=1 if workers > 1 else 2,
        hashes={s: submission_hash(course_root / "submitted" / s / assignment, spec_text) for s in students},
        secret=record.course_secret(db_url),
        left_out={},
        recorder=record.record,
        scratch_base=scratch_base,
        # each job gets a uid of its own; a random start keeps concurrent grading runs on one machine apart
        seq=int.from_bytes(os.urandom(2), "little") % sandbox.UID_RANGE,
    )


def _start(run: GradingRun, worker: Worker, student: str) -> None:
    """Write the student's job file and hand it to the worker."""
    job_dir = run.state_dir / student
    if job_dir.exists():
        shutil.rmtree(job_dir)
    (job_dir / "out").mkdir(parents=True)
    run.seq += 1
    job = Job(
        student=student,
        spec=str(run.spec_path),
        slot=worker.slot,
        kernel_uid=sandbox.slot_uid(run.info, run.seq),
        submission=str(run.course_root / "submitted" / student / run.assignment),
        out=str(job_dir / "out"),
        scratch=str(run.scratch_base / str(worker.slot)),
        limits=run.limits,
        hide=[str(run.course_root)],
        sandbox=SandboxSettings(run.info.tool, run.info.as_root, run.info.drop_uid),
        sandbox_text=run.info.describe(),
        threads=run.threads,
        draw_key=hmac.new(
            run.secret.encode(), f"{run.assignment}/{student}/{run.hashes[student]}".encode(), hashlib.sha256
        ).hexdigest(),
        left_out=run.left_out.get(student, {}),
    )
    submitted = run.timestamps.get(student) or _read_timestamp(run.course_root / "submitted" / student / run.assignment)
    deadline = late.deadline(run.db_url, run.assignment, student, submitted)
    job.seconds_late, job.due, job.late_config = deadline.seconds_late, deadline.due, str(run.config_dir)
    (job_dir / "job.json").write_text(job.to_json())
    worker.submit(student, job_dir, run.per_submission_s)
    worker.uid = job.kernel_uid


def _end(run: GradingRun, worker: Worker, state: str) -> tuple[str, str]:
    """The worker's job ended (done, died, overdue): stop what it left running, record it. (student, summary)"""
    assert worker.job is not None
    student, job_dir = worker.job
    sandbox.kill_uid(worker.uid)
    summary = _finish(
        run.course_root,
        run.assignment,
        student,
        job_dir,
        run.spec,
        run.db_url,
        run.hashes[student],
        state == "overdue",
        run.recorder,
    )
    return student, summary


def _finish(
    course_root,
    assignment,
    student,
    job_dir: Path,
    spec: AssignmentSpec,
    db_url,
    content_hash,
    overdue,
    recorder=record.record,
) -> str:
    out = job_dir / "out"
    folder = course_root / "submitted" / student / assignment
    result_path = out / "result.json"
    result = None
    if result_path.is_file():
        try:
            result = SubmissionResult.from_json(result_path.read_text())
        except (OSError, ValueError, KeyError, TypeError):
            result = None
    if result is None:
        detail = ""
        for name in ("error.txt",):
            p = out / name
            if p.is_file():
                detail += p.read_text(errors="replace")[-2000:]
        why = "took too long" if overdue else "failed"
        result = zero_result(
            spec,
            student,
            f"The grader itself {why} on this submission, so it scores 0 for now; "
            "your instructor has been told and will look at it.",
            Flag("grader_error", detail[-1500:] or why),
        )
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
    _install_outputs(course_root, assignment, student, out, folder)
    score, max_score = recorder(db_url, result, content_hash, _read_timestamp(folder))
    flags = result.all_flags()
    shutil.rmtree(job_dir, ignore_errors=True)
    return f"{score:g}/{max_score:g}" + (f"  FLAGGED: {', '.join(sorted({f.code for f in flags}))}" if flags else "")
