"""The instructor's command line: grading, the grading service, the class report.

    python -m autograder grade NN-slug                      # every submission in submitted/*/NN-slug/
    python -m autograder grade NN-slug --student ada ben    # some of them
    revad-grade grade NN-slug --workers 4 --require-sandbox --db-url postgresql://...

Run from anywhere; by default it grades this repository's course directory (source solutions/,
release course/, gradebook .grading/gradebook.db, as in nbgrader_config.py). A killed run started
again grades only what is left; --force grades everything again.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .coursedir import REPO
from .grading.command import grade_assignment
from .grading.report import EXPORT_FORMATS, export_csv, format_table
from .grading.sandbox import Limits


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m autograder", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _grade_arguments(
        sub.add_parser("grade", help="grade submissions of an assignment (sandboxed, parallel, resumable)")
    )
    _service_arguments(sub)
    return parser


def _grade_arguments(g: argparse.ArgumentParser) -> None:
    g.add_argument("assignment", help="assignment id, e.g. 01-reverse-accumulation")
    g.add_argument("--student", nargs="+", default=None, metavar="S", help="grade only these students")
    g.add_argument("--workers", type=int, default=None, help="parallel workers (default: one per core)")
    g.add_argument(
        "--require-sandbox", action="store_true", help="refuse to grade unless every sandbox protection is available"
    )
    g.add_argument("--course-dir", type=Path, default=None, help="nbgrader course directory (default: this repository)")
    g.add_argument(
        "--source", default=None, help="source directory name (default: solutions in this repository, else source)"
    )
    g.add_argument(
        "--release", default=None, help="release directory name (default: course in this repository, else release)"
    )
    g.add_argument("--db-url", default=None, help="gradebook URL, e.g. sqlite:///path.db or postgresql://user@host/db")
    g.add_argument("--force", action="store_true", help="grade again submissions that are already graded")
    g.add_argument("--timeout", type=int, default=Limits.timeout_s, help="seconds for a whole notebook (wall clock)")
    g.add_argument("--cell-timeout", type=int, default=Limits.cell_timeout_s, help="seconds for one cell")
    g.add_argument("--memory-mb", type=int, default=Limits.memory_mb, help="memory limit of the learner's code")
    g.add_argument("--export", type=Path, default=None, help="also write the CSV export (with flags) here")
    g.add_argument(
        "--export-format",
        choices=EXPORT_FORMATS,
        default="nbgrader",
        help="the CSV's shape: nbgrader's export with flags (default), or a learning-management system's gradebook "
        "import, one row per learner and one column per assignment (canvas, moodle)",
    )
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.add_argument(
        "--broker",
        default=None,
        help="grade on Celery workers through this broker, e.g. "
        "amqp://user:pw@host// or redis://host:6379/0 (default: grade here)",
    )
    g.add_argument("--no-wait", action="store_true", help="with --broker: return once the submissions are queued")


def _service_arguments(sub) -> None:
    """The commands beside grade: a Celery worker, the class report, grade on submit."""
    w = sub.add_parser("worker", help="a Celery worker that grades queued submissions (see --broker)")
    w.add_argument("--broker", required=True, help="the broker URL the grading command queues on")
    w.add_argument("--db-url", required=True, help="the gradebook URL (PostgreSQL across machines)")
    w.add_argument(
        "--course-dir", type=Path, default=None, help="this worker's copy of the course (default: this repository)"
    )
    w.add_argument("--concurrency", type=int, default=None, help="submissions graded at once (default: one per core)")
    w.add_argument("--hostname", default=None, help="the worker's name in Celery (default: revad@<host>)")
    r = sub.add_parser("report", help="the class report: scores, the most common mistakes and flags per exercise")
    r.add_argument("assignment", help="assignment id, e.g. 01-reverse-accumulation")
    r.add_argument("--out", type=Path, default=None, help="folder for report.html and its plots (default: reports/NN)")
    r.add_argument("--course-dir", type=Path, default=None, help="nbgrader course directory (default: this repository)")
    r.add_argument("--db-url", default=None, help="gradebook URL (default: the course's SQLite gradebook)")
    m = sub.add_parser(
        "similarity",
        help="similar answers across the class, exercise by exercise (offline; a flag for a person, never a score)",
    )
    m.add_argument("assignment", help="assignment id, e.g. 02-scalar-engine")
    m.add_argument("--threshold", type=float, default=None, help="share of each answer's code both must reach")
    m.add_argument("--out", type=Path, default=None, help="folder for similarity.html (default: reports/NN)")
    m.add_argument("--course-dir", type=Path, default=None, help="nbgrader course directory (default: this repository)")
    m.add_argument("--db-url", default=None, help="gradebook URL (default: the course's SQLite gradebook)")
    o = sub.add_parser(
        "on-submit",
        help="grade on submit: queue submissions as they reach the exchange, hand "
        "feedback back (settings: c.GradeOnSubmit in the course's nbgrader_config.py)",
    )
    o.add_argument("--course-dir", type=Path, default=None, help="the course directory (default: this repository)")
    o.add_argument("--once", action="store_true", help="look once, then stop (default: keep watching)")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root = (args.course_dir or REPO).resolve()
    in_repo = root == REPO.resolve()
    source = getattr(args, "source", None) or ("solutions" if in_repo else "source")
    release = getattr(args, "release", None) or ("course" if in_repo else "release")
    if args.command == "on-submit":
        from .scale.on_submit import from_course

        from_course(root).run(once=args.once)
        return 0
    if args.command == "worker":
        from .scale.worker import run_worker

        return run_worker(args.broker, args.db_url, root, source, release, args.concurrency, args.hostname)
    db_url = _gradebook_url(args.db_url, root, in_repo)
    if args.command == "report":
        from .class_report import write_report

        out = args.out or root / "reports" / args.assignment
        print(f"Class report: {write_report(root, args.assignment, db_url, out, source, release)}")
        return 0
    if args.command == "similarity":
        from .class_report import write_similarity

        out = args.out or root / "reports" / args.assignment
        page, lines = write_similarity(root, args.assignment, db_url, out, source, release, args.threshold)
        print("\n".join(lines))
        print(f"Side by side: {page}")
        return 0
    limits = Limits(timeout_s=args.timeout, cell_timeout_s=args.cell_timeout, memory_mb=args.memory_mb)
    if args.broker:
        rows = _grade_on_workers(args, root, source, release, db_url, limits)
        if rows is None:
            return 0
    else:
        rows = grade_assignment(
            root,
            args.assignment,
            args.student,
            db_url=db_url,
            source=source,
            release=release,
            workers=args.workers,
            require_sandbox=args.require_sandbox,
            force=args.force,
            limits=limits,
            progress=not args.quiet,
        )
    print()
    print(format_table(rows))
    if args.export:
        print(f"\nGrades CSV: {export_csv(db_url, args.export, args.export_format)}")
    print(f"\nGradebook: {db_url}\nFeedback HTML: {root / 'feedback'}/<student>/{args.assignment}/*.html")
    return 0


def _gradebook_url(given: str | None, root: Path, in_repo: bool) -> str:
    """--db-url, else REVAD_DB_URL, else a SQLite gradebook of the course (its folder made)."""
    default = f"sqlite:///{root / '.grading' / 'gradebook.db'}" if in_repo else f"sqlite:///{root / 'gradebook.db'}"
    db_url = given or os.environ.get("REVAD_DB_URL") or default
    if db_url.startswith("sqlite:///"):
        Path(db_url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    return db_url


def _grade_on_workers(args, root: Path, source: str, release: str, db_url: str, limits: Limits):
    """Queue the submissions on the broker; wait for their scores (None with --no-wait)."""
    from .scale.client import queue_assignment, wait

    keys = queue_assignment(
        root,
        args.assignment,
        args.student,
        broker=args.broker,
        db_url=db_url,
        source=source,
        release=release,
        limits=limits,
        force=args.force,
    )
    if args.no_wait:
        print(
            f"Queued. Watch the queue with `celery -b BROKER inspect active`; run this again without --no-wait "
            f"to wait for the results.\nGradebook: {db_url}"
        )
        return None
    return wait(root, args.assignment, keys, db_url, progress=not args.quiet)


if __name__ == "__main__":
    sys.exit(main())
