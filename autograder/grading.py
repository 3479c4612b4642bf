"""Grade submissions of an assignment into nbgrader's gradebook, then report, export and feed back.

The gradebook, autograded/ and feedback/ folders and the CSV export are nbgrader's own: whatever an
instructor already knows about nbgrader still holds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .coursedir import nbgrader_api, quiet_nbgrader


@dataclass
class SubmissionScore:
    student: str
    assignment: str
    score: float
    max_score: float
    by_cell: dict[str, tuple[float, float]] = field(default_factory=dict)  # grade_id -> (score, max)
    message: str = ""


def submitted_students(course_root: Path, assignment: str) -> list[str]:
    submitted = course_root / "submitted"
    if not submitted.is_dir():
        return []
    return sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())


def autograde(api, assignment: str, students: list[str]) -> dict[str, str]:
    """Stock nbgrader autograde, one student at a time. Returns student -> error text for failures."""
    errors = {}
    with quiet_nbgrader():
        for student in students:
            result = api.autograde(assignment, student, force=True, create=True)
            if not result.get("success"):
                errors[student] = (result.get("error") or result.get("log") or "autograde failed").strip()
    return errors


def read_scores(db_url: str, assignment: str, students: list[str]) -> list[SubmissionScore]:
    from nbgrader.api import Gradebook, MissingEntry

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
            rows.append(SubmissionScore(student, assignment, float(sub.score), float(sub.max_score), by_cell))
    return rows


def export_csv(db_url: str, path: Path) -> Path:
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    path.parent.mkdir(parents=True, exist_ok=True)
    with Gradebook(db_url) as gb:
        CsvExportPlugin(to=str(path)).export(gb)
    return path


def generate_feedback(api, assignment: str, students: list[str]) -> None:
    with quiet_nbgrader():
        for student in students:
            api.generate_feedback(assignment, student, force=True)


def format_table(rows: list[SubmissionScore]) -> str:
    if not rows:
        return "(no graded submissions)"
    cells = list(dict.fromkeys(name for row in rows for name in row.by_cell))
    header = ["student", "assignment", "score"] + cells
    lines = [[r.student, r.assignment, f"{r.score:g} / {r.max_score:g}"]
             + [f"{r.by_cell[c][0]:g}/{r.by_cell[c][1]:g}" if c in r.by_cell else "-" for c in cells] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = lambda cols: "  ".join(str(c).ljust(w) for c, w in zip(cols, widths)).rstrip()  # noqa: E731
    out = [fmt(header), fmt(["-" * w for w in widths])] + [fmt(l) for l in lines]
    return "\n".join(out)


def grade_assignment(course_root: Path, assignment: str, students: list[str] | None = None, *,
                     db_url: str | None = None, source: str = "source", release: str = "release") -> list[SubmissionScore]:
    """Autograde, write feedback, and return the scores of `students` (default: all who submitted)."""
    db_url = db_url or f"sqlite:///{course_root / 'gradebook.db'}"
    api = nbgrader_api(course_root, source=source, release=release, db_url=db_url)
    students = students or submitted_students(course_root, assignment)
    errors = autograde(api, assignment, students)
    generate_feedback(api, assignment, [s for s in students if s not in errors])
    rows = read_scores(db_url, assignment, students)
    for row in rows:
        row.message = errors.get(row.student, "")
    return rows
