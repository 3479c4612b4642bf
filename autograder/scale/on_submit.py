"""Grade on submit: `python -m autograder on-submit` queues each submission as it arrives in the exchange and
hands its feedback back through the exchange, as nbgrader's release_feedback would.

Configured in the course's ``nbgrader_config.py``::

    c.GradeOnSubmit.broker_url = "amqp://grader:…@broker-host//"
    c.GradeOnSubmit.feedback = "visible"     # the shown tests' results at once; "full": everything at once;
                                             # "none": learners wait for the instructor's release

It runs on the instructor's side (the exchange's machine), never in a learner's process: a learner's server
holds no broker or gradebook credentials, so a learner cannot queue work in another learner's name or read
the gradebook. The student is the one nbgrader's submit wrote into the folder name, as for nbgrader collect.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path

from sqlalchemy import Column, MetaData, String, Table, insert, select
from traitlets import Enum, Float, Unicode
from traitlets.config import LoggingConfigurable

from ..grading import sandbox
from . import ledger, service
from .payload import Payload, PayloadRefused, from_submission, submitted_at

METADATA = MetaData()
SEEN = Table("revad_inbound_seen", METADATA, Column("folder", String(512), primary_key=True))
DELIVERED = Table(
    "revad_feedback_delivered",
    METADATA,
    Column("assignment", String(128), primary_key=True),
    Column("student", String(128), primary_key=True),
    Column("sha256", String(64), primary_key=True),
)


class GradeOnSubmit(LoggingConfigurable):
    broker_url = Unicode("", help="the broker the grading workers listen on").tag(config=True)
    db_url = Unicode("", help="the gradebook (default: CourseDirectory.db_url)").tag(config=True)
    feedback = Enum(
        ["none", "visible", "full"],
        default_value="none",
        help="what goes back to the learner once graded: none (the instructor releases it), visible (the "
        "results of the tests the learner's notebook shows, at once; the hidden tests' result waits for the "
        "instructor's release) or full (the whole feedback page, at once)",
    ).tag(config=True)
    poll_seconds = Float(2.0, help="how often the exchange is looked at").tag(config=True)


def inbound_record(folder: Path) -> tuple[str, str, str] | None:
    """(student, assignment, timestamp) from nbgrader's inbound folder name 'student+assignment+timestamp+random'
    (the random part is nbgrader's default; without it the name ends with the timestamp)."""
    from nbgrader.utils import parse_utc

    try:
        parse_utc(folder.name.rsplit("+", 1)[-1])
        parts = folder.name.rsplit("+", 2)  # ends with the timestamp: no random part
    except (ValueError, OverflowError, TypeError):
        parts = folder.name.rsplit("+", 3)[:3]
    if len(parts) < 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


class Service:
    log = logging.getLogger("revad.on_submit")

    def __init__(
        self,
        config: GradeOnSubmit,
        course_dir: Path,
        exchange_root: Path,
        course_id: str,
        db_url: str,
        source: str = "source",
        release: str = "release",
        limits: sandbox.Limits | None = None,
    ):
        self.config, self.course_dir, self.db_url = config, course_dir, db_url
        self.course_exchange = exchange_root / course_id
        self.source, self.release, self.limits = source, release, limits or sandbox.Limits()
        METADATA.create_all(ledger.engine(db_url))

    def new_folders(self) -> list[Path]:
        inbound = self.course_exchange / "inbound"
        if not inbound.is_dir():
            return []
        with ledger.engine(self.db_url).connect() as conn:
            seen = {r.folder for r in conn.execute(select(SEEN.c.folder))}
        return sorted(p for p in inbound.iterdir() if p.name not in seen and not p.is_symlink() and p.is_dir())

    def queue_new(self) -> int:
        from .client import queue_payload

        count = 0
        for folder in self.new_folders():
            record = inbound_record(folder)
            if record is not None and (folder / "timestamp.txt").is_file():  # nbgrader writes it after the files
                student, assignment, _ = record
                try:
                    payload = from_submission(folder.parent.parent, folder.parent.name, folder.name)
                    payload = Payload(assignment, student, payload.submitted_at, payload.files)
                except PayloadRefused as refused:
                    payload = Payload(assignment, student, submitted_at(None), [])
                    service.fail(
                        payload,
                        service.WorkerSettings(self.course_dir, self.db_url, self.source, self.release),
                        str(refused),
                    )
                else:
                    queue_payload(
                        self.config.broker_url,
                        self.course_dir,
                        payload,
                        self.db_url,
                        self.source,
                        self.release,
                        self.limits,
                        "visible" if self.config.feedback == "visible" else "full",
                    )
                count += 1
            elif record is None:
                self.log.warning("not an nbgrader submission folder, left alone: %s", folder.name)
            else:
                continue  # still being written: next time
            with ledger.engine(self.db_url).begin() as conn:
                conn.execute(insert(SEEN).values(folder=folder.name))
        return count

    def deliver(self) -> int:
        """Feedback pages of newly graded submissions into the exchange, named as release_feedback names them."""
        if self.config.feedback == "none":
            return 0
        from nbgrader.utils import notebook_hash

        with ledger.engine(self.db_url).connect() as conn:
            done = {(r.assignment, r.student, r.sha256) for r in conn.execute(select(DELIVERED))}
            graded = [
                r
                for r in conn.execute(select(ledger.TASK).where(ledger.TASK.c.state.in_(("graded", "failed"))))
                if r.written and (r.assignment, r.student, r.sha256) not in done
            ]
        outbound = self.course_exchange / "feedback"
        kind = service.SHOWN_FEEDBACK if self.config.feedback == "visible" else "feedback"
        count = 0
        for row in graded:
            files = ledger.outputs(self.db_url, row.assignment, row.student)
            secret = files.get(("feedback", "submission_secret.txt"), b"").decode("ascii", "replace").strip()
            if secret:
                outbound.mkdir(parents=True, exist_ok=True)
                for (file_kind, name), data in files.items():
                    if file_kind == kind and name.endswith(".html") and "/" not in name:
                        target = outbound / f"{notebook_hash(secret=secret, notebook_id=name[:-5])}.html"
                        with tempfile.NamedTemporaryFile(dir=outbound, delete=False) as tmp:
                            tmp.write(data)
                        os.chmod(tmp.name, 0o644)
                        os.replace(tmp.name, target)  # atomically, as release_feedback does
                count += 1
            with ledger.engine(self.db_url).begin() as conn:
                conn.execute(
                    insert(DELIVERED).values(assignment=row.assignment, student=row.student, sha256=row.sha256)
                )
        return count

    def run(self, once: bool = False) -> None:
        while True:
            queued, delivered = self.queue_new(), self.deliver()
            if queued or delivered:
                self.log.info("queued %d submission(s), delivered %d feedback(s)", queued, delivered)
            if once:
                return
            time.sleep(self.config.poll_seconds)


def from_course(course_dir: Path) -> Service:
    """The service as the course directory's nbgrader_config.py configures it."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    from nbgrader.coursedir import CourseDirectory

    from ..coursedir import course_config

    config = course_config(course_dir)
    if "root" not in config.CourseDirectory:
        config.CourseDirectory.root = str(course_dir)  # as nbgrader does when run from the course directory
    coursedir = CourseDirectory(config=config)
    settings = GradeOnSubmit(config=config)
    if not settings.broker_url:
        raise SystemExit(f"{course_dir / 'nbgrader_config.py'} sets no c.GradeOnSubmit.broker_url.")
    exchange_root = (
        Path(config.Exchange.root) if "root" in config.Exchange else Path("/usr/local/share/nbgrader/exchange")
    )
    db_url = settings.db_url or coursedir.db_url
    return Service(
        settings,
        Path(coursedir.root),
        exchange_root,
        coursedir.course_id,
        db_url,
        coursedir.source_directory,
        coursedir.release_directory,
    )
