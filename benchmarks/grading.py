"""Grading throughput: the course's hardened command (2 workers) against stock `nbgrader autograde` (sequential).

    make bench-grading            # or: python -m benchmarks.grading [--n 40] [--workers 2] [--celery]
                                  #     [--assignment 05-gpu-functions --no-stock]

Builds identical scratch courses with N submissions of notebook 01 (or --assignment; the demo's correct, partly
wrong and blank learners, in turn), grades one with `autograder.grading.grade_assignment` (sandboxed, verdicts decided
outside the kernel, feedback HTML written), one the same way with the lesson's measurement marks removed
(every cell runs, as in stock nbgrader), and one with nbgrader's own autograde, one student after the
other; prints seconds per submission for each and the ratios.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import nbformat

from autograder.coursedir import REPO, SOLUTIONS, nbgrader_api
from autograder.grading import autograde, grade_assignment
from autograder.release import generate_in_course
from autograder.submissions import example_submissions

ASSIGNMENT = "01-reverse-accumulation"


def build(root: Path, n: int, measurements: bool = True, assignment: str = ASSIGNMENT) -> list[str]:
    """A scratch course with `n` submissions; `measurements=False`: the source without its measurement marks,
    so that grading runs every cell, as stock nbgrader does."""
    if root.exists():
        shutil.rmtree(root)
    (root / "source").mkdir(parents=True)
    shutil.copytree(
        SOLUTIONS / assignment,
        root / "source" / assignment,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
    )
    if not measurements:
        for path in (root / "source" / assignment).glob("*.ipynb"):
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:
                cell.metadata.pop("revad", None)
            nbformat.write(nb, path)
    generate_in_course(root, [assignment], f"sqlite:///{root / 'gradebook.db'}")
    examples = list(example_submissions(assignment, root / "release", SOLUTIONS).values())
    students = [f"learner{i:03d}" for i in range(n)]
    for i, student in enumerate(students):
        folder = root / "submitted" / student / assignment
        folder.mkdir(parents=True)
        for name, nb in examples[i % len(examples)].items():
            nbformat.write(nb, folder / name)
        (folder / "timestamp.txt").write_text("2026-11-01 12:00:00.000000 UTC")
    return students


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=40, help="submissions (default 40)")
    parser.add_argument("--workers", type=int, default=2, help="workers of the course's command (default 2)")
    parser.add_argument("--dir", type=Path, default=REPO / "build" / "bench-grading")
    parser.add_argument("--assignment", default=ASSIGNMENT, help=f"default {ASSIGNMENT}")
    parser.add_argument("--no-stock", action="store_true", help="the course's command only: seconds per submission")
    parser.add_argument(
        "--celery",
        action="store_true",
        help="also grade the same submissions on 1 and on 2 Celery workers (redis-server on a free port)",
    )
    args = parser.parse_args()

    ours_root, every_cell_root, stock_root = args.dir / "ours", args.dir / "every-cell", args.dir / "stock"
    students = build(ours_root, args.n, assignment=args.assignment)
    build(every_cell_root, args.n, measurements=False, assignment=args.assignment)

    def ours_on(root: Path) -> float:
        start = time.perf_counter()
        rows = grade_assignment(
            root,
            args.assignment,
            db_url=f"sqlite:///{root / 'gradebook.db'}",
            workers=args.workers,
            progress=False,
            log=lambda *_: None,
        )
        assert len(rows) == args.n
        return time.perf_counter() - start

    ours, every_cell = ours_on(ours_root), ours_on(every_cell_root)
    stock, errors = None, []
    if not args.no_stock:
        build(stock_root, args.n, assignment=args.assignment)
        api = nbgrader_api(stock_root, db_url=f"sqlite:///{stock_root / 'gradebook.db'}")
        start = time.perf_counter()
        errors = autograde(api, args.assignment, students)
        stock = time.perf_counter() - start

    def against_stock(seconds: float) -> str:
        return "" if stock is None else f"; {stock / seconds:.2f}x stock"

    print(f"{args.n} submissions of {args.assignment}")
    print(
        f"course command ({args.workers} workers, sandboxed, feedback included): {ours / args.n:6.2f} s per submission "
        f"({ours:.0f} s{against_stock(ours)})"
    )
    print(
        f"  the same, running the lesson's measurement cells too:      {every_cell / args.n:6.2f} s per submission "
        f"({every_cell:.0f} s{against_stock(every_cell)})"
    )
    if stock is not None:
        print(
            f"stock nbgrader autograde (sequential):                       {stock / args.n:6.2f} s per submission "
            f"({stock:.0f} s)" + (f"  [{len(errors)} failed]" if errors else "")
        )
        print(f"speed-up: {stock / ours:.2f}x")
    if args.celery:
        for count in (1, 2):
            seconds = on_celery(args.dir / f"celery{count}", args.n, count, args.assignment)
            print(
                f"Celery, {count} worker process(es) on this machine:                   {seconds / args.n:6.2f} s per "
                f"submission ({seconds:.0f} s{against_stock(seconds)})"
            )


def on_celery(root: Path, n: int, workers: int, assignment: str = ASSIGNMENT) -> float:
    """Seconds from queueing to the last result, with `workers` worker processes (one task each at a time)."""
    import tempfile

    from autograder.grading.sandbox import Limits
    from autograder.scale.client import queue_assignment, wait
    from tests.celery_service import Redis, Worker

    build(root, n, assignment=assignment)
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    with tempfile.TemporaryDirectory() as scratch:
        redis = Redis(Path(scratch) / "redis").start()
        pool = [Worker(redis.url, db_url, root, Path(scratch) / f"w{i}.log", f"bench{i}") for i in range(workers)]
        try:
            time.sleep(5)  # the workers are up before the clock starts
            start = time.perf_counter()
            keys = queue_assignment(
                root,
                assignment,
                None,
                broker=redis.url,
                db_url=db_url,
                source="source",
                release="release",
                limits=Limits(),
                log=lambda *_: None,
            )
            wait(root, assignment, keys, db_url, progress=False, poll_s=0.2)
            return time.perf_counter() - start
        finally:
            for worker in pool:
                worker.stop()
            redis.stop()


if __name__ == "__main__":
    main()
