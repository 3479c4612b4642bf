"""A submission as a Celery task carries it: its files' bytes with their sha256, nothing else.

The broker carries no hidden tests or references (the workers hold the course source) and no more
than :data:`MAX_PAYLOAD_BYTES`. Files are read without following links (autograder.grading.intake), and
written back on the worker only under the submission's folder.
"""

from __future__ import annotations

import base64
import hashlib
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from ..grading import intake

MAX_PAYLOAD_BYTES = 32 * 2**20  # a submission's files, before base64; larger ones are refused with a message


class PayloadRefused(ValueError):
    """The submission cannot travel as a task; the message is for the learner and the instructor."""


@dataclass(frozen=True)
class SubmittedFile:
    path: str  # relative, POSIX
    data: str  # base64
    sha256: str

    def content(self) -> bytes:
        raw = base64.b64decode(self.data.encode("ascii"), validate=True)
        if hashlib.sha256(raw).hexdigest() != self.sha256:
            raise PayloadRefused(f"{self.path}: its bytes do not match their sha256 (damaged on the way)")
        return raw


@dataclass(frozen=True)
class Payload:
    assignment: str
    student: str
    submitted_at: str  # ISO 8601, UTC: nbgrader's timestamp.txt, else the time it was queued
    files: list[SubmittedFile] = field(default_factory=list)

    @property
    def sha256(self) -> str:
        """The submission's identity: its files' names and contents."""
        digest = hashlib.sha256()
        for f in sorted(self.files, key=lambda f: f.path):
            digest.update(f"{f.path}\0{f.sha256}\0".encode())
        return digest.hexdigest()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Payload:
        files = [SubmittedFile(**f) for f in data["files"]]
        payload = cls(str(data["assignment"]), str(data["student"]), str(data["submitted_at"]), files)
        payload.check()
        for f in files:
            f.content()  # refused here, with its message, if damaged
        return payload

    def check(self) -> None:
        size = sum(len(f.data) * 3 // 4 for f in self.files)
        if size > MAX_PAYLOAD_BYTES:
            raise PayloadRefused(too_large(size))
        for name in (self.assignment, self.student):
            if not name or "/" in name or name in (".", "..") or "\0" in name:
                raise PayloadRefused(f"not a valid assignment or student name: {name!r}")
        for f in self.files:
            parts = PurePosixPath(f.path).parts
            if not parts or PurePosixPath(f.path).is_absolute() or ".." in parts or "\0" in f.path:
                raise PayloadRefused(f"not a path inside the submission: {f.path!r}")

    def write_into(self, folder: Path) -> None:
        """The files, under `folder` (created), checked against their sha256."""
        self.check()
        folder.mkdir(parents=True, exist_ok=True)
        for f in self.files:
            target = folder / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(f.content())


def too_large(size: int) -> str:
    return (
        f"The submission is {size / 2**20:.1f} MiB; the grading service takes at most "
        f"{MAX_PAYLOAD_BYTES / 2**20:.0f} MiB. Remove large files (data, model checkpoints) from the "
        "assignment folder and submit again."
    )


def submitted_at(timestamp_text: str | None) -> str:
    """nbgrader's timestamp (e.g. '2026-11-24 21:05:03.123456 UTC') as ISO 8601 UTC; now if there is none."""
    if timestamp_text:
        from nbgrader.utils import parse_utc

        try:
            return parse_utc(timestamp_text.strip()).replace(tzinfo=timezone.utc).isoformat()
        except (ValueError, TypeError, OverflowError):
            pass
    return datetime.now(timezone.utc).isoformat()


def from_submission(submitted: Path, student: str, assignment: str) -> Payload:
    """The payload of submitted/<student>/<assignment>, read as the local grader reads it (no link followed)."""
    files = []
    with tempfile.TemporaryDirectory(prefix="revad-payload-") as scratch:
        copy = Path(scratch) / "copy"
        intake.snapshot(submitted, student, assignment, copy)
        total = 0
        for path in sorted(p for p in copy.rglob("*") if p.is_file()):
            raw = path.read_bytes()
            total += len(raw)
            if total > MAX_PAYLOAD_BYTES:
                raise PayloadRefused(too_large(sum(p.stat().st_size for p in copy.rglob("*") if p.is_file())))
            files.append(
                SubmittedFile(
                    path.relative_to(copy).as_posix(),
                    base64.b64encode(raw).decode("ascii"),
                    hashlib.sha256(raw).hexdigest(),
                )
            )
    stamp = intake.read_timestamp(submitted, student, assignment)
    return Payload(assignment, student, submitted_at(stamp), files)
