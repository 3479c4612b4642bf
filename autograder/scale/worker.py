"""`python -m autograder worker --broker URL --db-url URL`: start a Celery worker that grades submissions."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from pathlib import Path


def run_worker(
    broker: str, db_url: str, course_dir: Path, source: str, release: str, concurrency: int | None, hostname: str | None
) -> int:
    if not (course_dir / source).is_dir():
        raise SystemExit(f"{course_dir} has no {source}/ folder: a worker needs the course source (--course-dir).")
    from ..grading import sandbox
    from ..grading.command import refuse_unreachable_python

    info = sandbox.detect(course_dir)
    print(info.describe(), flush=True)
    refuse_unreachable_python(info)
    # read by every process of the worker pool (autograder.scale.service.WorkerSettings)
    os.environ.update(REVAD_COURSE_DIR=str(course_dir), REVAD_DB_URL=db_url, REVAD_SOURCE=source, REVAD_RELEASE=release)
    # the pool's temporary folders in one of this process's, removed as it ends: a pool process killed mid-task
    # (by a submission, or the machine's OOM killer) cleans up nothing of its own
    scratch = Path(tempfile.mkdtemp(prefix="revad-celery-"))
    scratch.chmod(0o755)  # as /tmp: the grading processes' folders in it are read by the kernels' uids
    os.environ["TMPDIR"], tempfile.tempdir = str(scratch), None
    atexit.register(shutil.rmtree, scratch, True)
    from .service import use_broker

    app = use_broker(broker)
    argv = [
        "worker",
        "--loglevel",
        "INFO",
        "--pool",
        "prefork",
        "--queues",
        "revad-grading",
        "--hostname",
        hostname or f"revad@{socket.gethostname()}",
        "--without-gossip",
        "--without-mingle",
    ]
    if concurrency:
        argv += ["--concurrency", str(concurrency)]
    app.worker_main(argv)
    return 0
