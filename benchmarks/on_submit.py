"""Grade on submit, timed: from a submission landing in the exchange to its feedback fetchable.

    make bench-on-submit     # or: python -m benchmarks.on_submit [--assignment 06-fused-cross-entropy]
                             #     [--n 12] [--every 10] [--burst 100]

A scratch course with an exchange, redis-server on a free port, two Celery worker processes and the on-submit
service (`python -m autograder on-submit`, polling every 0.5 s), all on this machine. Submissions land as nbgrader's
submit leaves them: a folder `student+assignment+timestamp+random` in the exchange's inbound folder with the
notebooks, timestamp.txt and submission_secret.txt, moved in whole (the instant it lands is known). A submission's
feedback is fetchable when the page `nbgrader fetch_feedback` looks for is in the exchange's feedback folder.

First two submissions at once (one per worker: each worker's grading process and warm-kernel factory start on its
first task; printed as the cold start), then `--n` one every `--every` seconds (the correct, partly wrong and blank
learners in turn): the median and the slowest. `--burst N`: then N at once, timed to the last page, and the ledger
checked: every submission graded and written once, every page delivered, none twice.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from autograder.coursedir import REPO, SOLUTIONS
from autograder.release import generate_in_course
from autograder.submissions import example_submissions

CONFIG = """\
c = get_config()  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = "revad"
c.Exchange.root = {exchange!r}
c.GradeOnSubmit.broker_url = {broker!r}
c.GradeOnSubmit.feedback = "full"
c.GradeOnSubmit.poll_seconds = 0.5
"""


class Course:
    """The instructor's course and its exchange; `land` puts one submission into the inbound folder."""

    def __init__(self, root: Path, assignment: str):
        self.root, self.assignment = root, assignment
        self.exchange = root.parent / "exchange"
        self.inbound = self.exchange / "revad" / "inbound"
        self.feedback = self.exchange / "revad" / "feedback"
        (root / "source").mkdir(parents=True)
        shutil.copytree(SOLUTIONS / assignment, root / "source" / assignment)
        self.db_url = f"sqlite:///{root / 'gradebook.db'}"
        generate_in_course(root, [assignment], self.db_url)
        self.inbound.mkdir(parents=True)
        self.examples = list(example_submissions(assignment, root / "release", SOLUTIONS).values())
        self.landed: dict[str, tuple[float, list[Path]]] = {}  # student -> (when, the pages to wait for)

    def configure(self, broker: str) -> None:
        (self.root / "nbgrader_config.py").write_text(
            CONFIG.format(root=str(self.root), exchange=str(self.exchange), broker=broker)
        )

    def land(self, student: str, example: int) -> None:
        from nbgrader.utils import notebook_hash

        stamp = time.strftime("%Y-%m-%d %H:%M:%S.000000 UTC", time.gmtime())
        secret = secrets.token_hex(64)
        staging = Path(tempfile.mkdtemp(dir=self.inbound.parent))
        notebooks = self.examples[example % len(self.examples)]
        for name, nb in notebooks.items():
            nbformat.write(nb, staging / name)
        (staging / "timestamp.txt").write_text(stamp)
        (staging / "submission_secret.txt").write_text(secret)
        staging.chmod(0o755)
        pages = [self.feedback / f"{notebook_hash(secret=secret, notebook_id=Path(n).stem)}.html" for n in notebooks]
        os.rename(staging, self.inbound / f"{student}+{self.assignment}+{stamp}+{secrets.token_hex(4)}")
        self.landed[student] = (time.monotonic(), pages)

    def wait(self, students: list[str], timeout_s: float, due: dict[str, tuple[float, int]] | None = None) -> dict:
        """Seconds from landing to every page of each student's submission being in the exchange. `due`: student ->
        (when, example) for submissions still to land, each landed at its time while the others are watched."""
        due = dict(due or {})
        latency: dict[str, float] = {}
        deadline = time.monotonic() + timeout_s
        while len(latency) < len(students):
            now = time.monotonic()
            for student, (when, example) in list(due.items()):
                if now >= when:
                    self.land(student, example)
                    del due[student]
            if now > deadline:
                missing = sorted(set(students) - set(latency))
                raise SystemExit(f"no feedback within {timeout_s:.0f} s for {len(missing)}: {missing[:5]}")
            for student in students:
                if student in latency or student not in self.landed:
                    continue
                when, pages = self.landed[student]
                if all(p.exists() for p in pages):
                    latency[student] = time.monotonic() - when
            time.sleep(0.02)
        return latency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="01-reverse-accumulation")
    parser.add_argument("--n", type=int, default=12, help="submissions one every --every seconds (default 12)")
    parser.add_argument("--every", type=float, default=10.0)
    parser.add_argument("--burst", type=int, default=0, help="then this many submissions at once (default none)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for any one phase")
    args = parser.parse_args()

    from tests.celery_service import Redis, Worker

    with tempfile.TemporaryDirectory(prefix="bench-on-submit-") as scratch:
        course = Course(Path(scratch) / "course", args.assignment)
        redis = Redis(Path(scratch) / "redis").start()
        course.configure(redis.url)
        workers = [
            Worker(redis.url, course.db_url, course.root, Path(scratch) / f"worker{i}.log", f"bench{i}")
            for i in range(2)
        ]
        service = _start_service(course.root, Path(scratch) / "on-submit.log")
        try:
            _run(course, args)
        finally:
            service.terminate()
            service.wait(timeout=30)
            for worker in workers:
                worker.stop()
            redis.stop()


def _start_service(course_root: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "autograder", "on-submit", "--course-dir", str(course_root)],
        cwd=REPO,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
    )


def _run(course: Course, args: argparse.Namespace) -> None:
    print(f"grade on submit, {args.assignment}: 2 Celery worker processes, the on-submit service polling every 0.5 s")
    cold = ["warm0", "warm1"]
    for i, student in enumerate(cold):
        course.land(student, i)
    first = course.wait(cold, args.timeout)
    print(f"cold start (each worker's first submission): {', '.join(f'{s:.1f} s' for s in first.values())}")

    steady = [f"learner{i:03d}" for i in range(args.n)]
    start = time.monotonic()
    due = {student: (start + i * args.every, i) for i, student in enumerate(steady)}
    latency = course.wait(steady, args.timeout + args.n * args.every, due)
    values = sorted(latency.values())
    print(
        f"{args.n} submissions, one every {args.every:g} s: median {statistics.median(values):.2f} s, slowest "
        f"{values[-1]:.2f} s, fastest {values[0]:.2f} s (landing in the exchange to feedback fetchable)"
    )
    if args.burst:
        _burst(course, args.burst, args.timeout)


def _burst(course: Course, n: int, timeout_s: float) -> None:
    from autograder.scale import ledger

    burst = [f"burst{i:03d}" for i in range(n)]
    start = time.monotonic()
    for i, student in enumerate(burst):
        course.land(student, i)
    latency = course.wait(burst, timeout_s)
    took = time.monotonic() - start
    rows = {s: r for (s, _), r in ledger.states(course.db_url, course.assignment).items() if s in burst}
    states = sorted({r["state"] for r in rows.values()})
    written = sorted({r["written"] for r in rows.values()})
    pages = [p for s in burst for p in course.landed[s][1]]
    ok = len(rows) == n and states == ["graded"] and written == [1] and all(p.exists() for p in pages)
    print(
        f"burst of {n} at once: the last page {took:.0f} s after they landed ({took / n:.2f} s per submission; "
        f"median wait {statistics.median(latency.values()):.0f} s); ledger: {len(rows)} submissions, states "
        f"{states}, written {written} time(s), {len(set(pages))} pages: {'nothing lost or doubled' if ok else 'WRONG'}"
    )
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
