"""Writing a graded submission into nbgrader's gradebook, and remembering that it is done.

nbgrader's own tables (submissions, grades, comments, the notebook's ``flagged`` bit) stay the
record, written through nbgrader's Gradebook API so that formgrader, ``nbgrader generate_feedback``
and ``nbgrader export`` keep working. One extra table in the same database, ``revad_graded``,
holds per submission the flags, the messages, the sandbox used and a hash of what was graded. Its
row is written last: a submission is done when its row exists with the same hash, so a run that
was killed part-way and started again regrades exactly the ones without a row, and the result is
the same as an uninterrupted run (a regrade removes nbgrader's rows and writes them again).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Column, Float, MetaData, String, Table, Text, create_engine, delete, select

from .jobs import NotebookFlag, SubmissionResult

METADATA = MetaData()
GRADED = Table(
    "revad_graded",
    METADATA,
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("content_hash", String(64), nullable=False),
    Column("score", Float, nullable=False),
    Column("max_score", Float, nullable=False),
    Column("flags", Text, nullable=False),  # JSON list of {"notebook", "code", "detail"}
    Column("messages", Text, nullable=False),  # JSON list of strings, as the learner reads them
    Column("sandbox", Text, nullable=False),
    Column("seconds", Float, nullable=True),  # grading time (added later: a gradebook from before has none)
)

SIMILARITY = Table(  # each learner's highest similarity to another's answer (autograder/similarity.py): a flag only
    "revad_similarity",
    METADATA,
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("similarity", Float, nullable=False),
    Column("partner", String(128), nullable=False),
    Column("exercise", String(128), nullable=False),
)

SECRET = Table(
    "revad_secret",
    METADATA,
    Column("name", String(64), primary_key=True),
    Column("value", String(128), nullable=False),
)

_ENGINES: dict = {}


def _add_missing_columns(eng: Any) -> None:
    """A gradebook written by an earlier grader gets the columns added since (create_all adds tables only)."""
    from sqlalchemy import inspect, text

    have = {c["name"] for c in inspect(eng).get_columns(GRADED.name)}
    with eng.begin() as conn:
        for column in GRADED.columns:
            if column.name not in have:
                conn.execute(
                    text(f"ALTER TABLE {GRADED.name} ADD COLUMN {column.name} {column.type.compile(eng.dialect)}")
                )


def engine(db_url: str) -> Any:
    if db_url not in _ENGINES:
        eng = create_engine(db_url)
        METADATA.create_all(eng)
        _add_missing_columns(eng)
        _ENGINES[db_url] = eng
    return _ENGINES[db_url]


def course_secret(db_url: str) -> str:
    """The secret hidden test cases are drawn from: made once, kept in the gradebook (so a regrade draws
    the same cases), never written into a sandbox."""
    import secrets

    with engine(db_url).begin() as conn:
        row = conn.execute(select(SECRET.c.value).where(SECRET.c.name == "hidden_cases")).first()
        if row is not None:
            return row.value
        value = secrets.token_hex(32)
        conn.execute(SECRET.insert().values(name="hidden_cases", value=value))
        return value


def completed(db_url: str, assignment: str) -> dict[str, str]:
    """student -> hash of the submission that was graded."""
    with engine(db_url).connect() as conn:
        rows = conn.execute(select(GRADED.c.student, GRADED.c.content_hash).where(GRADED.c.assignment == assignment))
        return {r.student: r.content_hash for r in rows}


@dataclass(frozen=True)
class GradedRow:
    """What the grader records of a submission beside nbgrader's tables."""

    score: float
    max_score: float
    flags: list[NotebookFlag]
    messages: list[str]  # as the learner reads them
    sandbox: str
    content_hash: str
    seconds: float | None  # grading time; None where an earlier grader did not record it


def graded_rows(db_url: str, assignment: str | None = None) -> dict[tuple[str, str], GradedRow]:
    query = select(GRADED)
    if assignment:
        query = query.where(GRADED.c.assignment == assignment)
    with engine(db_url).connect() as conn:
        return {
            (r.assignment, r.student): GradedRow(
                score=r.score,
                max_score=r.max_score,
                flags=[NotebookFlag(**f) for f in json.loads(r.flags)],
                messages=json.loads(r.messages),
                sandbox=r.sandbox,
                content_hash=r.content_hash,
                seconds=r.seconds,
            )
            for r in conn.execute(query)
        }


def record(db_url: str, result: SubmissionResult, content_hash: str, timestamp: str | None) -> tuple[float, float]:
    """Write one submission's grades (nbgrader's tables), then its completion row. Idempotent."""
    import warnings

    from sqlalchemy.exc import SAWarning

    from autograder.gradebook import Gradebook, MissingEntry

    assignment, student = result.assignment, result.student
    with warnings.catch_warnings():  # nbgrader's add_submission trips SQLAlchemy's autoflush warning
        warnings.simplefilter("ignore", SAWarning)
        return _record(db_url, result, content_hash, timestamp, assignment, student, Gradebook, MissingEntry)


def _record(db_url, result, content_hash, timestamp, assignment, student, Gradebook, MissingEntry):
    extension = None
    with Gradebook(db_url) as gb:
        gb.update_or_create_student(student)
        try:
            extension = gb.find_submission(assignment, student).extension  # the instructor's: kept
            gb.remove_submission(assignment, student)
        except MissingEntry:
            pass
    with Gradebook(db_url) as gb:
        kwargs: dict[str, Any] = {"timestamp": timestamp} if timestamp else {}
        gb.add_submission(assignment, student, **kwargs, **({"extension": extension} if extension else {}))
        for name, nb in result.notebooks.items():
            for gid, grade in nb.grades.items():
                row = gb.find_grade(gid, name, assignment, student)
                row.auto_score = grade.score
                # As stock autograde: an autograded test cell with a score needs no person (formgrader shows
                # it graded); a manually graded answer (it has a comment row: a solution cell) still does.
                row.needs_manual_grade = gid in nb.comments
            for gid, comment in nb.comments.items():
                try:
                    gb.find_comment(gid, name, assignment, student).auto_comment = comment
                except MissingEntry:
                    pass
            notebook = gb.find_submission_notebook(name, assignment, student)
            notebook.flagged = bool(nb.flags)
            notebook.late_submission_penalty = nb.late_penalty  # None: on time, or no penalty (as nbgrader)
        gb.db.commit()
        sub = gb.find_submission(assignment, student)
        score = max(0.0, float(sub.score) - float(sub.late_submission_penalty or 0))  # as nbgrader's export
        max_score = float(sub.max_score)
    with engine(db_url).begin() as conn:
        conn.execute(delete(GRADED).where((GRADED.c.assignment == assignment) & (GRADED.c.student == student)))
        conn.execute(
            GRADED.insert().values(
                assignment=assignment,
                student=student,
                content_hash=content_hash,
                score=score,
                max_score=max_score,
                flags=json.dumps([asdict(f) for f in result.all_flags()], sort_keys=True),
                messages=json.dumps(result.all_messages()),
                sandbox=result.sandbox,
                seconds=result.seconds,
            )
        )
    return score, max_score


def dump(db_url: str, assignment: str) -> list:
    """Everything graded for an assignment, without database ids: for comparing two gradebooks."""
    from autograder.gradebook import Gradebook

    out: list[tuple] = []
    with Gradebook(db_url) as gb:
        for sub in sorted(gb.find_assignment(assignment).submissions, key=lambda s: s.student.id):
            for nb in sorted(sub.notebooks, key=lambda n: n.name):
                out.append(
                    (
                        sub.student.id,
                        str(sub.timestamp),
                        nb.name,
                        float(nb.score),
                        nb.flagged,
                        sorted((g.name, g.auto_score, g.manual_score) for g in nb.grades),
                        sorted((c.name, c.auto_comment) for c in nb.comments),
                    )
                )
    rows = graded_rows(db_url, assignment)
    timeless = {k: {name: value for name, value in asdict(v).items() if name != "seconds"} for k, v in rows.items()}
    out += sorted((k, json.dumps(v, sort_keys=True)) for k, v in timeless.items())
    return out
