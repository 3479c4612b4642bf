"""Reading grades back: the score table, and nbgrader's CSV export with the flags and messages."""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from . import record


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
    from nbgrader.api import Gradebook, MissingEntry

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
            info = extra.get((assignment, student), {})
            flags = [f"{f['code']}: {f['detail']}" for f in info.get("flags", [])]
            messages = info.get("messages", [])
            rows.append(SubmissionScore(student, assignment, float(sub.score), float(sub.max_score), by_cell,
                                        "\n".join(messages), flags, messages))
    return rows


def export_csv(db_url: str, path: Path) -> Path:
    """nbgrader's CSV export, with two more columns: flags and messages."""
    from nbgrader.api import Gradebook
    from nbgrader.plugins import CsvExportPlugin

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".nbgrader.csv")
    with Gradebook(db_url) as gb:
        CsvExportPlugin(to=str(tmp)).export(gb)
    extra = record.graded_rows(db_url)
    with tmp.open(newline="") as fh:
        reader = csv.DictReader(fh)
        fields = list(reader.fieldnames or []) + ["flags", "messages"]
        rows = list(reader)
    for row in rows:
        info = extra.get((row.get("assignment"), row.get("student_id")), {})
        row["flags"] = "; ".join(f"{f['code']} ({f['notebook']}: {f['detail']})" for f in info.get("flags", []))
        row["messages"] = " | ".join(m.replace("\n", " ") for m in info.get("messages", []))
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    tmp.unlink()
    return path


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
    lines = [[r.student, r.assignment, f"{r.score:g} / {r.max_score:g}"]
             + [f"{r.by_cell[c][0]:g}/{r.by_cell[c][1]:g}" if c in r.by_cell else "-" for c in cells]
             + [", ".join(sorted({f.split(':')[0] for f in r.flags})) or "-"] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = lambda cols: "  ".join(str(c).ljust(w) for c, w in zip(cols, widths)).rstrip()  # noqa: E731
    out = [fmt(header), fmt(["-" * w for w in widths])] + [fmt(l) for l in lines]
    notes = []
    for r in rows:
        for f in r.flags:
            notes.append(f"  {r.student} / {r.assignment}  FLAG {f}")
        for m in r.messages:
            notes.append(f"  {r.student} / {r.assignment}  {m.splitlines()[0] if m else ''}")
    if notes:
        out += ["", "Flags and messages:"] + notes
    return "\n".join(out)
