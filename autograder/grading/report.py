"""Reading grades back: the score table, and nbgrader's CSV export with the flags and messages."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import record
from .safe_text import spreadsheet_cell, terminal_text


@dataclass
class SubmissionScore:
    student: str
    assignment: str
    score: float
    max_score: float
    by_cell: dict[str, tuple[float, float]] = field(default_factory=dict)  # grade_id -> (score, max)
    message: str = ""
    flags: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def read_scores(db_url: str, assignment: str, students: list[str]) -> list[SubmissionScore]:
    from autograder.gradebook import Gradebook, MissingEntry

    extra = record.graded_rows(db_url, assignment)
    rows = []
    with Gradebook(db_url) as gb:
        for student in students:
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                continue
            by_cell = {}
            for notebook in sub.notebooks:
                for grade in notebook.grades:
                    by_cell[grade.name] = (float(grade.score), float(grade.max_score))
            info = extra.get((assignment, student))
            flags = [f.instructor_line for f in info.flags] if info else []
            messages = info.messages if info else []
            rows.append(
                SubmissionScore(
                    student,
                    assignment,
                    max(0.0, float(sub.score) - float(sub.late_submission_penalty or 0)),  # as nbgrader's export
                    float(sub.max_score),
                    by_cell,
                    "\n".join(messages),
                    flags,
                    messages,
                )
            )
    return rows


NBGRADER_COLUMNS = [
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
]


def nbgrader_rows(gb: Any) -> list[dict[str, str]]:
    """The rows of nbgrader's CSV export (its CsvExportPlugin: same columns, same values), as data: that
    plugin joins fields with commas unquoted, so an id with a comma or a line break would break the file."""
    from nbgrader.api import MissingEntry

    rows = []
    for assignment in gb.assignments:
        for student in gb.students:
            row = {
                "assignment": assignment.name,
                "duedate": assignment.duedate,
                "student_id": student.id,
                "last_name": student.last_name,
                "first_name": student.first_name,
                "email": student.email,
                "max_score": assignment.max_score,
            }
            try:
                sub = gb.find_submission(assignment.name, student.id)
            except MissingEntry:
                row.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
            else:
                penalty = sub.late_submission_penalty
                row.update(
                    timestamp=sub.timestamp,
                    raw_score=sub.score,
                    late_submission_penalty=penalty,
                    score=max(0.0, sub.score - penalty),
                )
            rows.append({key: "" if row[key] is None else str(row[key]) for key in NBGRADER_COLUMNS})
    return rows


EXPORT_FORMATS = ("nbgrader", "canvas", "moodle")
SIMILARITY_COLUMNS = ["highest_similarity", "similar_to"]


def similarity_rows(db_url: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(assignment, student) -> (their highest similarity, "partner (exercise)"), where the similarity command ran
    and listed a pair of theirs (autograder/similarity.py)."""
    from sqlalchemy import select

    with record.engine(db_url).connect() as conn:
        return {
            (r.assignment, r.student): (f"{r.similarity:.2f}", f"{r.partner} ({r.exercise})")
            for r in conn.execute(select(record.SIMILARITY))
        }


def export_csv(db_url: str, path: Path, export_format: str = "nbgrader") -> Path:
    """nbgrader's CSV export, with two more columns: flags and messages; properly quoted, and no cell a
    spreadsheet would run as a formula. `export_format` canvas or moodle: a learning-management system's
    gradebook import instead (lms_table)."""
    from autograder.gradebook import Gradebook

    path.parent.mkdir(parents=True, exist_ok=True)
    with Gradebook(db_url) as gb:
        rows = nbgrader_rows(gb)
    if export_format != "nbgrader":
        with path.open("w", newline="") as fh:
            csv.writer(fh).writerows([[spreadsheet_cell(v) for v in row] for row in lms_table(rows, export_format)])
        return path
    extra = record.graded_rows(db_url)
    similar = similarity_rows(db_url)
    for row in rows:
        info = extra.get((row["assignment"], row["student_id"]))
        row["flags"] = "; ".join(f.csv_text for f in info.flags) if info else ""
        row["messages"] = " | ".join(m.replace("\n", " ") for m in info.messages) if info else ""
        row["highest_similarity"], row["similar_to"] = similar.get((row["assignment"], row["student_id"]), ("", ""))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=NBGRADER_COLUMNS + ["flags", "messages", *SIMILARITY_COLUMNS])
        writer.writeheader()
        writer.writerows({key: spreadsheet_cell(value) for key, value in row.items()} for row in rows)
    return path


def lms_table(rows: list[dict], export_format: str) -> list[list]:
    """One row per learner, one column per assignment, as Canvas's gradebook import reads it (a "Points Possible"
    row under the header; learners matched by SIS login, here the nbgrader student id) or Moodle's (learners
    matched by ID number or email address)."""
    assignments = list(dict.fromkeys(r["assignment"] for r in rows))
    students = list(dict.fromkeys(r["student_id"] for r in rows))
    by_key = {(r["student_id"], r["assignment"]): r for r in rows}
    maxima = {a: next(r["max_score"] for r in rows if r["assignment"] == a) for a in assignments}

    def name(student: str) -> str:
        r = by_key[(student, assignments[0])]
        return f"{r['last_name'] or ''}, {r['first_name'] or ''}".strip(", ") or student

    scores = {key: r["score"] for key, r in by_key.items()}
    if export_format == "canvas":
        header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *assignments]
        possible = ["    Points Possible", "", "", "", "", *(maxima[a] for a in assignments)]
        body = [[name(s), "", s, s, "", *(scores.get((s, a), "") for a in assignments)] for s in students]
        return [header, possible, *body]
    if export_format == "moodle":
        header = ["ID number", "Email address", *assignments]
        email = {s: by_key[(s, assignments[0])]["email"] or "" for s in students}
        return [header, *([s, email[s], *(scores.get((s, a), "") for a in assignments)] for s in students)]
    raise ValueError(f"unknown export format {export_format!r}: one of {', '.join(EXPORT_FORMATS)}")


def format_table(rows: list[SubmissionScore]) -> str:
    """The score table: one block per assignment, then each submission's flags and messages."""
    if not rows:
        return "(no graded submissions)"
    assignments = list(dict.fromkeys(r.assignment for r in rows))
    if len(assignments) > 1:
        return "\n\n".join(_format_one([r for r in rows if r.assignment == a]) for a in assignments)
    return _format_one(rows)


def _format_one(rows: list[SubmissionScore]) -> str:
    cells = list(dict.fromkeys(name for row in rows for name in row.by_cell))
    header = ["student", "assignment", "score"] + cells + ["flags"]
    lines = [
        [terminal_text(r.student), terminal_text(r.assignment), f"{r.score:g} / {r.max_score:g}"]
        + [f"{r.by_cell[c][0]:g}/{r.by_cell[c][1]:g}" if c in r.by_cell else "-" for c in cells]
        + [", ".join(sorted({f.split(':')[0] for f in r.flags})) or "-"]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = lambda cols: "  ".join(str(c).ljust(w) for c, w in zip(cols, widths)).rstrip()  # noqa: E731
    out = [fmt(header), fmt(["-" * w for w in widths])] + [fmt(row) for row in lines]
    notes = []
    for r in rows:
        who = f"{terminal_text(r.student)} / {terminal_text(r.assignment)}"
        for f in r.flags:
            notes.append(f"  {who}  FLAG {terminal_text(f)}")
        for m in r.messages:  # whole: a message's best part (the entries, the hint) is often its last line
            first, *rest = [terminal_text(line) for line in str(m).split("\n")] or [""]
            notes.append(f"  {who}  {first}")
            notes += [f"      {line}" for line in rest if line.strip()]
    if notes:
        out += ["", "Flags and messages:"] + notes
    return "\n".join(out)
