"""`make demo`: the instructor's job end to end in a scratch course directory.

Regenerates the release, builds the example submissions (demo/README.md), grades them with the
course's grading command (`python -m autograder grade`: sandboxed, parallel) into a SQLite
gradebook, prints the score table and writes feedback HTML and a grades CSV (with flags).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import nbformat

from .coursedir import REPO, SOLUTIONS, assignments
from .grading import export_csv, format_table, grade_assignment
from .grading.pool import Worker
from .release import generate_in_course
from .submissions import example_submissions

DEFAULT_DIR = REPO / "build" / "demo"


def build_course(root: Path, only: list[str], db_url: str) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    shutil.copytree(SOLUTIONS, root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    generate_in_course(root, only, db_url)
    for assignment in only:
        for student, notebooks in example_submissions(assignment, root / "release", SOLUTIONS).items():
            folder = root / "submitted" / student / assignment
            folder.mkdir(parents=True)
            for name, nb in notebooks.items():
                nbformat.write(nb, folder / name)
            (folder / "timestamp.txt").write_text("2026-11-01 12:00:00.000000 UTC")


def run_demo(root: Path = DEFAULT_DIR, only: list[str] | None = None, workers: int | None = None) -> list:
    root = root.resolve()
    only = only or assignments()
    start = time.perf_counter()
    print(f"Building a scratch course in {root} ...")
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    build_course(root, only, db_url)
    rows = []
    # one pool of grading processes for every assignment: each imports torch once, not once per assignment
    pool = [Worker(slot, root / ".grading") for slot in range(max(1, workers or os.cpu_count() or 1))]
    try:
        for assignment in only:
            print(f"Grading {assignment} ...", flush=True)
            rows += grade_assignment(root, assignment, db_url=db_url, workers=workers, pool=pool)
    finally:
        for worker in pool:
            worker.stop()
    csv = export_csv(db_url, root / "grades.csv")
    print()
    print(format_table(rows))
    print(f"\nGradebook:     {root / 'gradebook.db'}")
    print(f"Feedback HTML: {root / 'feedback'}/<student>/<assignment>/*.html")
    print(f"Grades CSV:    {csv}")
    print(f"Done in {time.perf_counter() - start:.0f} s.")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="scratch course directory (wiped first)")
    parser.add_argument("--workers", type=int, default=None, help="parallel grading workers (default: one per core)")
    parser.add_argument("assignments", nargs="*", help="assignments to grade (default: all)")
    args = parser.parse_args()
    run_demo(args.dir, args.assignments or None, args.workers)


if __name__ == "__main__":
    main()
