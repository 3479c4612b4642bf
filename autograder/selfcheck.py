"""`make check [NB=03]`: a learner studying alone grades their own copy (work/) with the hidden tests.

The same grading as an instructor's (`python -m autograder grade`): the instructor's test cells with
their hidden tests, the same judges, the sandbox when bubblewrap is installed. It runs in a scratch
course directory under build/selfcheck/ holding a *copy* of the learner's notebooks: nothing in work/
is written. It prints the score table with every message whole, says where the reference solution of
an exercise is once the learner has tried it and lost points, and ends with one line `total: X / Y`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import nbformat

from .coursedir import COURSE, REPO, SOLUTIONS, assignments

WORK = REPO / "work"
SCRATCH = REPO / "build" / "selfcheck"
LEARNER = "you"


def pick(assignments_: list[str], wanted: str | None) -> list[str]:
    """The assignments `wanted` names ("03", "03-custom-functions", "custom"); all when None."""
    if not wanted:
        return assignments_
    chosen = [
        a for a in assignments_ if a == wanted or a.startswith(f"{wanted}-") or a[:2] == wanted.zfill(2) or wanted in a
    ]
    if not chosen:
        raise SystemExit(f"No notebook matches NB={wanted}: choose one of {', '.join(a[:2] for a in assignments_)}.")
    return chosen


def answer_cells(notebook: Path) -> dict[str, str]:
    """grade_id -> source of each answer cell of a notebook (empty if it cannot be read)."""
    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:  # noqa: BLE001 -- a notebook the grader will report on; here it only means "not tried"
        return {}
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("solution") and c.metadata["nbgrader"].get("grade_id")
    }


def tried(work_notebook: Path, released_notebook: Path) -> set[str]:
    """Answer cells the learner changed from the released stub."""
    mine, stub = answer_cells(work_notebook), answer_cells(released_notebook)
    return {gid for gid, source in mine.items() if gid in stub and source.strip() != stub[gid].strip()}


def reference_pointers(assignment: str, work: Path, by_cell: dict[str, tuple[float, float]]) -> list[str]:
    """For each exercise tried and not yet right: where its reference solution is."""
    pointers = []
    for released in sorted((COURSE / assignment).glob("*.ipynb")):
        changed = tried(work / assignment / released.name, released)
        for test_id, (score, points) in by_cell.items():
            answer = test_id.removeprefix("test_")
            if score < points and answer in changed:
                where = (SOLUTIONS / assignment / released.name).relative_to(REPO)
                pointers.append(
                    f"{answer}: you have tried it; its reference solution is the answer cell "
                    f"`{answer}` of {where} (read the hint above first)."
                )
    return pointers


def stage(assignment: str, work: Path, scratch: Path) -> None:
    """A scratch course: the instructor's source and a copy of the learner's folder as a submission."""
    for sub in ("source", "submitted", "autograded", "feedback"):
        shutil.rmtree(scratch / sub / assignment, ignore_errors=True)
    shutil.rmtree(scratch / "submitted" / LEARNER / assignment, ignore_errors=True)
    shutil.copytree(
        SOLUTIONS / assignment,
        scratch / "source" / assignment,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
    )
    shutil.copytree(
        work / assignment,
        scratch / "submitted" / LEARNER / assignment,
        symlinks=True,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "feedback"),
    )


def main(argv: list[str] | None = None) -> int:
    from .grading.command import grade_assignment
    from .grading.pool import Worker
    from .grading.report import format_table

    parser = argparse.ArgumentParser(
        prog="make check", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notebook", default=None, help="one notebook: 03, 03-custom-functions (default: all)")
    parser.add_argument("--work-dir", type=Path, default=WORK, help="the learner's copy (default work/)")
    parser.add_argument("--scratch", type=Path, default=SCRATCH, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    work, scratch = args.work_dir.resolve(), args.scratch.resolve()
    chosen = pick(assignments(), args.notebook)
    missing = [a for a in chosen if not (work / a).is_dir()]
    if missing:
        raise SystemExit(f"{work} has no {', '.join(missing)} yet: `make lab` makes your copy of the course there.")
    scratch.mkdir(parents=True, exist_ok=True)
    db = scratch / "gradebook.db"
    db.unlink(missing_ok=True)  # a fresh gradebook: the instructor's cells as they are now, new hidden draws
    total = max_total = 0.0
    pool = [Worker(0, scratch / ".grading")]  # one grading process for every notebook: torch imported once
    try:
        for number, assignment in enumerate(chosen):
            stage(assignment, work, scratch)
            rows = grade_assignment(
                scratch,
                assignment,
                [LEARNER],
                db_url=f"sqlite:///{db}",
                force=True,
                progress=False,
                log=print if number == 0 else (lambda *_: None),
                pool=pool,
            )
            for row in rows:
                row.messages += reference_pointers(assignment, work, row.by_cell)
                total, max_total = total + row.score, max_total + row.max_score
            print()
            print(format_table(rows))
            print()
    finally:
        pool[0].stop()
    print(f"total: {total:g} / {max_total:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
