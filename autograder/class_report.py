"""The instructor's picture of a class: `python -m autograder report NN-slug [--out DIR]`.

One offline HTML page (no network, no CDN: its plots are PNG files beside it) built from the gradebook and from
what the judges wrote into each learner's autograded notebook: per exercise the distribution of scores, the
mistakes the class made most (the hint each learner got, how many got it, one anonymised example), the flags
raised; and a table of the exercises. Only the parts of the reports that the learners' own notebooks show are
read: what the hidden tests said stays out (it would describe hidden cases).
"""

from __future__ import annotations

import html
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .grading import record
from .hidden_tests import BEGIN

HIDDEN_REPORT = "Hidden tests (cases your notebook does not show)"
HINT = re.compile(r"^\s*Hint:\s*(.+?)\s*$")


@dataclass
class Exercise:
    grade_id: str
    max_score: float
    scores: dict[str, float] = field(default_factory=dict)  # student -> score
    hints: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # hint -> students
    examples: dict[str, str] = field(default_factory=dict)  # hint -> one learner's first report line
    flags: Counter = field(default_factory=Counter)  # flag code -> submissions
    blank: set[str] = field(default_factory=set)  # learners whose answer was not written

    @property
    def mean(self) -> float:
        return sum(self.scores.values()) / len(self.scores) if self.scores else 0.0

    def top_mistakes(self, n: int = 3) -> list[tuple[str, int, str]]:
        """(hint, learners who got it, an example) for the hints most learners got, most first."""
        ranked = sorted(self.hints.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        return [(hint, len(students), self.examples.get(hint, "")) for hint, students in ranked[:n]]


def visible_report(text: str) -> list[str]:
    """The lines of a test cell's report up to the part about the hidden tests."""
    lines = []
    for line in text.splitlines():
        if HIDDEN_REPORT in line or BEGIN in line:
            break
        lines.append(line)
    return lines


def _cell_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") == "error":
            parts.append(out.get("evalue", ""))
    return "\n".join(parts)


def anonymised(text: str, students: list[str]) -> str:
    for student in sorted(students, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(student)}\b", "a learner", text)
    return text


def class_exercises(course_root: Path, assignment: str, db_url: str) -> dict[str, Exercise]:
    """Every graded cell of the assignment, with the class's scores, hints and flags."""
    from autograder.gradebook import Gradebook, MissingEntry

    exercises: dict[str, Exercise] = {}
    with Gradebook(db_url) as gb:
        students = [s.id for s in gb.students]
        try:
            notebooks = gb.find_assignment(assignment).notebooks
        except MissingEntry:
            known = ", ".join(a.name for a in gb.assignments) or "none"
            raise SystemExit(f"No assignment {assignment!r} in the gradebook {db_url} (it has: {known}).") from None
        for nb in notebooks:
            for cell in nb.grade_cells:
                exercises[cell.name] = Exercise(cell.name, float(cell.max_score))
        for submission in gb.assignment_submissions(assignment):
            for notebook in submission.notebooks:
                for grade in notebook.grades:
                    if grade.name in exercises:
                        exercises[grade.name].scores[submission.student_id] = float(grade.score)
    for info in record.graded_rows(db_url, assignment).values():
        for flag in info.flags:
            for gid, exercise in exercises.items():
                if flag.detail.startswith(f"{gid}:") or f" {gid}" in flag.detail:
                    exercise.flags[flag.code] += 1
    for path in sorted((course_root / "autograded").glob(f"*/{assignment}/*.ipynb")):
        student = path.parent.parent.name
        for cell in nbformat.read(path, as_version=4).cells:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if gid not in exercises or cell.cell_type != "code":
                continue
            lines = visible_report(_cell_text(cell))
            if any("is not written yet" in line for line in lines):
                exercises[gid].blank.add(student)
            for line in lines:
                match = HINT.match(line)
                if match:
                    hint = match.group(1)
                    exercises[gid].hints[hint].add(student)
                    first = next((x.strip() for x in lines if x.strip() and not HINT.match(x)), "")
                    exercises[gid].examples.setdefault(hint, anonymised(first, students)[:300])
    return exercises


def _pyplot():
    """matplotlib's pyplot, drawing to files only (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plot_scores(exercises: dict[str, Exercise], out: Path) -> Path:
    plt = _pyplot()
    names = list(exercises)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.7 * len(names) + 2), 4))
    for k, name in enumerate(names):
        e = exercises[name]
        fractions = [s / e.max_score for s in e.scores.values()] if e.max_score else []
        ax.scatter([k] * len(fractions), fractions, alpha=0.5, color="tab:blue")
        ax.plot([k - 0.3, k + 0.3], [e.mean / e.max_score if e.max_score else 0] * 2, color="tab:red")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=8)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("score / points (red: the class mean)")
    ax.set_title("Scores per exercise")
    fig.tight_layout()
    path = out / "scores.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _plot_mistakes(exercises: dict[str, Exercise], out: Path) -> Path:
    plt = _pyplot()
    top = sorted(
        ((len(students), f"{gid}: {hint[:60]}…") for gid, e in exercises.items() for hint, students in e.hints.items()),
        reverse=True,
    )[:12]
    fig, ax = plt.subplots(figsize=(9, 0.45 * max(len(top), 1) + 1.5))
    if top:
        ax.barh(range(len(top)), [count for count, _ in top], color="tab:orange")
        ax.set_yticks(range(len(top)), [label for _, label in top], fontsize=7)
        ax.invert_yaxis()
    else:
        ax.text(0.5, 0.5, "no hints were given: no recognised mistakes", ha="center", va="center")
    ax.set_xlabel("learners who got this hint")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("The class's most common mistakes")
    fig.tight_layout()
    path = out / "mistakes.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def grading_times(db_url: str, assignment: str) -> str:
    """Grading time per submission, as a sentence: the median, the slowest, the whole class's."""
    rows = record.graded_rows(db_url, assignment).values()
    seconds = sorted(r.seconds for r in rows if r.seconds)
    if not seconds:
        return "Grading time per submission: " + (
            "not recorded (graded before the grader kept it)." if rows else "no submission graded yet."
        )
    median = statistics.median(seconds)
    return (
        f"Grading time per submission: median {median:.1f} s, slowest {seconds[-1]:.1f} s, "
        f"{sum(seconds):.0f} s for the {len(seconds)} timed submission(s) (one worker's time each)."
    )


def late_submissions(db_url: str, assignment: str) -> str:
    """The assignment's due date and how late the late submissions were, with their penalties, as a sentence that
    names no learner (the class report is shared anonymously)."""
    from .gradebook import Gradebook, MissingEntry

    with Gradebook(db_url) as gb:
        try:
            found = gb.find_assignment(assignment)
        except MissingEntry:
            return ""
        if found.duedate is None:
            return "No due date is set for this assignment: no submission counts as late."
        late = sorted(
            ("", s.total_seconds_late, float(s.late_submission_penalty or 0))
            for s in found.submissions
            if s.total_seconds_late > 0
        )
        due = f"{found.duedate:%Y-%m-%d %H:%M} UTC"
    if not late:
        return f"Due {due}: every submission was on time."
    listed = "; ".join(f"{seconds / 3600:.1f} h late, −{penalty:g} points" for _, seconds, penalty in late)
    return f"Due {due}: {len(late)} late submission(s) ({listed}; who: the CSV export and formgrader)."


def write_similarity(
    course_root: Path,
    assignment: str,
    db_url: str,
    out: Path,
    source: str = "source",
    release: str = "release",
    threshold: float | None = None,
    named: bool = True,
) -> tuple[Path, list[str]]:
    """similarity.html in `out` (for the instructor: it names the learners of each pair), each learner's highest
    similarity kept for the CSV export; (the page, a summary line per exercise: `named=False`, no learner named)."""
    from . import similarity

    threshold = similarity.THRESHOLD if threshold is None else threshold
    results, notes = similarity.compare_class(course_root, assignment, source, release, threshold)
    similarity.save(db_url, assignment, results)
    out.mkdir(parents=True, exist_ok=True)
    section = similarity.html_section(results, threshold)
    page = out / "similarity.html"
    page.write_text(
        f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Similar answers: {html.escape(assignment)}</title>
<style>{PAGE_STYLE}</style></head><body>
<h1>Similar answers: {html.escape(assignment)}</h1>{section}
{"".join(f"<p>{html.escape(n)}</p>" for n in notes)}</body></html>
"""
    )
    return page, similarity.summary(results, named=named) + (notes if named else [])


PAGE_STYLE = (
    "body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.4em;vertical-align:top;text-align:left}"
    "img{max-width:100%}table.pair td{width:50%}pre{white-space:pre-wrap;margin:0}mark{background:#fd6}"
)


def write_report(
    course_root: Path, assignment: str, db_url: str, out: Path, source: str = "source", release: str = "release"
) -> Path:
    """report.html (and its PNGs, and similarity.html) in `out`; returns the page's path."""
    from .coursedir import put_interpreter_scripts_on_path

    put_interpreter_scripts_on_path()  # nbgrader's gradebook runs `alembic`: found without an activated venv
    exercises = class_exercises(course_root, assignment, db_url)
    out.mkdir(parents=True, exist_ok=True)
    _plot_scores(exercises, out)
    _plot_mistakes(exercises, out)
    learners = len({s for e in exercises.values() for s in e.scores})
    timing = grading_times(db_url, assignment)
    lateness = late_submissions(db_url, assignment)
    _, similar = write_similarity(course_root, assignment, db_url, out, source, release, named=False)
    rows = []
    for gid, e in exercises.items():
        full = sum(1 for s in e.scores.values() if s >= e.max_score)
        mistakes = "".join(
            f"<li><b>{count} learner(s)</b>: {html.escape(hint)}"
            + (f"<br><small>e.g. “{html.escape(example)}”</small>" if example else "")
            + "</li>"
            for hint, count, example in e.top_mistakes()
        )
        flags = ", ".join(f"{html.escape(code)} ×{n}" for code, n in e.flags.most_common()) or "–"
        rows.append(
            f"<tr><td><code>{html.escape(gid)}</code></td><td>{e.mean:.2f} / {e.max_score:g}</td>"
            f"<td>{full} of {len(e.scores)}</td><td>{len(e.blank)}</td>"
            f"<td><ul>{mistakes or '<li>none recognised</li>'}</ul></td>"
            f"<td>{flags}</td></tr>"
        )
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Class report: {html.escape(assignment)}</title>
<style>{PAGE_STYLE}</style></head><body>
<h1>Class report: {html.escape(assignment)}</h1>
<p>{learners} graded submission(s). Hints are what the judges told each learner on the cases their notebook shows;
the hidden tests' reports are left out.</p>
<p>{timing}</p>
<p>{html.escape(lateness)}</p>
<img src="scores.png" alt="scores per exercise"><img src="mistakes.png" alt="the most common mistakes">
<h2>Per exercise</h2>
<table><tr><th>exercise</th><th>mean</th><th>full marks</th><th>not written</th><th>most common mistakes</th>
<th>flags</th></tr>
{"".join(rows)}</table>
<h2>Similar answers</h2>
<p>Pairs of answers that share most of their code (a flag for a person to read, never a score change). How it
works, and each pair side by side with the learners named (for the instructor: this page names no one):
<a href="similarity.html">similarity.html</a>.</p>
<ul>{"".join(f"<li>{html.escape(line)}</li>" for line in similar)}</ul></body></html>
"""
    path = out / "report.html"
    path.write_text(page)
    return path
