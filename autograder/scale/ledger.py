"""What the grading service keeps in the gradebook database, beside nbgrader's tables.

``revad_task``: one row per (assignment, student, submission sha256): its attempts, its state
(queued, running, graded, superseded, failed) and how many times it was written into the gradebook.
``revad_output``: the autograded notebooks and feedback pages of the submission in the gradebook, so
that no file system is shared between workers and the instructor's machine.

:func:`record_once` is the only write of a graded submission: under a lock per learner it writes
nothing for a submission already written (a redelivered task) or older than the one in the gradebook
(a newer submission finished first), so each submission counts once and the newest one wins.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import Column, Integer, LargeBinary, MetaData, String, Table, Text, and_, insert, select, text, update

from ..grading import record
from ..grading.jobs import SubmissionResult

METADATA = MetaData()
TASK = Table(
    "revad_task",
    METADATA,
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("sha256", String(64), primary_key=True),
    Column("submitted_at", String(40), nullable=False),
    Column("state", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("written", Integer, nullable=False, default=0),  # times written into the gradebook: 1 when graded
    Column("reason", Text, nullable=False, default=""),
    Column("updated", String(40), nullable=False),
)
OUTPUT = Table(
    "revad_output",
    METADATA,
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("kind", String(16), primary_key=True),  # autograded | feedback | feedback_visible
    Column("name", String(255), primary_key=True),
    Column("data", LargeBinary, nullable=False),
)
DONE = ("graded", "superseded", "failed")


@dataclass(frozen=True)
class Key:
    assignment: str
    student: str
    sha256: str


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


_READY: set[str] = set()


def engine(db_url: str):
    """The gradebook's engine, every table made: nbgrader's, the grader's and these. Workers starting together
    on a new PostgreSQL gradebook would race to create them (CREATE TABLE is not safe concurrently there), so
    the first use in each process makes them under a lock."""
    if db_url in _READY:
        return record.engine(db_url)
    with _creation_lock(db_url):
        from autograder.gradebook import Gradebook

        eng = record.engine(db_url)
        METADATA.create_all(eng)
        Gradebook(db_url).close()
    _READY.add(db_url)
    return eng


@contextlib.contextmanager
def _creation_lock(db_url: str):
    if db_url.startswith("sqlite"):
        yield  # SQLite serialises writers itself
        return
    from sqlalchemy import create_engine

    eng = create_engine(db_url)
    try:
        with eng.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(4242001)"))
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(4242001)"))
                conn.commit()
    finally:
        eng.dispose()


def _where(key: Key):
    return and_(TASK.c.assignment == key.assignment, TASK.c.student == key.student, TASK.c.sha256 == key.sha256)


def queued(db_url: str, key: Key, submitted_at: str) -> None:
    """The submission is on its way (a row to wait on); a submission queued again keeps its history."""
    with engine(db_url).begin() as conn:
        if conn.execute(select(TASK.c.state).where(_where(key))).first() is None:
            conn.execute(
                insert(TASK).values(
                    assignment=key.assignment,
                    student=key.student,
                    sha256=key.sha256,
                    submitted_at=submitted_at,
                    state="queued",
                    attempts=0,
                    written=0,
                    reason="",
                    updated=_now(),
                )
            )


def start_attempt(db_url: str, key: Key, submitted_at: str) -> int:
    """Count one more attempt at grading this submission (committed before grading starts); the count."""
    queued(db_url, key, submitted_at)
    with engine(db_url).begin() as conn:
        conn.execute(update(TASK).where(_where(key)).values(attempts=TASK.c.attempts + 1, updated=_now()))
        conn.execute(update(TASK).where(and_(_where(key), TASK.c.state == "queued")).values(state="running"))
        return int(conn.execute(select(TASK.c.attempts).where(_where(key))).scalar_one())


def state(db_url: str, key: Key) -> dict | None:
    with engine(db_url).connect() as conn:
        row = conn.execute(select(TASK).where(_where(key))).first()
        return dict(row._mapping) if row is not None else None


def states(db_url: str, assignment: str) -> dict[tuple[str, str], dict]:
    """(student, sha256) -> its row."""
    with engine(db_url).connect() as conn:
        return {
            (r.student, r.sha256): dict(r._mapping)
            for r in conn.execute(select(TASK).where(TASK.c.assignment == assignment))
        }


def _set(conn, key: Key, **values) -> None:
    conn.execute(update(TASK).where(_where(key)).values(updated=_now(), **values))


@contextlib.contextmanager
def learner_lock(db_url: str, assignment: str, student: str):
    """One writer at a time per learner and assignment, across workers: PostgreSQL's advisory lock, or for
    SQLite (workers on one machine) a lock file beside the database."""
    name = f"{assignment}/{student}".encode()
    if db_url.startswith("sqlite:///"):
        path = Path(db_url[len("sqlite:///") :] + ".locks") / (hashlib.sha256(name).hexdigest()[:32] + ".lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    number = int.from_bytes(hashlib.sha256(name).digest()[:8], "big", signed=True)
    with engine(db_url).connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:n)"), {"n": number})
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:n)"), {"n": number})
            conn.commit()


def _in_gradebook(conn, assignment: str, student: str) -> dict | None:
    """The learner's submission whose grades the gradebook holds (graded, or failed with a zero)."""
    row = conn.execute(
        select(TASK).where(
            and_(
                TASK.c.assignment == assignment,
                TASK.c.student == student,
                TASK.c.written > 0,
                TASK.c.state.in_(("graded", "failed")),
            )
        )
    ).first()
    return dict(row._mapping) if row is not None else None


def record_once(
    db_url: str,
    key: Key,
    submitted_at: str,
    result: SubmissionResult,
    outputs: dict[tuple[str, str], bytes],
    state_if_written: str = "graded",
    reason: str = "",
) -> str:
    """Write a graded submission into the gradebook unless it is there already or a newer one is; which
    happened: 'written', 'already written' or 'superseded'."""
    with learner_lock(db_url, key.assignment, key.student):
        with engine(db_url).begin() as conn:
            current = _in_gradebook(conn, key.assignment, key.student)
            mine = conn.execute(select(TASK.c.written).where(_where(key))).scalar_one_or_none()
        if mine:
            return "already written"
        if current is not None and current["submitted_at"] > submitted_at:
            with engine(db_url).begin() as conn:
                _set(conn, key, state="superseded", reason="a newer submission of this learner is graded")
            return "superseded"
        record.record(db_url, result, key.sha256, submitted_at)
        with engine(db_url).begin() as conn:
            conn.execute(
                OUTPUT.delete().where(and_(OUTPUT.c.assignment == key.assignment, OUTPUT.c.student == key.student))
            )
            for (kind, name), data in sorted(outputs.items()):
                conn.execute(
                    insert(OUTPUT).values(
                        assignment=key.assignment, student=key.student, kind=kind, name=name, data=data
                    )
                )
            if current is not None and current["sha256"] != key.sha256:
                _set(
                    conn,
                    Key(key.assignment, key.student, current["sha256"]),
                    state="superseded",
                    reason="a newer submission of this learner is graded",
                )
            conn.execute(
                update(TASK)
                .where(_where(key))
                .values(state=state_if_written, written=TASK.c.written + 1, reason=reason, updated=_now())
            )
        return "written"


def outputs(db_url: str, assignment: str, student: str) -> dict[tuple[str, str], bytes]:
    with engine(db_url).connect() as conn:
        rows = conn.execute(select(OUTPUT).where(and_(OUTPUT.c.assignment == assignment, OUTPUT.c.student == student)))
        return {(r.kind, r.name): bytes(r.data) for r in rows}
